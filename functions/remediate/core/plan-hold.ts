/**
 * The blast-radius hold (split from plan.ts): an action that takes capacity beyond the pool's
 * limits waits for a person's approval, asked once per incident.
 */
import type { RemediationAction } from '../../../events/index.ts';
import { checkBlastRadius, checkTenants } from './blast-radius.ts';
import { approvalIdFor } from './detail.ts';
import type { Incident, NodeState } from './state.ts';
import type { Plan, PlanTarget, PodFacts } from './types.ts';
import type { sharingOf } from './sharing.ts';
import { tenantsOf } from './sharing.ts';
import { replace } from './incident-edit.ts';
import { notice } from './plan-trigger.ts';
import type { PlanFrame } from './plan-frame.ts';

/** Where the planner stands when the blast radius is checked. */
export interface HoldInput {
  action: RemediationAction;
  open: Incident | undefined;
  /** The incident already waits for approval: a repeat is counted, not asked again. */
  retryApproval: boolean;
  counted: Incident;
  level: number;
  s1: NodeState;
  scope: Plan['scope'];
  moving: PodFacts[];
  sharing: ReturnType<typeof sharingOf>;
  target: PlanTarget;
  decided: { profile?: string };
  reasonCore: string;
}

/** The approval plan when the pool's limits hold the action back; undefined when it may go ahead. */
export function holdForApproval(f: PlanFrame, h: HoldInput): Plan | undefined {
  const { facts, policy, prev, base, ws, edit, noop } = f;
  const { node, now } = facts;
  const { action, open, retryApproval, counted, level, s1, scope, moving, sharing, target, decided, reasonCore } = h;
  const alreadyOut = prev.phase !== 'healthy' && prev.phase !== 'awaiting-approval';
  const byNodes =
    facts.slotDenied && !alreadyOut
      ? {
          allowed: false,
          words:
            `the pool ${facts.pool.name} has no free slot left in its ledger: ` +
            'a concurrent remediation took the last one',
        }
      : checkBlastRadius(policy, facts.pool, node.name, alreadyOut);
  // On a shared card the limit also counts the tenants one fence moves (issue #32).
  const byTenants =
    sharing.mode !== 'exclusive' && scope === 'gpu' ? checkTenants(policy, facts.pool, tenantsOf(moving)) : undefined;
  const verdict = byNodes.allowed && byTenants && !byTenants.allowed ? byTenants : byNodes;
  if (!verdict.allowed) {
    if (retryApproval && open) {
      // Asked once already: count the repeat, do not ask again (no chat spam in a storm).
      return noop(
        `${reasonCore} Still awaiting approval since ${open.since}: ${verdict.words}`,
        action,
        ws(replace(s1, { ...counted, phase: 'awaiting-approval' })),
      );
    }
    const waiting: Incident = {
      ...counted,
      action,
      level: level,
      phase: 'awaiting-approval',
      since: open?.phase === 'awaiting-approval' ? open.since : now.toISOString(),
    };
    const next = ws(replace(s1, waiting));
    // A shared card's approval always says how many teams' pods the fence moves (issue #32).
    const teams = byTenants && verdict !== byTenants ? `; ${byTenants.words}` : '';
    const summary = `${action} on node ${node.name} needs approval: ${verdict.words}${teams}`;
    // The id the store records it under (run.ts): what a person answers in chat.
    const id = approvalIdFor(waiting.key, waiting.firstAt);
    const ask = {
      ...notice(
        action,
        node,
        `${summary}. Answer "approve ${id}" or "deny ${id}" within ${policy.approvals.ttlMinutes} min`,
      ),
      approval: { id },
    };
    return {
      ...base,
      kind: 'approval',
      action,
      scope,
      phase: 'awaiting-approval',
      target,
      ...decided,
      ...edit(next),
      approval: { summary },
      notices: [ask],
      reason:
        `${reasonCore} Held back by the blast radius: ${verdict.words}. ` +
        'A person must approve; the sweep acts by itself once the window has room',
      nextState: next,
    };
  }
  return undefined;
}
