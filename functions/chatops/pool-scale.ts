import type { CloudPools } from '../adapters/alicloud/ports.ts';
import { closeApproval, getApproval, noteApproval, recordApproval, type ApprovalRecord } from '../lib/approvals.ts';
import { fnv1a } from '../lib/hash.ts';
import type { AutoscalePolicy } from '../lib/pool-policy.ts';
import type { CommandPorts } from './command-ports.ts';

/** Chat's own approvals (pool scales): a shard of their own, out of remediation's sweep's way. */
export const CHAT_APPROVALS_SHARD = 'chatops-approvals';

/** The autoscaler's pools and its cloud port, as autoscale-pools is wired (functions/autoscale/wiring.ts). */
export interface PoolPorts {
  policy: AutoscalePolicy;
  cloud: CloudPools;
}

/**
 * `pool scale POOL N`: an absolute desired size through the autoscaler's CloudPools port, within
 * the pool's min/max from the autoscale policy. A scale-out of more than the pool's `maxStep` (the
 * most the autoscaler itself adds at once) is costly: it is recorded as an approval and asked in
 * chat, not carried out (a dry run says it would be, and records nothing).
 */
export async function poolScale(
  p: CommandPorts,
  asked: { pools: PoolPorts | undefined; approvalTtlMinutes: number; pool: string; size: number; usage: string },
): Promise<string> {
  const { pools, approvalTtlMinutes, pool: poolId, size, usage } = asked;
  const dryRun = p.dryRun;
  const bounds = pools?.policy.pools[poolId];
  if (!pools || !bounds)
    return (
      `node pool ${poolId} is not managed by gpu-reflex (AUTOSCALE_POLICY_FILE ` +
      `names ${Object.keys(pools?.policy.pools ?? {}).join(', ') || 'none'}). Usage: ${usage}`
    );
  if (size < bounds.min || size > bounds.max)
    return (
      `${poolId} may hold ${bounds.min}–${bounds.max} nodes (the autoscale policy): ${size} is outside. ` +
      `Usage: ${usage}`
    );
  const pool = (await pools.cloud.listNodePools()).find((x) => x.id === poolId);
  if (!pool) return `no node pool ${poolId} in the cluster. Usage: ${usage}`;
  const lead = dryRun ? 'dry run, nothing changed: ' : '';
  // Unknown is not 0: the step (and whether it needs approval) is measured from the size there now.
  if (pool.desiredSize === undefined)
    return `ACK gives no desired size for ${poolId} (DescribeClusterNodePools): nothing changed. Usage: ${usage}`;
  if (pool.desiredSize === size) return `${lead}${poolId} is already at ${size}: nothing to do`;
  if (size - pool.desiredSize > bounds.maxStep) {
    const now = new Date(p.clock.now());
    const id = `apr-${fnv1a(`pool/${poolId}@${pool.desiredSize}->${size}@${now.toISOString()}`)}`;
    const summary =
      `pool scale ${poolId} ${pool.desiredSize} → ${size} adds ${size - pool.desiredSize} nodes, more ` +
      `than its maxStep ${bounds.maxStep}: it needs approval`;
    // A dry run records nothing (its state store is the decorator's), so there is no id to answer: one told here
    // would be answered "unknown id" by approve, or read as a request held when none is.
    if (dryRun)
      return `${lead}${summary}: it would be held for approval (ask again without --dry-run to hold it and get its id)`;
    await recordApproval(
      p.kube.state,
      {
        id,
        node: '',
        incident: `pool/${poolId}`,
        action: 'pool-scale',
        scope: 'pool',
        target: { gpus: [], pods: [] },
        requestedAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + approvalTtlMinutes * 60_000).toISOString(),
        approvers: [],
        status: 'open',
        scale: { pool: poolId, from: pool.desiredSize, to: size },
      },
      CHAT_APPROVALS_SHARD,
    );
    // Recorded already: a notice that fails must not fail the command, or the open approval's id is told to no one
    // (the asker hears "failed" and asks again, holding a second). The asker gets the id, and why the channel did not.
    const unsent = await p.notifier
      .notify({
        title: `gpu-reflex: pool scale ${poolId}`,
        text: `${summary}. Answer "approve ${id}" or "deny ${id}" within ${approvalTtlMinutes} min`,
        severity: 'warning',
        approval: { id },
      })
      .then(
        () => '',
        (err: unknown) => {
          p.logger.warn('pool scale approval notice not sent', { approval: id, error: err });
          return `; the chat notice failed (${(err as Error).message.slice(0, 200)}): pass the id on`;
        },
      );
    return `${lead}${summary}: held for approval ${id}; an operator answers "approve ${id}"${unsent}`;
  }
  const { taskId } = await pools.cloud.setDesiredSize(poolId, size);
  return (
    `${lead}${dryRun ? 'would set' : 'set'} ${poolId}'s desired size ${pool.desiredSize} ` +
    `→ ${size}${dryRun ? '' : ` (task ${taskId})`}`
  );
}

/**
 * `approve`/`deny` of a held pool scale: closed once, then carried out; a second click finds it
 * closed. `decided` is true only for the click that closed it.
 */
export async function decidePoolScale(
  p: CommandPorts,
  pools: PoolPorts | undefined,
  id: string,
  decision: 'approved' | 'rejected',
  by: string,
): Promise<{ answer: string; decided: boolean } | undefined> {
  const rec = await getApproval(p.kube.state, id, CHAT_APPROVALS_SHARD);
  if (!rec?.scale) return undefined;
  const answer = await decideScale(p, { pools, id, rec: { ...rec, scale: rec.scale }, decision, by });
  return typeof answer === 'string' ? { answer, decided: false } : answer;
}

/**
 * The note an approved scale is closed with until the cloud took it: the decision is closed first (once, whoever
 * clicks), and the cloud call after it may fail (throttled, unreachable). Found on a later approve, the scale is
 * sent again (an absolute size: safe to retry) while the pool is still where it was asked from; the note then says
 * what was set. Without it, the approval read approved-applied with nothing applied, and every later click
 * answered "nothing more done".
 */
const NOT_YET_SET = 'approved; the desired size not set yet';

/** A held pool scale's decision: closed, then carried out (approved) or left (rejected). */
async function decideScale(
  p: CommandPorts,
  asked: {
    pools: PoolPorts | undefined;
    id: string;
    rec: ApprovalRecord & { scale: NonNullable<ApprovalRecord['scale']> };
    decision: 'approved' | 'rejected';
    by: string;
  },
): Promise<string | { answer: string; decided: true }> {
  const { pools, id, rec, decision, by } = asked;
  const now = new Date(p.clock.now());
  const { pool, from, to } = rec.scale;
  const set = async () => {
    const { taskId } = await pools!.cloud.setDesiredSize(pool, to);
    const said = `set ${pool}'s desired size ${from} → ${to} (task ${taskId})`;
    await noteApproval(p.kube.state, id, said, CHAT_APPROVALS_SHARD);
    return said;
  };
  if (rec.status === 'approved-applied' && rec.note === NOT_YET_SET && decision === 'approved' && pools) {
    const current = (await pools.cloud.listNodePools()).find((x) => x.id === pool)?.desiredSize;
    if (current === from) return `approved ${id} (by ${rec.decidedBy ?? 'unknown'}): ${await set()}`;
  }
  if (rec.status !== 'open')
    return `${id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`;
  if (now.getTime() >= Date.parse(rec.expiresAt)) {
    await closeApproval(p.kube.state, id, 'expired', { at: now, note: 'expired undecided' }, CHAT_APPROVALS_SHARD);
    return `${id} expired at ${rec.expiresAt}: too late, nothing done (ask again with pool scale)`;
  }
  // The plan the approver saw is `from → to`; the size sent is absolute. A pool that moved while the request waited
  // (the autoscaler, the console, another scale) would be sent `to` all the same — a shrink where a growth was
  // approved, its nodes' pods evicted — and told "from → to". Checked at the click, by the pool's size now; left
  // open (it expires), so an approve once the pool is back where it was asked from still carries it out.
  if (decision === 'approved' && pools) {
    const current = (await pools.cloud.listNodePools()).find((x) => x.id === pool)?.desiredSize;
    if (current !== from)
      return (
        `${id} not approved: ${pool} ${current === undefined ? 'is not in the cluster' : `is at ${current} now`}, ` +
        `not ${from} as when ${from} → ${to} was asked: nothing done (ask again with pool scale ${pool} N)`
      );
  }
  const closed = await closeApproval(
    p.kube.state,
    id,
    decision === 'approved' ? 'approved-applied' : 'rejected',
    { decidedBy: by, at: now, ...(decision === 'approved' && pools ? { note: NOT_YET_SET } : {}) },
    CHAT_APPROVALS_SHARD,
  );
  if (!closed.closed) return `${id} is already ${closed.record?.status ?? 'gone'}: nothing more done`;
  if (decision === 'rejected') return { answer: `rejected ${id}: ${pool} stays as it is`, decided: true };
  if (!pools)
    return {
      answer: `approved ${id}, but this deployment has no cloud wired (AUTOSCALE_POLICY_FILE): nothing done`,
      decided: true,
    };
  return { answer: `approved ${id}: ${await set()}`, decided: true };
}
