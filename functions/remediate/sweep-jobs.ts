/**
 * The sweep's jobs, each under the lease that keeps two invocations apart: the scheduled round
 * (`remediate-sweep`, every minute: the node pass, then approvals settled, then replacements followed,
 * in that order under one lease) and one node's repair moved on by its agent's answer
 * (`remediate-repair-<node>`: the node pass for that node alone; approvals are left to the round).
 */
import { instanceIdOf } from '../adapters/alicloud/repair.ts';
import { withLease } from '../lib/lease.ts';
import { stateOf } from './facts.ts';
import { nodeLease, remediationEvent, type RemediationDeps } from './run.ts';
import { emptyState } from './core/state.ts';
import { forgetReplacement, nodeOrGone, replacedPlan, replacingIn } from './replacements.ts';
import type { ReplacementRecord } from '../lib/replacements.ts';
import { closeApproval, getApproval, listApprovals, type ApprovalRecord } from '../lib/approvals.ts';
import { stillWaits } from './approval-waits.ts';
import { sweep, type SweepPass } from './sweep-run.ts';
import type { Plan } from './core/types.ts';

export interface SweepOutcome extends Omit<SweepPass, 'records'> {
  /** Approvals closed as expired this round. */
  expired: string[];
}

const idle = (deps: RemediationDeps): SweepOutcome => (
  deps.logger.info('sweep already running elsewhere'),
  { nodes: 0, plans: [], skipped: [], expired: [] }
);

/** The scheduled round (Lambda `remediate-sweep`, sweep-handler.ts). */
export async function sweepRound(deps: RemediationDeps): Promise<SweepOutcome> {
  return withLease(
    'remediate-sweep',
    120,
    deps,
    async () => {
      const { records, ...out } = await sweep(deps);
      const expired = await expireApprovals(deps, new Set(out.plans.map((p) => p.target.node)));
      if (deps.replacements) await followReplacements(deps, records);
      return { ...out, expired };
    },
    () => idle(deps),
  );
}

/**
 * One node's repair moved on now (a `GPU Action Result` from its agent, gpu-action-handler.ts), under a
 * lease of its own; approvals and replacements are left to the scheduled round.
 */
export async function sweepNode(deps: RemediationDeps, node: string): Promise<SweepOutcome> {
  return withLease(
    `remediate-repair-${node}`,
    120,
    deps,
    async () => {
      const { records: _followedByTheRound, ...out } = await sweep(deps, node);
      return { ...out, expired: [] };
    },
    () => idle(deps),
  );
}

/**
 * Replacements whose node is gone (RemoveNodePoolNodes took it, and its history with it; a node of that name on
 * another instance is a new one) are closed with their last Remediation event: published first, then forgotten, so a
 * failed publish is retried next round under the same event id. A record whose node no longer replaces (a person
 * closed the incident) is forgotten quietly.
 */
async function followReplacements(
  deps: RemediationDeps,
  records: ReadonlyMap<string, ReplacementRecord>,
): Promise<void> {
  for (const r of records.values()) {
    const named = await nodeOrGone(deps.nodes, r.node);
    // By identity: ACK names nodes by private IP, which a new instance may reuse, so a node of that name on another
    // instance is not the one replaced (that one is gone). One whose instance cannot be read is taken as the same.
    const other = named && instanceIdOf(named.providerId);
    const node = other && other !== r.instanceId ? undefined : named;
    if (node && replacingIn(stateOf(node, deps.policy.taintKey))) continue;
    if (!node) {
      const task = r.taskId ? await deps.replacements!.task(r.taskId).catch(() => undefined) : undefined;
      const plan = replacedPlan(r, task);
      await deps.publisher.publish([
        remediationEvent(plan, { evictions: [], notices: [], cloud: [{ result: 'done' }] }, new Date(deps.clock.now())),
      ]);
      deps.logger.info('sweep', { node: r.node, action: plan.action, phase: plan.phase, reason: plan.reason });
    }
    await forgetReplacement(deps.state, r.node);
  }
}

/**
 * Settles open approvals. One whose incident no longer waits (the sweep acted on it once the
 * window had room, or it resolved) is closed `no-longer-needed`, quietly; one past its expiry is
 * closed `expired` and reported as a Remediation (phase awaiting-approval, reason "approval …
 * expired"): published first, then closed, so a failed publish is retried by the next sweep under
 * the same event id. An expired incident still waits: the sweep acts once the pool has room.
 * Only approvals due, or on nodes this sweep acted on (`touched`), are looked at: a node read each.
 */
export async function expireApprovals(
  deps: RemediationDeps,
  touched: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  const now = new Date(deps.clock.now());
  const due = (a: ApprovalRecord) => Date.parse(a.expiresAt) <= now.getTime();
  const open = (await listApprovals(deps.state)).filter((a) => a.status === 'open' && (due(a) || touched.has(a.node)));
  const closed: string[] = [];
  for (const a of open) {
    // Under the node's lease, as remediate-approve decides: a decision and an expiry never cross.
    const done = await withLease(
      nodeLease(a.node),
      60,
      deps,
      async () => {
        // Decided since the listing (remediate-approve held the lease): nothing to settle.
        if ((await getApproval(deps.state, a.id))?.status !== 'open') return false;
        // A node gone (scaled in, replaced, deleted by a person) holds no incident: closed, or every round
        // would stop here on its NotFound and settle nothing after it.
        const node = await nodeOrGone(deps.nodes, a.node);
        if (!node || !stillWaits(stateOf(node, deps.policy.taintKey), a)) {
          const note = node
            ? `${a.incident} on ${a.node} no longer waits for approval: no longer needed`
            : `${a.node} is gone (no such Node): ${a.incident} no longer waits for approval: no longer needed`;
          await closeApproval(deps.state, a.id, 'no-longer-needed', { at: now, note });
          deps.logger.info('approval no longer needed', { approvalId: a.id, node: a.node, incident: a.incident });
          return false;
        }
        if (!due(a)) return false;
        const reason =
          `approval ${a.id} expired at ${a.expiresAt} undecided: ${a.action} on ` +
          `${a.node} stays held back; the sweep acts once the pool's window has room`;
        await deps.publisher.publish([remediationEvent(expiredPlan(a, reason), undefined, now)]);
        const r = await closeApproval(deps.state, a.id, 'expired', { at: now, note: reason });
        deps.logger.info('approval expired', {
          approvalId: a.id,
          node: a.node,
          incident: a.incident,
          closed: r.closed,
        });
        return r.closed;
      },
      () => false,
    );
    if (done) closed.push(a.id);
  }
  return closed;
}

/** The report of an expiry: changes nothing, so a plan with no actions, rendered as a Remediation. */
function expiredPlan(a: ApprovalRecord, reason: string): Plan {
  return {
    kind: 'approval',
    incident: a.incident,
    action: a.action as Plan['action'],
    scope: a.scope as Plan['scope'],
    phase: 'awaiting-approval',
    target: { node: a.node, gpus: a.target.gpus, migInstances: [], pods: [] },
    evictions: [],
    notices: [],
    cloud: [],
    reason,
    trigger: { eventId: `${a.id}:expired`, detailType: 'Approval Expired', node: a.node, observedAt: a.expiresAt },
    nextState: emptyState(),
  };
}
