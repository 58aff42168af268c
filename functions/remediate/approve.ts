/**
 * An `Approval Decided` acted on: the approval's record (approvals.ts) says what was held back;
 * the node is re-planned from current facts with the decision (the sweep's planner, for that one
 * node, under the node's lease), the plan carried out on the reflex skeleton, the approval
 * closed. Exactly once: a closed approval answers "already decided" and changes nothing.
 */
import type { ApprovalDecidedDetail } from '../../events/index.ts';
import { readOutbox } from '../lib/outbox.ts';
import { checkSeal, APPROVAL_KEY_PARAMETER_ENV, type ApprovalKey } from '../lib/approval-seal.ts';
import { carryOut } from '../lib/reflex.ts';
import { withLease } from '../lib/lease.ts';
import { closeApproval, getApproval, type ApprovalRecord, type ApprovalStatus } from '../lib/approvals.ts';
import { stillWaits } from './approval-waits.ts';
import { historyCodec } from './core/reconcile.ts';
import { planSweep } from './core/sweep.ts';
import { stateOf, sweepNodeFacts } from './facts.ts';
import { replacementsIn, type ReplacementRecord } from '../lib/replacements.ts';
import { nodeLease, remediationEvent, SWEPT, type RemediationDeps } from './run.ts';
import { newsworthy } from './reported.ts';
import { nodeOrGone } from './replacements.ts';

export type DecisionResult =
  | { result: 'unknown'; message: string }
  | { result: 'refused'; message: string }
  | { result: 'already-decided'; status: ApprovalStatus; message: string }
  | { result: 'closed'; status: Exclude<ApprovalStatus, 'open'>; message: string };

/** `platform:id` or the bare id, as the policy's approvers list names them. */
export function deciderOf(d: ApprovalDecidedDetail): string | undefined {
  return d.decidedBy ? `${d.decidedBy.platform}:${d.decidedBy.id}` : undefined;
}

/**
 * An empty approvers list leaves it to whoever could seal the decision: chatops seals only for
 * callers whose role (the roles file, `approve` needs operator) allows it, and `gpu-reflex approve`
 * only for a person whose own identity may read the key. Never anyone who can put an event.
 */
function allowed(rec: ApprovalRecord, d: ApprovalDecidedDetail): boolean {
  if (rec.approvers.length === 0) return true;
  if (!d.decidedBy) return false;
  return rec.approvers.includes(d.decidedBy.id) || rec.approvers.includes(`${d.decidedBy.platform}:${d.decidedBy.id}`);
}

/** Why an unproven decision is refused; undefined when it carries this deployment's seal. */
function unproven(d: ApprovalDecidedDetail, key: ApprovalKey | undefined): string | undefined {
  if (!key)
    return (
      `this deployment has no approval key (${APPROVAL_KEY_PARAMETER_ENV}), so no decision can ` +
      `be proven: refused, nothing done`
    );
  const seal = checkSeal(key, d);
  if (seal === 'missing')
    return 'unsealed: it did not come from chatops or gpu-reflex approve with the approval key: refused, nothing done';
  if (seal === 'forged') return 'its seal does not match (forged, or altered on the way): refused, nothing done';
  return undefined;
}

/** `key` is the approval key (lib/approval-seal.ts): without it every decision is refused. */
export async function decideApproval(
  d: ApprovalDecidedDetail,
  deps: RemediationDeps,
  key: ApprovalKey | undefined,
): Promise<DecisionResult> {
  const log = (r: DecisionResult): DecisionResult => {
    (r.result === 'closed' ? deps.logger.info : deps.logger.warn).call(
      deps.logger,
      `approval ${d.approvalId}: ${r.message}`,
      { approvalId: d.approvalId, decision: d.decision, by: deciderOf(d), result: r.result },
    );
    return r;
  };
  if (d.decision === 'expired')
    return log({ result: 'refused', message: "an expiry is the sweep's to decide, not an event's: nothing done" });
  // Before anything is read: a forger learns nothing about the store from the answer.
  const why = unproven(d, key);
  if (why) return log({ result: 'refused', message: why });
  const first = await getApproval(deps.state, d.approvalId);
  if (!first) return log({ result: 'unknown', message: 'no such approval in the store: nothing done' });
  if (first.status !== 'open')
    return log({
      result: 'already-decided',
      status: first.status,
      message:
        `already ${first.status}${first.decidedBy ? ` by ${first.decidedBy}` : ''}: this ` + `decision changes nothing`,
    });
  if (!allowed(first, d))
    return log({
      result: 'refused',
      message:
        `${deciderOf(d) ?? 'an anonymous decider'} may not decide it (approvers: ` +
        `${first.approvers.join(', ')}): refused, nothing done`,
    });
  const now = new Date(deps.clock.now());
  if (now.getTime() >= Date.parse(first.expiresAt))
    return log({
      result: 'refused',
      message: `expired at ${first.expiresAt}: too late, nothing done (the sweep reports it expired)`,
    });

  return log(
    await withLease(nodeLease(first.node), 60, deps, async (): Promise<DecisionResult> => {
      // Under the lease: another decision for this id may have closed it since the first read.
      const rec = await getApproval(deps.state, d.approvalId);
      if (!rec || rec.status !== 'open')
        return {
          result: 'already-decided',
          status: rec?.status ?? 'no-longer-needed',
          message: `already ${rec?.status ?? 'gone'}: this decision changes nothing`,
        };
      const by = { ...(d.decidedBy ? { decidedBy: deciderOf(d)! } : {}), at: now };
      const info = await nodeOrGone(deps.nodes, rec.node);
      if (!info || !stillWaits(stateOf(info, deps.policy.taintKey), rec)) {
        const note = info
          ? `${rec.incident} on ${rec.node} no longer waits for approval (resolved, acted on, or restored): ` +
            'no longer needed'
          : `${rec.node} is gone (no such Node: scaled in, replaced or deleted): nothing to approve, no longer needed`;
        await closeApproval(deps.state, rec.id, 'no-longer-needed', { ...by, note });
        return { result: 'closed', status: 'no-longer-needed', message: note };
      }
      // Read as the sweep reads a node (facts.ts sweepNodeFacts), so a decision plans from what the sweep would: the
      // GPU's fence begins here when the quarantine is approved, a DRA pool's DeviceTaintRule in this patch (not a
      // sweep later, while a new claim could be given the GPU), a shared node's card fence from what its ConfigMap
      // lists before (another writer's, fence-cgpu.ts); and the node's own repair owner and cloud reach.
      const records = deps.replacements
        ? replacementsIn(await deps.state.getAll())
        : new Map<string, ReplacementRecord>();
      const facts = await sweepNodeFacts(deps, deps.policy, info, { pools: new Map(), records });
      const plan = planSweep(
        {
          now,
          nodes: [facts],
          decisions: [{ incident: rec.incident, decision: d.decision }],
          ...(deps.capabilities ? { capabilities: deps.capabilities } : {}),
        },
        deps.policy,
      ).plans[0];
      if (plan) {
        // A rejection closes the incident (history and label) and says so in the log, nothing else.
        const report = d.decision === 'approved' && newsworthy(plan);
        await carryOut(
          {
            node: rec.node,
            pending: readOutbox(info.annotations),
            actions: plan,
            events: (a) => (report ? [remediationEvent(plan, a, now)] : []),
            codec: historyCodec,
            basis: info,
            // A refused publish leaves the report in the outbox for the sweep, not a thrown decision: the
            // decision's retry would find the incident acted on and close the approval as no longer needed,
            // losing who approved it.
            sweptBy: SWEPT,
          },
          deps,
        );
      }
      const status = d.decision === 'approved' ? 'approved-applied' : 'rejected';
      const note = plan?.reason ?? `${rec.incident}: nothing left to do`;
      await closeApproval(deps.state, rec.id, status, { ...by, note });
      return { result: 'closed', status, message: note };
    }),
  );
}
