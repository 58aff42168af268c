import { describe, expect, it } from 'vitest';
import { afterPlan, planMig } from '../functions/mig/core/planner.ts';
import { smallMigScenarios } from './mig-fleet.ts';
import { exactMig } from './mig-reference.ts';

/**
 * Issue #30: the small fleets where the planner serves fewer pods than the brute-force optimum, counted
 * the planner's way (afterPlan's matching). 8 of 300 before match.ts let a pod that fits on GPUs left as
 * they are go there first (a pod free to go anywhere took the instance relaid for a pod pinned to that
 * node: fleet 83, 143); 7 before the bounded search after the rounds (improve.ts: one idle GPU's layout
 * changed, then two together) served fleets 34, 110, 138, 231 and 246 (e.g. 246 needs two 4g.40gb for
 * one pod on one node, 4 GPUs changed, where the rounds relaid 2 for pods of higher priority first).
 * The 2 left are out of reach of any layout under the matching, not of the planner: trying every
 * layout of every idle GPU (their instances that pods ask for) serves at most what the planner serves
 * on them. Fleet 214: the optimum serves two pods of 1×1g.10gb where the matching gives both instances
 * to a pod asking for 2×1g.10gb (pods asking for more instances are matched first), and 161 alike.
 * This pins the count: a change that serves fewer fails here; one that serves more lowers the bound.
 */
describe('the MIG planner against the brute-force optimum on 300 small fleets', () => {
  it('serves as many pods as the optimum on all but 2, which no layout serves under the matching', () => {
    const misses: number[] = [];
    let ours = 0;
    let optimum = 0;
    smallMigScenarios(300).forEach(({ nodes, pods }, i) => {
      const best = exactMig(nodes, pods).satisfied.length;
      const plan = planMig(nodes, pods);
      const pending = new Set(afterPlan(nodes, pods, plan).pending);
      const served = pods.filter((p) => Object.values(p.requests).some((v) => v > 0) && !pending.has(p)).length;
      ours += served;
      optimum += best;
      if (served < best) misses.push(i);
    });
    expect(misses).toEqual([161, 214]);
    // More pods than the optimum: it maximises pods per priority, highest first, not pods.
    expect([ours, optimum]).toEqual([1357, 1354]);
  }, 60_000);
});
