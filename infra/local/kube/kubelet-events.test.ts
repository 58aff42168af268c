import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.ts';
import { Cluster } from './cluster.ts';
import { seedFleet } from './fleet-seed.ts';
import { validateFleet } from './fleet.ts';
import { resource } from './resources.ts';

/**
 * The kubelet's own Events for a cordon and a drain (kubelet-events.ts): NodeNotSchedulable at the
 * node's next status sync (10 s), Killing per container when a running pod is deleted.
 */
const NODES = resource('nodes');
const PODS = resource('pods');

function cluster() {
  const clock = new ManualClock();
  const c = new Cluster(clock);
  seedFleet(
    c,
    validateFleet({
      nodes: [{ name: 'gpu-a', allocatable: { cpu: '8', memory: '32Gi' } }],
      namespaces: [{ name: 'train' }],
      pods: [{ name: 'job', namespace: 'train', node: 'gpu-a', terminationGracePeriodSeconds: 30 }],
    }),
  );
  const advance = (ms: number) => {
    clock.advance(ms);
    c.tick();
  };
  const kubelet = () =>
    (c.store.list('events') as unknown as { reason: string; message: string; source: { component: string } }[])
      .filter((e) => e.source.component === 'kubelet')
      .map((e) => `${e.reason}: ${e.message}`);
  const cordon = (unschedulable: boolean) =>
    c.patch(NODES, '', 'gpu-a', 'application/merge-patch+json', { spec: { unschedulable } });
  return { c, advance, kubelet, cordon };
}

describe("the kubelet's Events for cordon and drain", () => {
  it('records NodeNotSchedulable at its next status sync after the cordon, not at the cordon', () => {
    const { advance, kubelet, cordon } = cluster();
    advance(3_000);
    cordon(true);
    expect(kubelet()).toEqual([]);
    advance(6_999);
    expect(kubelet()).toEqual([]);
    advance(1);
    expect(kubelet()).toEqual(['NodeNotSchedulable: Node gpu-a status is now: NodeNotSchedulable']);
    cordon(false);
    advance(10_000);
    expect(kubelet()).toContain('NodeSchedulable: Node gpu-a status is now: NodeSchedulable');
  });

  it('a cordon undone before the sync records nothing (the kubelet compares with what it last recorded)', () => {
    const { advance, kubelet, cordon } = cluster();
    cordon(true);
    cordon(false);
    advance(20_000);
    expect(kubelet()).toEqual([]);
  });

  it('records Killing for each container as soon as a running pod is deleted, before its grace period ends', () => {
    const { c, kubelet } = cluster();
    c.delete(PODS, 'train', 'job');
    expect(c.store.pod('train', 'job')?.metadata.deletionTimestamp).toBeDefined();
    const events = c.store.list('events', 'train') as unknown as { reason: string; involvedObject: object }[];
    expect(kubelet()).toEqual(['Killing: Stopping container main']);
    expect(events[0]!.involvedObject).toMatchObject({ kind: 'Pod', name: 'job', fieldPath: 'spec.containers{main}' });
  });

  it('records nothing into a namespace that is being removed with its pods', () => {
    const { c } = cluster();
    c.delete(resource('namespaces'), '', 'train');
    c.tick();
    expect(c.store.list('events', 'train')).toEqual([]);
  });
});
