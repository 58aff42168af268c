import { describe, expect, it } from 'vitest';
import type { GpuIdleAllocationDetail } from '../../events/index.ts';
import { decideHeldPlan, type CommandPorts } from '../chatops/actions.ts';
import { getApproval, IDLE_APPROVALS_SHARD } from '../lib/approvals.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { IdlePolicySchema } from './core/policy.ts';
import { IDLE_ANNOTATION } from '../lib/idle-record.ts';
import { costReport } from './core/cost.ts';
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

  it('evicts through the Eviction API at an opted-in deadline; utilization back closes the run on the node', async () => {
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
    // The run is closed: no track left, its 130 idle minutes kept for the cost report (the idle history).
    expect(JSON.parse(back.kube.cluster.nodes.get('gpu-1')!.annotations[IDLE_ANNOTATION]!)).toMatchObject({
      tracks: [],
      history: [{ namespace: 'research', pod: 'notebook', day: '2026-12-05', ms: 130 * MIN }],
    });
    expect(back.publisher.published.map((e) => (e.detail as GpuIdleAllocationDetail).state)).toEqual([
      'idle',
      'cancelled',
    ]);
    expect(back.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
  });

  it('ends the run on a summary without holders and tells the owner by name, the node record written', async () => {
    const w = idleWatcher(policy());
    for (let i = 0; i < 12; i++)
      await watchIdle(w.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    // The kubelet restarted: the agent could not say who holds the GPU (it may have worked all window).
    await watchIdle(w.deps, summary(T0 + 120 * MIN, [{ uuid: GPU0, util: 80, mem: 40 }], null));
    expect(JSON.parse(w.kube.cluster.nodes.get('gpu-1')!.annotations[IDLE_ANNOTATION]!)).toMatchObject({
      tracks: [],
      history: [{ namespace: 'research', pod: 'notebook', ms: 120 * MIN }],
    });
    expect(w.publisher.published.map((e) => (e.detail as GpuIdleAllocationDetail).state)).toEqual([
      'idle',
      'cancelled',
    ]);
    expect(w.notifier.notices.map((n) => n.text)[1]).toMatch(/^@alice research\/notebook: .*names no holders/);
  });

  it('asks a person at the deadline where the policy says so, and evicts only once approved', async () => {
    const w = idleWatcher(policy({ namespaces: { research: { evict: { afterMinutes: 30, approvalMinutes: 60 } } } }));
    const deps = { ...w.deps, state: w.kube.state };
    const tick = async (i: number) => {
      w.setNow(T0 + (i + 1) * 10 * MIN);
      await watchIdle(deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    };
    for (let i = 0; i < 17; i++) await tick(i);
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
    const ask = w.notifier.notices.find((n) => n.approval)!;
    expect(ask.title).toBe('gpu-reflex: approve evicting idle research/notebook?');
    const id = ask.approval!.id;
    expect(await getApproval(w.kube.state, id, IDLE_APPROVALS_SHARD)).toMatchObject({
      status: 'open',
      action: 'idle-evict',
      idle: { pod: 'research/notebook', device: GPU0 },
      expiresAt: new Date(T0 + 210 * MIN).toISOString(),
    });
    await tick(17);
    expect(w.notifier.notices.filter((n) => n.approval)).toHaveLength(1); // asked once
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
    // A person approves in chat (chatops closes it, once); the next window evicts.
    const chat = { kube: w.kube, clock: deps.clock } as unknown as CommandPorts;
    expect(await decideHeldPlan(chat, id, 'approved', 'slack:U-OPS')).toEqual({
      answer: `approved ${id}: idle-gpus evicts research/notebook (idle on gpu-1) at its next window, if still idle`,
      decided: true,
    });
    expect((await decideHeldPlan(chat, id, 'approved', 'slack:U-OPS'))!.decided).toBe(false);
    await tick(18);
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(true);
    expect(w.publisher.published.map((e) => (e.detail as GpuIdleAllocationDetail).state)).toEqual(['idle', 'evicted']);
  });

  it('closes an unanswered question at its expiry and never evicts; without a store it never evicts', async () => {
    const p = policy({ namespaces: { research: { evict: { afterMinutes: 30, approvalMinutes: 20 } } } });
    const w = idleWatcher(p);
    const deps = { ...w.deps, state: w.kube.state };
    for (let i = 0; i < 24; i++) {
      w.setNow(T0 + (i + 1) * 10 * MIN);
      await watchIdle(deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    }
    const id = w.notifier.notices.find((n) => n.approval)!.approval!.id;
    expect((await getApproval(w.kube.state, id, IDLE_APPROVALS_SHARD))?.status).toBe('expired');
    expect(w.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
    const none = idleWatcher(p);
    for (let i = 0; i < 24; i++)
      await watchIdle(none.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    expect(none.kube.cluster.pod('research', 'notebook')?.terminating).toBe(false);
    expect(none.notifier.notices.filter((n) => n.approval)).toEqual([]);
  });

  it('keeps a record it could not read unknown for the cost report once it writes a new one over it', async () => {
    // A record another version wrote (a rollback) does not parse: its ended runs are lost. The cost report read
    // that node's idle share as unknown; the new record written over it must not make it read 0 idle hours.
    const w = idleWatcher(policy());
    const node = w.kube.cluster.nodes.get('gpu-1')!;
    node.annotations[IDLE_ANNOTATION] = JSON.stringify({ v: 2, tracks: [], runs: [{ pod: 'notebook', ms: 9e6 }] });
    for (let i = 0; i < 3; i++)
      await watchIdle(w.deps, summary(T0 + i * 10 * MIN, [{ uuid: GPU0, util: 0, mem: 0 }], NB));
    const written = w.kube.cluster.nodes.get('gpu-1')!;
    expect(JSON.parse(written.annotations[IDLE_ANNOTATION]!).tracks).toHaveLength(1);
    const rep = costReport(
      [{ name: 'gpu-1', labels: written.labels, annotations: written.annotations }],
      [
        {
          namespace: 'research',
          name: 'notebook',
          nodeName: 'gpu-1',
          phase: 'Running',
          labels: {},
          extendedResources: { 'nvidia.com/gpu': 1 },
        },
      ],
      policy(),
      T0 - 24 * 60 * MIN,
      T0 + 30 * MIN,
    );
    expect(rep.rows[0]).toMatchObject({ idleUnreadGpuHours: 24.5 });
    expect(rep.rows[0]!.idleCost).toBeUndefined();
  });

  it('writes nothing for a GPU at work', async () => {
    const w = idleWatcher(policy());
    await watchIdle(w.deps, summary(T0, [{ uuid: GPU0, util: 70, mem: 40 }], NB));
    expect(w.kube.cluster.calls.filter((c) => !c.op.endsWith('.get') && !c.op.startsWith('pods.list'))).toEqual([]);
  });
});
