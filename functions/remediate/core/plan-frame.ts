/**
 * The planner's frame for one event (split from plan.ts): the fault site, the node's state before
 * it, the fields every plan of the event carries, and how a plan is built from a next state.
 */
import { nodeChanges } from './reconcile.ts';
import { fenceBackendFor } from './fence-cgpu.ts';
import type { Policy } from './policy.ts';
import { faultSite } from './scope.ts';
import type { NodeState } from './state.ts';
import type { Plan, RemediationFacts } from './types.ts';
import { planTrigger } from './plan-trigger.ts';
import { targetOf, withState } from './incident-edit.ts';

export type PlanFrame = ReturnType<typeof planFrame>;

export function planFrame(facts: RemediationFacts, policy: Policy) {
  const { node } = facts;
  const site = faultSite(facts);
  const prev = facts.state;
  const backend = fenceBackendFor(policy, facts.pool.name, node);
  const ws = (next: NodeState) => withState(prev, next, node, backend);
  const trigger = planTrigger(facts);
  const base = {
    incident: site.key,
    scope: site.scope,
    trigger,
    target: targetOf(site, []),
    evictions: [],
    notices: [],
    cloud: [],
  };
  const edit = (next: NodeState) => nodeChanges(prev, next, node, policy);
  const noop = (reason: string, action: Plan['action'] = 'observe', nextState: NodeState = prev): Plan => ({
    ...base,
    kind: 'noop',
    action,
    phase: 'skipped',
    // Duplicates and stale replays change nothing at all, not even a stray label.
    ...(nextState === prev ? {} : edit(nextState)),
    reason,
    nextState,
  });
  return { facts, policy, site, prev, base, ws, edit, noop };
}
