/**
 * Lambda `remediate-approve`: `Approval Decided` events (chat, or `gpu-reflex approve`) → the
 * held-back remediation acted on once, or closed. Thin: see approve.ts.
 */
import { randomUUID } from 'node:crypto';
import { APPROVAL_DECIDED, type ApprovalDecidedDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { decideApproval } from './approve.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

export function createApproveHandler(getDeps: () => RemediationWiring | Promise<RemediationWiring>) {
  return eventHandler<ApprovalDecidedDetail>({
    name: 'remediate-approve',
    detailTypes: [APPROVAL_DECIDED],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger, context }) {
      const d = await getDeps();
      return decideApproval(event.detail, { ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
    },
  });
}

// The wiring (policy file, YAML, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createApproveHandler(lazy(async () => (await import('./wiring.ts')).wireRemediation('remediate-approve')));
