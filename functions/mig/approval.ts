import { closeApproval, getApproval, MIG_APPROVALS_SHARD, recordApproval } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import type { PlannedNodeChange } from './core/rebalance.ts';
import type { MigRebalanceDeps } from './deps.ts';

type NodeChange = PlannedNodeChange['changes'][number];

/** The approval id of a preempting relayout: the node, the GPUs, their new layouts and who is preempted. */
export function migApprovalId(node: string, changes: readonly NodeChange[]): string {
  return (
    'apr-mig-' +
    fnv1a(
      JSON.stringify([
        node,
        changes.map((c) => [
          c.gpu,
          [...c.to].sort(),
          (c.preempts ?? []).map((h) => `${h.namespace}/${h.name}/${h.uid ?? ''}`).sort(),
        ]),
      ]),
    )
  );
}

/**
 * With `approvalMinutes` set, a node's preempting changes go ahead only once approved in chat: the
 * first round asks (a notice with the approval id), later rounds wait; denied, expired or no
 * state store to keep the approval in, those GPUs keep their layouts. The node's other changes
 * go ahead meanwhile. The same pods on the same GPUs are asked about once.
 */
export async function approvedChanges(
  deps: MigRebalanceDeps,
  node: string,
  planned: PlannedNodeChange,
  why: (gpu: number) => string,
): Promise<PlannedNodeChange | undefined> {
  const minutes = deps.mig.preemption?.approvalMinutes;
  const preempting = planned.changes.filter((c) => (c.preempts ?? []).length > 0);
  if (!minutes || preempting.length === 0) return planned;
  const others = planned.changes.filter((c) => !preempting.includes(c));
  const without = others.length > 0 ? { ...planned, changes: others } : undefined;
  if (!deps.state) {
    deps.logger.warn('rebalance-mig', {
      node,
      problem: 'preempting relayouts need approval, and there is no state store to keep approvals in: not preempting',
    });
    return without;
  }
  const id = migApprovalId(node, preempting);
  const now = new Date(deps.clock.now());
  const rec = await getApproval(deps.state, id, MIG_APPROVALS_SHARD);
  if (rec?.status === 'approved-applied') return planned;
  if (rec?.status === 'open' && now.getTime() >= Date.parse(rec.expiresAt))
    await closeApproval(deps.state, id, 'expired', { at: now, note: 'expired undecided' }, MIG_APPROVALS_SHARD);
  if (rec) {
    deps.logger.info('rebalance-mig', {
      node,
      approval: id,
      status: rec.status,
      why: 'preempting relayout not approved (yet): those GPUs keep their layouts',
    });
    return without;
  }
  const pods = preempting.flatMap((c) => (c.preempts ?? []).map((h) => `${h.namespace}/${h.name}`));
  // Told first, then recorded: a notice that fails is asked again next round, never lost.
  await deps.notifier.notify({
    title: `gpu-reflex: approve preempting ${pods.length} pod(s) on ${node} for a MIG relayout?`,
    text: (
      `${preempting.map((c) => why(c.gpu)).join('; ')}. Answer "approve ${id}" or "deny ${id}" ` +
      `within ${minutes} min`
    ).slice(0, 1500),
    severity: 'warning',
    approval: { id },
  });
  await recordApproval(
    deps.state,
    {
      id,
      node,
      incident: `mig/${node}`,
      action: 'mig-preempt',
      scope: 'gpu',
      target: { gpus: preempting.map((c) => String(c.gpu)), pods },
      requestedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + minutes * 60_000).toISOString(),
      approvers: [],
      status: 'open',
      mig: { gpus: preempting.map((c) => c.gpu), preempts: pods },
    },
    MIG_APPROVALS_SHARD,
  );
  deps.logger.info('rebalance-mig', { node, approval: id, why: 'preempting relayout asked for approval' });
  return without;
}
