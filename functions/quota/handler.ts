/** Lambda `rewrite-quotas`: on a schedule and on capacity-changing events; see run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { rewriteQuotas } from './run.ts';
import { lazy } from '../lib/wiring.ts';
import type { QuotaWiring } from './wiring.ts';

export function createQuotaHandler(getDeps: () => QuotaWiring | Promise<QuotaWiring>) {
  return scheduleHandler({
    name: 'rewrite-quotas',
    // Every run reads every team's use and capacity: a storm's Remediation events need one run, not one each.
    coalesce: true,
    logger: async () => (await getDeps()).logger,
    async handle({ logger, context }) {
      const d = await getDeps();
      if (!d.quotaConfig) {
        logger.info('rewrite-quotas: no QUOTA_CONFIG_FILE: no team is managed, nothing to do');
        return { teams: 0 };
      }
      const out = await rewriteQuotas({
        ...d.kube,
        ...d,
        config: d.quotaConfig,
        logger,
        holder: context?.awsRequestId ?? randomUUID(),
      });
      return { teams: d.quotaConfig.teams.length, changed: out.changed, held: out.held, warnings: out.plan.warnings };
    },
  });
}

// The wiring (config files, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createQuotaHandler(lazy(async () => (await import('./wiring.ts')).wireQuota('rewrite-quotas')));
