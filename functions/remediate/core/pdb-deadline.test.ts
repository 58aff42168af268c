import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { renderSteps } from './detail.ts';
import { apply, at, factsFor, gpu, node, pod, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';
import type { NodeFacts, Plan, PodFacts } from './types.ts';

/** A pod a disruption budget keeps on GPU 0, which XID 95 (uncontained ECC: reset) takes out. */
const GUARDED = new Set(['serve-0']);
const PODS: PodFacts[] = [
  ...STANDARD_PODS.filter((p) => p.name !== 'train-0'),
  pod('serve-0', { gpus: [gpu(0).uuid] }),
];

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}
async function sweep(
  w: World,
  minute: number,
  policy: Policy = DEFAULT_POLICY,
): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    policy,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, GUARDED) : w };
}
async function held(): Promise<World> {
  const first = planRemediation(factsFor(xid(95, { minute: 0, gpu: 0 }), node(), { pods: PODS }), DEFAULT_POLICY);
  return apply(node(), PODS, first, GUARDED);
}

describe('a pod a disruption budget keeps on a GPU that needs a reset', () => {
  it('is retried until repair.pdbDeadlineMinutes, then a person is told and the incident climbs as a stuck drain does', async () => {
    let w = await held();
    expect(w.pods.map((p) => p.name)).toContain('serve-0');
    const deadline = DEFAULT_POLICY.repair.pdbDeadlineMinutes;
    // Before the deadline: the eviction is retried, quietly; no reset is asked for while it holds the GPU.
    for (const minute of [1, deadline - 1]) {
      const s = await sweep(w, minute);
      expect(s.plan?.notices ?? []).toEqual([]);
      expect((s.plan ? renderSteps(s.plan) : []).filter((x) => x.kind === 'evict').map((x) => x.target)).toEqual([
        'pod/ml/serve-0',
      ]);
      w = s.world;
    }
    // The fault was handled at 0:01, so the deadline passes before the sweep at deadline + 1.
    const late = await sweep(w, deadline + 1);
    expect(late.plan?.notices.length).toBeGreaterThan(0);
    expect(late.plan?.reason).toContain(
      `1 pod(s) still on ${gpu(0).uuid} ${deadline} min after they were asked to move (ml/serve-0; a disruption budget may be refusing their eviction)`,
    );
    expect(late.plan?.nextState.incidents[0]).toMatchObject({ action: 'reboot-node', phase: 'draining' });
    // Told once: the next sweep is the drain's, not another notice of the deadline.
    const after = await sweep(late.world, deadline + 2);
    expect(after.plan?.reason ?? '').not.toContain('min after they were asked to move');
  });

  it('takes its deadline from the pool when the pool sets one', async () => {
    const policy: Policy = { ...DEFAULT_POLICY, pools: { a100: { pdbDeadlineMinutes: 5 } } };
    const w = await held();
    expect((await sweep(w, 4, policy)).plan?.notices ?? []).toEqual([]);
    expect((await sweep(w, 6, policy)).plan?.reason).toContain('5 min after they were asked to move');
  });
});
