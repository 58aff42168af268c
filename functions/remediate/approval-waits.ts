/** Whether a remediation approval still has something to decide (lib/approvals.ts is the store). */
import type { ApprovalRecord } from '../lib/approvals.ts';
import { approvalIdFor } from './core/detail.ts';
import type { NodeState } from './core/state.ts';

/** The approval's incident episode still waits on its node (a later episode of the same key asks under a new id). */
export function stillWaits(state: NodeState, rec: Pick<ApprovalRecord, 'id' | 'incident'>): boolean {
  return state.incidents.some(
    (i) => i.key === rec.incident && i.phase === 'awaiting-approval' && approvalIdFor(i.key, i.firstAt) === rec.id,
  );
}
