import { describe, expect, it } from 'vitest';
import { afterPlan, planMig } from '../functions/mig/core/planner.ts';
import { smallMigScenarios } from './mig-fleet.ts';
import { exactMig } from './mig-reference.ts';

/**
 * Issue #30: the small fleets where the planner serves fewer pods than the brute-force optimum, counted
 * the planner's way (afterPlan's matching). 8 of 300 before match.ts let a pod that fits on GPUs left as
 * they are go there first (a pod free to go anywhere took the instance relaid for a pod pinned to that
 * node: fleet 83, 143). What is left is the greedy packing's limit, documented in docs/mig.md ("How close
 * to the optimum"): e.g. fleet 246 needs two 4g.40gb for one pod on one node, 4 GPUs changed by the
 * optimum, where the rounds relay 2 for pods of higher priority first. This pins the count: a change
 * that serves fewer fails here; one that serves more lowers the bound.
 */
describe('the MIG planner against the brute-force optimum on 300 small fleets', () => {
  it('serves as many pods as the optimum on all but 7 (the reproducer of the pinned-before-free miss included)', () => {
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
    expect(misses).toEqual([34, 110, 138, 161, 214, 231, 246]);
    expect([ours, optimum]).toEqual([1352, 1354]);
  }, 60_000);
});
