/** Lambda `rebalance-mig`: runs on `rate(1 minute)`; see run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { rebalanceMig } from './run.ts';
import { lazyMigWiring, type MigWiring } from './wiring.ts';

export function createMigHandler(getDeps: () => MigWiring) {
  return scheduleHandler({
    name: 'rebalance-mig',
    logger: () => getDeps().logger,
    async handle({ logger, context }) {
      const d = getDeps();
      const out = await rebalanceMig({ ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
      return { migNodes: out.nodes, pending: out.pending, satisfiedAfter: out.satisfiedAfter, steps: out.steps, underWay: out.underWay, failed: out.failed };
    },
  });
}

export const handler = createMigHandler(lazyMigWiring('rebalance-mig'));
