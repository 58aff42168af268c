/** Lambda `remediate-sweep`: runs on `rate(1 minute)`; see sweep-run.ts. */
import { randomUUID } from 'node:crypto';
import middy from '@middy/core';
import { classify } from '../lib/handler.ts';
import { lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { sweep } from './sweep-run.ts';

export function createSweepHandler(getDeps: () => FunctionDeps) {
  return middy<unknown, unknown>().handler(async (_event, context) => {
    const d = getDeps();
    const logger = d.logger.child({ function: 'remediate-sweep', requestId: context?.awsRequestId });
    try {
      const out = await sweep({
        ...d.kube, publisher: d.publisher, notifier: d.notifier, policy: d.policy, clock: d.clock, logger,
        holder: context?.awsRequestId ?? randomUUID(),
      });
      return { status: 'done', result: { nodes: out.nodes, acted: out.plans.length, skipped: out.skipped } };
    } catch (err) {
      return classify(err, logger);
    }
  });
}

export const handler = createSweepHandler(lazy(() => wireFromEnv('remediate-sweep')));
