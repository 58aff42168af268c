/** Lambda `remediate-sweep`: runs on `rate(1 minute)`; see sweep-run.ts. */
import { randomUUID } from 'node:crypto';
import { scheduleHandler } from '../lib/handler.ts';
import { sweepRound } from './sweep-jobs.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

export function createSweepHandler(getDeps: () => RemediationWiring | Promise<RemediationWiring>) {
  return scheduleHandler({
    name: 'remediate-sweep',
    logger: async () => (await getDeps()).logger,
    async handle({ logger, context }) {
      const d = await getDeps();
      const out = await sweepRound({ ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() });
      return { nodes: out.nodes, acted: out.plans.length, skipped: out.skipped, expired: out.expired };
    },
  });
}

// The wiring (policy file, YAML, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createSweepHandler(
  lazy(async () => (await import('./wiring.ts')).wireRemediation('remediate-sweep')),
);
