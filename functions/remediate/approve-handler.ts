/**
 * Lambda `remediate-approve`: `Approval Decided` events (chat, or `gpu-reflex approve`) → the
 * held-back remediation acted on once, or closed. Thin: see approve.ts.
 */
import { randomUUID } from 'node:crypto';
import { APPROVAL_DECIDED, type ApprovalDecidedDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { decideApproval } from './approve.ts';
import { lazyRemediationWiring, type RemediationWiring } from './wiring.ts';

export function createApproveHandler(getDeps: () => RemediationWiring) {
  return eventHandler<ApprovalDecidedDetail>({
    name: 'remediate-approve',
    detailTypes: [APPROVAL_DECIDED],
    logger: () => getDeps().logger,
    async handle(event, { logger, context }) {
      const d = getDeps();
      return decideApproval(event.detail, { ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
    },
  });
}

export const handler = createApproveHandler(lazyRemediationWiring('remediate-approve'));
