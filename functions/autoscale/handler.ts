/** Lambda `autoscale-pools`: runs on `rate(1 minute)`; see run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { autoscalePools } from './run.ts';
import { lazy } from '../lib/wiring.ts';
import type { AutoscaleWiring } from './wiring.ts';

export function createAutoscaleHandler(getDeps: () => AutoscaleWiring | Promise<AutoscaleWiring>) {
  return scheduleHandler({
    name: 'autoscale-pools',
    logger: async () => (await getDeps()).logger,
    async handle({ logger, context }) {
      const d = await getDeps();
      if (Object.keys(d.policy.pools).length === 0) {
        logger.info('autoscale-pools: the policy names no node pool (AUTOSCALE_POLICY_FILE): nothing to do');
        return { managedPools: 0 };
      }
      const out = await autoscalePools({ ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
      return { managedPools: Object.keys(d.policy.pools).length, ...out };
    },
  });
}

// The wiring (config files, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createAutoscaleHandler(
  lazy(async () => (await import('./wiring.ts')).wireAutoscale('autoscale-pools')),
);
