import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { renderSteps } from './detail.ts';
import { apply, factsFor, gpu, node, pod, STANDARD_PODS, xid } from '../testing.ts';
import type { Plan, TriggerEvent } from './types.ts';

/** What a plan does to the node: the steps that take capacity or move work. */
const harmful = (plan: Plan) =>
  renderSteps(plan).filter(
    (s) =>
      ['taint', 'cordon', 'fence', 'reset', 'probe', 'evict'].includes(s.kind) ||
      (s.kind === 'annotate' && s.message?.includes('asked of the node agent')),
  );

async function replay(events: TriggerEvent[]): Promise<Plan[]> {
  const plans: Plan[] = [];
  let cur = { node: node(), pods: STANDARD_PODS };
  for (const e of events) {
    const plan = planRemediation(factsFor(e, cur.node, { pods: cur.pods }), DEFAULT_POLICY);
    plans.push(plan);
    cur = await apply(cur.node, cur.pods, plan);
  }
  return plans;
}

describe('NVIDIA buckets on a busy node (issue #36)', () => {
  // IGNORE in NVIDIA's catalog: 38, 44, 93, 141, 152. Each gave quarantine-gpu, an eviction and a reset before.
  it.each([38, 44, 93, 141, 152])(
    'XID %i (IGNORE), five times from two workloads: nothing fenced, reset, evicted or cordoned',
    async (x) => {
      const plans = await replay(
        [0, 1, 2, 3, 4].map((m) => xid(x, { minute: m, pods: [{ uid: m % 2 ? 'uid-train-0' : 'uid-train-1' }] })),
      );
      for (const p of plans) {
        expect(p.action, `XID ${x}`).toBe('observe');
        expect(harmful(p), `XID ${x}`).toEqual([]);
      }
    },
  );

  // RESTART_APP: 11, 32, 39, 80. Its own workload restarts; nothing else moves, nothing is fenced.
  it.each([11, 32, 39, 80])('XID %i (RESTART_APP) restarts the workload that hit it and nothing else', async (x) => {
    const [plan] = await replay([xid(x, { pods: [{ uid: 'uid-train-0' }] })]);
    expect(plan!.action).toBe('restart-workload');
    expect(harmful(plan!).map((s) => `${s.kind} ${s.target}`)).toEqual(['evict pod/ml/train-0']);
  });

  it('a RESTART_APP XID on a shared GPU restarts the pod its pid names; once it escalates to quarantine-gpu, every pod on that GPU moves', async () => {
    // Escalation counts culprits: one pod hitting it three times would never quarantine the GPU.
    // Two pods time-sliced on GPU 0; the kernel line's pid names one of them each time.
    const shared = [...STANDARD_PODS, pod('notebook', { gpus: [gpu(0).uuid] })];
    const plans: Plan[] = [];
    let cur = { node: node(), pods: shared };
    for (const [m, uid] of [
      [0, 'uid-train-0'],
      [1, 'uid-notebook'],
      [2, 'uid-train-0'],
    ] as const) {
      // As the agent sends it: every pod on the GPU, and the one the kernel line's pid names.
      const e = xid(32, { minute: m, pods: [{ uid: 'uid-train-0' }, { uid: 'uid-notebook' }] });
      const event = { ...e, detail: { ...e.detail, culprit: { uid } } } as TriggerEvent;
      const plan = planRemediation(factsFor(event, cur.node, { pods: cur.pods }), DEFAULT_POLICY);
      plans.push(plan);
      cur = await apply(cur.node, cur.pods, plan);
      cur.pods = shared; // the workloads come back on the GPU
    }
    expect(plans.map((p) => p.action)).toEqual(['restart-workload', 'restart-workload', 'quarantine-gpu']);
    expect(plans[0]!.evictions.map((e) => e.name)).toEqual(['train-0']);
    expect(plans[2]!.evictions.map((e) => e.name).sort()).toEqual(['notebook', 'train-0']);
  });
});
