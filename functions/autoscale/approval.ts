import type { NodePool } from '../adapters/alicloud/ports.ts';
import type { Increment } from './core/planner.ts';
import { AUTOSCALE_APPROVALS_SHARD, closeApproval, getApproval, recordApproval } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import type { AutoscaleDeps } from './deps.ts';

/** The approval id of a scale-out: the cluster, the pool and the sizes (the same plan asks once). */
export const scaleOutApprovalId = (clusterId: string, pool: string, from: number, to: number) =>
  `apr-pool-${fnv1a(`${clusterId}/${pool}:${from}->${to}`)}`;

/**
 * With the policy's `approval` set, a scale-out adding more than its hourly cost goes ahead only
 * once approved in chat: the first round asks (a notice with the approval id) and records it,
 * later rounds wait; approved, the next round carries it out; denied or expired, that plan is not
 * carried out nor asked about again (a different size is a new request). True while it is held.
 */
export async function heldForApproval(
  deps: AutoscaleDeps,
  pool: NodePool,
  inc: Increment,
  reason: string,
  now: number,
): Promise<boolean> {
  const approval = deps.policy.approval;
  if (!approval || inc.hourlyCost <= approval.aboveHourlyCost) return false;
  const id = scaleOutApprovalId(deps.clusterId, pool.id, inc.from, inc.to);
  const rec = await getApproval(deps.state, id, AUTOSCALE_APPROVALS_SHARD);
  if (rec?.status === 'approved-applied') return false;
  if (rec?.status === 'open' && now >= Date.parse(rec.expiresAt))
    await closeApproval(
      deps.state,
      id,
      'expired',
      { at: new Date(now), note: 'expired undecided' },
      AUTOSCALE_APPROVALS_SHARD,
    );
  if (rec) {
    deps.logger.info('autoscale-pools: scale-out waits for approval', {
      pool: pool.id,
      from: inc.from,
      to: inc.to,
      approval: id,
      status: rec.status,
    });
    return true;
  }
  // Told first, then recorded: a notice that fails is asked again next round, never lost.
  await deps.notifier.notify({
    title: `gpu-reflex: approve growing node pool ${pool.name} ${inc.from} → ${inc.to} (+${inc.hourlyCost}/h)?`,
    text: (
      `${reason}. It adds ${inc.hourlyCost}/h, above the ${approval.aboveHourlyCost}/h the policy lets the ` +
      `autoscaler spend alone. Answer "approve ${id}" or "deny ${id}" within ${approval.ttlMinutes} min`
    ).slice(0, 1500),
    severity: 'warning',
    approval: { id },
  });
  await recordApproval(
    deps.state,
    {
      id,
      node: '',
      incident: `pool/${pool.id}`,
      action: 'pool-scale-out',
      scope: 'pool',
      target: { gpus: [], pods: inc.pods.slice(0, 50) },
      requestedAt: new Date(now).toISOString(),
      expiresAt: new Date(now + approval.ttlMinutes * 60_000).toISOString(),
      approvers: [],
      status: 'open',
      scale: { pool: pool.id, from: inc.from, to: inc.to },
    },
    AUTOSCALE_APPROVALS_SHARD,
  );
  deps.logger.info('autoscale-pools: scale-out asked for approval', {
    pool: pool.id,
    from: inc.from,
    to: inc.to,
    approval: id,
    hourlyCost: inc.hourlyCost,
  });
  return true;
}
