/** Lambda `rebalance-mig`: runs on `rate(1 minute)`; see run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { rebalanceMig } from './run.ts';
import { lazy } from '../lib/wiring.ts';
import type { MigWiring } from './wiring.ts';

export function createMigHandler(getDeps: () => MigWiring | Promise<MigWiring>) {
  return scheduleHandler({
    name: 'rebalance-mig',
    logger: async () => (await getDeps()).logger,
    async handle({ logger, context }) {
      const d = await getDeps();
      const out = await rebalanceMig({ ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
      return {
        migNodes: out.nodes,
        pending: out.pending,
        satisfiedAfter: out.satisfiedAfter,
        steps: out.steps,
        underWay: out.underWay,
        failed: out.failed,
      };
    },
  });
}

// The wiring (config files, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createMigHandler(lazy(async () => (await import('./wiring.ts')).wireMig('rebalance-mig')));
