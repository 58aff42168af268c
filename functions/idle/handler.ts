/** Lambda `idle-gpus`: on each `GPU Utilization Summary`, idle allocations are found and acted on; see run.ts. */
import { GPU_UTILIZATION_SUMMARY, type GpuUtilizationSummaryDetail } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { lazy } from '../lib/wiring.ts';
import { watchIdle } from './run.ts';
import type { IdleWiring } from './wiring.ts';

export function createIdleHandler(getDeps: () => IdleWiring | Promise<IdleWiring>) {
  return eventHandler<GpuUtilizationSummaryDetail>({
    name: 'idle-gpus',
    detailTypes: [GPU_UTILIZATION_SUMMARY],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger }) {
      const d = await getDeps();
      const out = await watchIdle({ ...d.kube, ...d, policy: d.idlePolicy, logger }, event.detail);
      return {
        node: out.plan.node,
        findings: out.plan.findings.map((f) => `${f.state}: ${f.reason}`),
        evictions: out.evictions.map((e) => `${e.pod}: ${e.result}`),
        ...(out.plan.skipped ? { skipped: out.plan.skipped } : {}),
      };
    },
  });
}

// The wiring (the policy file, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createIdleHandler(lazy(async () => (await import('./wiring.ts')).wireIdle('idle-gpus')));
