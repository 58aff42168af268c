/** Lambda `remediate-sweep`: runs on `rate(1 minute)`; see sweep-run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { sweep } from './sweep-run.ts';
import { lazyRemediationWiring, type RemediationWiring } from './wiring.ts';

export function createSweepHandler(getDeps: () => RemediationWiring) {
  return scheduleHandler({
    name: 'remediate-sweep',
    logger: () => getDeps().logger,
    async handle({ logger, context }) {
      const d = getDeps();
      const out = await sweep({ ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
      return { nodes: out.nodes, acted: out.plans.length, skipped: out.skipped, expired: out.expired };
    },
  });
}

export const handler = createSweepHandler(lazyRemediationWiring('remediate-sweep'));
