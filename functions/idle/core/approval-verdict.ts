import { createHash } from 'node:crypto';
import type { ApprovalRecord } from '../../lib/approvals.ts';
import type { IdleTrack } from '../../lib/idle-record.ts';

/** One approval per idle run of a pod's device: a new run asks again. */
export function idleApprovalId(node: string, t: Pick<IdleTrack, 'device' | 'namespace' | 'pod' | 'since'>): string {
  const h = createHash('sha256').update(`${node}\u0000${t.device}\u0000${t.namespace}/${t.pod}\u0000${t.since}`);
  return `idle-${h.digest('hex').slice(0, 12)}`;
}

export type Verdict = 'ask' | 'wait' | 'expire' | 'approved' | 'refused';

/**
 * What the approval store says of this eviction. Only an approval closed as approved, for exactly this
 * eviction (action, node, pod, device), decided before it expired, lets it go on; anything else — absent,
 * open, rejected, expired, or a record that does not match — never evicts.
 */
export function verdictOf(
  rec: ApprovalRecord | undefined,
  node: string,
  pod: string,
  device: string,
  now: number,
): Verdict {
  if (!rec) return 'ask';
  if (rec.status === 'open') return now >= Date.parse(rec.expiresAt) ? 'expire' : 'wait';
  if (rec.status !== 'approved-applied') return 'refused';
  const matches =
    rec.action === 'idle-evict' && rec.node === node && rec.idle?.pod === pod && rec.idle.device === device;
  const inTime = rec.decidedAt !== undefined && Date.parse(rec.decidedAt) <= Date.parse(rec.expiresAt);
  return matches && inTime ? 'approved' : 'refused';
}
