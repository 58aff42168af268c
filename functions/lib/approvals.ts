/**
 * The approval store, the kernel's (any reflex may hold a plan for a person): one key per approval
 * id in its owner's shard of the state ConfigMap (functions hold nothing between invocations).
 * A held-back remediation records its approval
 * here before its `Approval Requested` is published, so no published id is unknown; a decision
 * or the sweep's expiry moves it out of `open` once, with optimistic concurrency (store.update),
 * and a closed approval never opens again.
 */
import * as z from 'zod';
import type { StateStore } from '../adapters/kube/ports.ts';
import type { Json } from '../adapters/kube/model.ts';
import { updateConverging } from './converge.ts';

export const APPROVAL_STATUSES = ['open', 'approved-applied', 'rejected', 'expired', 'no-longer-needed'] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];

const ApprovalRecordSchema = z.object({
  id: z.string(),
  node: z.string(),
  incident: z.string(),
  action: z.string(),
  scope: z.string(),
  target: z.object({ gpus: z.array(z.string()), pods: z.array(z.string()) }),
  requestedAt: z.string(),
  expiresAt: z.string(),
  /**
   * Who may decide (decidedBy.id); empty: whoever may seal a decision (chat roles, the approval key:
   * lib/approval-seal.ts). Copied from the policy when requested.
   */
  approvers: z.array(z.string()),
  status: z.enum(APPROVAL_STATUSES),
  decidedBy: z.string().optional(),
  decidedAt: z.string().optional(),
  note: z.string().optional(),
  /** A pool scale held for approval (chat's `pool scale`): the node pool and the sizes, typed. */
  scale: z.object({ pool: z.string(), from: z.number().int(), to: z.number().int() }).optional(),
  /** A MIG relayout that preempts, held for approval (rebalance-mig): the GPUs and the pods. */
  mig: z.object({ gpus: z.array(z.number().int()), preempts: z.array(z.string()) }).optional(),
  /** An idle pod's eviction held for approval (idle-gpus, policy evict.approvalMinutes): the pod and its device. */
  idle: z.object({ pod: z.string(), device: z.string() }).optional(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecordSchema>;

/**
 * Remediation's approvals share one shard: few are open at once, and each key is written a handful
 * of times. Another owner (chat's pool scales) keeps its own shard, which remediation's sweep and
 * remediate-approve never read.
 */
export const APPROVALS_SHARD = 'approvals';

/** Plans scheduled functions hold for a person, each in a shard of its own (chat decides them). */
export const MIG_APPROVALS_SHARD = 'mig-approvals';
export const AUTOSCALE_APPROVALS_SHARD = 'autoscale-approvals';
export const IDLE_APPROVALS_SHARD = 'idle-approvals';
const storeOf = (state: StateStore, shard = APPROVALS_SHARD): StateStore => (state.shard ? state.shard(shard) : state);
const keyOf = (id: string) => `approval.${id}`;

function parse(v: Json | undefined): ApprovalRecord | undefined {
  const r = ApprovalRecordSchema.safeParse(v);
  return r.success ? r.data : undefined;
}

/** Records an open approval; one already recorded under that id (a redelivery) is kept as it is. */
export async function recordApproval(state: StateStore, rec: ApprovalRecord, shard?: string): Promise<ApprovalRecord> {
  let kept = rec;
  await updateConverging(storeOf(state, shard), keyOf(rec.id), (cur): Json | undefined => {
    const old = parse(cur);
    if (old) {
      kept = old;
      return cur; // unchanged (undefined would delete the key)
    }
    return rec as unknown as Json;
  });
  return kept;
}

export async function getApproval(state: StateStore, id: string, shard?: string): Promise<ApprovalRecord | undefined> {
  return parse(await storeOf(state, shard).get(keyOf(id)));
}

export async function listApprovals(state: StateStore): Promise<ApprovalRecord[]> {
  return Object.values(await storeOf(state).getAll())
    .flatMap((v) => parse(v) ?? [])
    .sort((a, b) => a.requestedAt.localeCompare(b.requestedAt) || a.id.localeCompare(b.id));
}

/**
 * Closes an open approval. Returns the record as it is afterwards and whether this call closed
 * it: a second decision finds it closed and changes nothing.
 */
export async function closeApproval(
  state: StateStore,
  id: string,
  to: Exclude<ApprovalStatus, 'open'>,
  by: { decidedBy?: string; at: Date; note?: string },
  shard?: string,
): Promise<{ closed: boolean; record?: ApprovalRecord }> {
  let closed = false;
  let record: ApprovalRecord | undefined;
  await updateConverging(storeOf(state, shard), keyOf(id), (cur): Json | undefined => {
    const old = parse(cur);
    record = old;
    if (!old || old.status !== 'open') return cur; // unchanged
    closed = true;
    record = {
      ...old,
      status: to,
      decidedAt: by.at.toISOString(),
      ...(by.decidedBy ? { decidedBy: by.decidedBy } : {}),
      ...(by.note ? { note: by.note.slice(0, 512) } : {}),
    };
    return record as unknown as Json;
  });
  return { closed, ...(record ? { record } : {}) };
}

/**
 * Sets the note of a closed approval: what carrying it out came to, where that is a write of its own after the
 * decision (chat's pool scale: closed, then the cloud asked). An open or unknown approval is left as it is.
 */
export async function noteApproval(state: StateStore, id: string, note: string, shard?: string): Promise<void> {
  await updateConverging(storeOf(state, shard), keyOf(id), (cur): Json | undefined => {
    const old = parse(cur);
    if (!old || old.status === 'open') return cur; // unchanged
    return { ...old, note: note.slice(0, 512) } as unknown as Json;
  });
}
