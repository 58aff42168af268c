/**
 * Lambda `remediate`: GPU XID Error and GPU Health Changed events → quarantine, drain, repair.
 * Thin: the middy wrapper parses the event, `remediate` (run.ts) does the rest.
 */
import { randomUUID } from 'node:crypto';
import { GPU_HEALTH_CHANGED, GPU_XID_ERROR } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { remediate, triggerOf } from './run.ts';

export function createRemediateHandler(getDeps: () => FunctionDeps) {
  return eventHandler({
    name: 'remediate',
    detailTypes: [GPU_XID_ERROR, GPU_HEALTH_CHANGED],
    logger: () => getDeps().logger,
    async handle(event, { context }) {
      const d = getDeps();
      const out = await remediate(triggerOf(event.detailType, event.detail), {
        ...d.kube,
        publisher: d.publisher,
        notifier: d.notifier,
        policy: d.policy,
        clock: d.clock,
        logger: d.logger,
        holder: context?.awsRequestId ?? randomUUID(),
      });
      return { kind: out.plan.kind, action: out.plan.action, phase: out.plan.phase, reason: out.plan.reason };
    },
  });
}

export const handler = createRemediateHandler(lazy(() => wireFromEnv('remediate')));
