/**
 * Lambda `remediate`: GPU XID Error and GPU Health Changed events → quarantine, drain, repair.
 * Thin: the event handler variant parses and classifies, `remediate` (run.ts) does the rest.
 */
import { randomUUID } from 'node:crypto';
import { GPU_HEALTH_CHANGED, GPU_XID_ERROR } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { remediate, triggerOf } from './run.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

export function createRemediateHandler(getDeps: () => RemediationWiring | Promise<RemediationWiring>) {
  return eventHandler({
    name: 'remediate',
    detailTypes: [GPU_XID_ERROR, GPU_HEALTH_CHANGED],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger, context }) {
      const d = await getDeps();
      const out = await remediate(triggerOf(event.detailType, event.detail), {
        ...d.kube,
        ...d,
        logger,
        holder: context?.awsRequestId ?? randomUUID(),
      });
      return {
        kind: out.plan.kind,
        action: out.plan.action,
        phase: out.plan.phase,
        reason: out.plan.reason,
        ...(out.plan.escalation ? { escalation: out.plan.escalation } : {}),
      };
    },
  });
}

// The wiring (policy file, YAML, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createRemediateHandler(
  lazy(async () => (await import('./wiring.ts')).wireRemediation('remediate')),
);
