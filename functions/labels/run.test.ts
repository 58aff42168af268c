import { describe, expect, it } from 'vitest';
import type { NodeLabelsChangedDetail } from '../../events/index.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { LABELER_ANNOTATION } from './core/planner.ts';
import { labelNode } from './run.ts';
import { inventory, labeler } from './testing.ts';

describe('labelNode through the applier and fake ports', () => {
  it('writes the labels, its record and the outbox in one patch against the node as read, then publishes Node Labels Changed once', async () => {
    const { kube, publisher, deps } = labeler();
    kube.cluster.addNode({ name: 'gpu-1', labels: { team: 'ml' }, allocatable: { 'nvidia.com/gpu': '8' } });
    await labelNode(deps, inventory());
    const n = kube.cluster.nodes.get('gpu-1')!;
    expect(n.labels).toMatchObject({ team: 'ml', accelerator: 'nvidia-a100', 'gpu-reflex.io/gpu.count': '8' });
    expect(JSON.parse(n.annotations[LABELER_ANNOTATION]!).labels).not.toHaveProperty('team');
    expect(n.annotations[OUTBOX_ANNOTATION]).toBeUndefined();
    expect(
      publisher.published.map((e) => [e.detailType, (e.detail as NodeLabelsChangedDetail).changes.length]),
    ).toEqual([['Node Labels Changed', 7]]);
    // Redelivered: nothing to do, nothing published again.
    const again = await labelNode(deps, inventory());
    expect(again.plan.kind).toBe('noop');
    expect(publisher.published).toHaveLength(1);
  });

  it('keeps the event in the outbox when the bus refuses it, and a redelivery publishes it', async () => {
    const { kube, publisher, deps } = labeler();
    kube.cluster.addNode({ name: 'gpu-1' });
    const failing = { publish: async () => Promise.reject(new Error('bus down')) };
    await expect(labelNode({ ...deps, publisher: failing }, inventory())).rejects.toThrow('bus down');
    expect(kube.cluster.nodes.get('gpu-1')!.annotations[OUTBOX_ANNOTATION]).toContain('Node Labels Changed');
    await labelNode(deps, inventory());
    expect(publisher.published.map((e) => e.detailType)).toEqual(['Node Labels Changed']);
    expect(kube.cluster.nodes.get('gpu-1')!.annotations[OUTBOX_ANNOTATION]).toBeUndefined();
  });
});
