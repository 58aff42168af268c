/**
 * Lambda `remediate-approve`: `Approval Decided` events (chat, or `gpu-reflex approve`) → the
 * held-back remediation acted on once, or closed. Thin: see approve.ts.
 */
import { randomUUID } from 'node:crypto';
import { APPROVAL_DECIDED, type ApprovalDecidedDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { approvalKeyFromEnv, type ApprovalKey } from '../lib/approval-seal.ts';
import { decideApproval } from './approve.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

/** remediate-approve's wiring: remediation's, and the approval key that proves a decision (lib/approval-seal.ts). */
export type ApproveWiring = RemediationWiring & { approvalKey?: ApprovalKey };

export function createApproveHandler(getDeps: () => ApproveWiring | Promise<ApproveWiring>) {
  return eventHandler<ApprovalDecidedDetail>({
    name: 'remediate-approve',
    detailTypes: [APPROVAL_DECIDED],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger, context }) {
      const d = await getDeps();
      return decideApproval(
        event.detail,
        { ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() },
        d.approvalKey,
      );
    },
  });
}

// The wiring (policy file, YAML, the clients, the approval key) loads at the first invocation: lib/wiring.ts.
export const handler = createApproveHandler(
  lazy(async (): Promise<ApproveWiring> => {
    const [wired, approvalKey] = await Promise.all([
      (await import('./wiring.ts')).wireRemediation('remediate-approve'),
      approvalKeyFromEnv(),
    ]);
    return { ...wired, ...(approvalKey ? { approvalKey } : {}) };
  }),
);
