import { describe, expect, it } from 'vitest';
import type { GpuIdleAllocationDetail } from '../../events/index.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { IdlePolicySchema } from './core/policy.ts';
import { IDLE_ANNOTATION } from './core/record.ts';
import { watchIdle } from './run.ts';
import { GPU0, holder, idleWatcher, MIN, summary, T0 } from './testing.ts';

const policy = (o: object = {}) => IdlePolicySchema.parse({ prices: { 'ecs.gn7i-c8g1.2xlarge': 9.8 }, ...o });
const NB = [holder('research', 'notebook', GPU0)];

describe('watchIdle through the applier and fake ports', () => {
  it('keeps the run on the node, tells the owner once with the cost, and publishes GPU Idle Allocation', async () => {
    const w = idleWatcher(policy());
    for (let i = 0; i < 14; i++) {
      w.setNow(T0 + (i + 1) * 10 * MIN);
      await watchIdle(w.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 1, mem: 0 }], NB));
    }
    const node = w.kube.cluster.nodes.get('gpu-1')!;
    expect(JSON.parse(node.annotations[IDLE_ANNOTATION]!).tracks[0]).toMatchObject({ since: T0, pod: 'notebook' });
    expect(node.annotations[OUTBOX_ANNOTATION]).toBeUndefined();
    const events = w.publisher.published.map((e) => e.detail as GpuIdleAllocationDetail);
    expect(events.map((d) => [d.state, d.team, d.idleSeconds, d.cost?.amount])).toEqual([
      ['idle', 'vision', 7200, 19.6],
    ]);
    expect(w.notifier.notices.map((n) => n.text)).toEqual([
      expect.stringMatching(/^@alice research\/notebook has held/),
    ]);
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
  });

  it('evicts through the Eviction API at an opted-in deadline; utilization back clears the node record', async () => {
    const w = idleWatcher(policy({ namespaces: { research: { evict: { afterMinutes: 30 } } } }));
    for (let i = 0; i < 15; i++)
      await watchIdle(w.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(true);
    expect(w.podEvents).toEqual(['notebook: GpuIdle', 'gpu-1: PodsEvicted', 'notebook: IdleGpuReclaimed']);
    expect(w.publisher.published.map((e) => (e.detail as GpuIdleAllocationDetail).state)).toEqual(['idle', 'evicted']);

    const back = idleWatcher(policy({ namespaces: { research: { evict: { afterMinutes: 30 } } } }));
    for (let i = 0; i < 13; i++)
      await watchIdle(back.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    await watchIdle(back.deps, summary(T0 + 130 * MIN, [{ uuid: GPU0, util: 80, mem: 40 }], NB));
    expect(back.kube.cluster.nodes.get('gpu-1')!.annotations[IDLE_ANNOTATION]).toBeUndefined();
    expect(back.publisher.published.map((e) => (e.detail as GpuIdleAllocationDetail).state)).toEqual([
      'idle',
      'cancelled',
    ]);
    expect(back.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
  });

  it('writes nothing for a GPU at work', async () => {
    const w = idleWatcher(policy());
    await watchIdle(w.deps, summary(T0, [{ uuid: GPU0, util: 70, mem: 40 }], NB));
    expect(w.kube.cluster.calls.filter((c) => !c.op.endsWith('.get') && !c.op.startsWith('pods.list'))).toEqual([]);
  });
});
