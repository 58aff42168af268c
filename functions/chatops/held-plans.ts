import {
  AUTOSCALE_APPROVALS_SHARD,
  closeApproval,
  getApproval,
  IDLE_APPROVALS_SHARD,
  MIG_APPROVALS_SHARD,
} from '../lib/approvals.ts';
import type { CommandPorts } from './command-ports.ts';

/**
 * `approve`/`deny` of a plan a scheduled function holds for a person — a preempting MIG relayout
 * (rebalance-mig) or a costly scale-out (autoscale-pools): closed once here; that function's next
 * round carries an approved one out while its plan is still the same. `decided` is true only for
 * the click that closed it. Undefined: no such held plan.
 */
export async function decideHeldPlan(
  p: CommandPorts,
  id: string,
  decision: 'approved' | 'rejected',
  by: string,
): Promise<{ answer: string; decided: boolean } | undefined> {
  const mig = await getApproval(p.kube.state, id, MIG_APPROVALS_SHARD);
  const pool = mig?.mig ? undefined : await getApproval(p.kube.state, id, AUTOSCALE_APPROVALS_SHARD);
  // An idle pod's eviction (idle-gpus, evict.approvalMinutes): carried out at its next window.
  const idle = mig?.mig || pool?.scale ? undefined : await getApproval(p.kube.state, id, IDLE_APPROVALS_SHARD);
  const shard = mig?.mig ? MIG_APPROVALS_SHARD : pool?.scale ? AUTOSCALE_APPROVALS_SHARD : IDLE_APPROVALS_SHARD;
  const rec = mig?.mig ? mig : pool?.scale ? pool : idle?.idle ? idle : undefined;
  if (!rec) return undefined;
  const what = rec.idle
    ? {
        yes: `idle-gpus evicts ${rec.idle.pod} (idle on ${rec.node}) at its next window, if still idle`,
        no: `${rec.idle.pod} keeps its GPU; not asked again for this idle run`,
        late: `${rec.idle.pod} is not evicted`,
      }
    : rec.mig
      ? {
          yes:
            `rebalance-mig preempts ${rec.mig.preempts.join(', ')} and relays ${rec.node} ` +
            `GPU${rec.mig.gpus.length === 1 ? '' : 's'} ${rec.mig.gpus.join(', ')} at its next round`,
          no:
            `${rec.mig.preempts.join(', ')} keep ${rec.node} ` +
            `GPU${rec.mig.gpus.length === 1 ? '' : 's'} ${rec.mig.gpus.join(', ')}; not asked again while ` +
            `they hold them`,
          late: `${rec.mig.preempts.join(', ')} keep their GPUs`,
        }
      : {
          yes:
            `autoscale-pools grows ${rec.scale!.pool} ${rec.scale!.from} → ${rec.scale!.to} at its next round, if ` +
            `its plan is still that`,
          no: `${rec.scale!.pool} is not grown to ${rec.scale!.to}; that plan is not asked about again`,
          late: `${rec.scale!.pool} is not grown to ${rec.scale!.to}`,
        };
  const now = new Date(p.clock.now());
  if (rec.status !== 'open')
    return {
      answer: `${id} is already ${rec.status}${rec.decidedBy ? ` by ${rec.decidedBy}` : ''}: nothing more done`,
      decided: false,
    };
  if (now.getTime() >= Date.parse(rec.expiresAt)) {
    await closeApproval(p.kube.state, id, 'expired', { at: now, note: 'expired undecided' }, shard);
    return { answer: `${id} expired at ${rec.expiresAt}: too late, nothing done (${what.late})`, decided: false };
  }
  const closed = await closeApproval(
    p.kube.state,
    id,
    decision === 'approved' ? 'approved-applied' : 'rejected',
    { decidedBy: by, at: now },
    shard,
  );
  if (!closed.closed)
    return { answer: `${id} is already ${closed.record?.status ?? 'gone'}: nothing more done`, decided: false };
  return {
    answer: decision === 'approved' ? `approved ${id}: ${what.yes}` : `rejected ${id}: ${what.no}`,
    decided: true,
  };
}
