/**
 * Lambda `idle-gpus`: on each `GPU Utilization Summary`, idle allocations are found and acted on (run.ts);
 * on its hourly schedule, the weekly cost report goes out when due (weekly-run.ts, opt-in).
 */
import { GPU_UTILIZATION_SUMMARY, type GpuUtilizationSummaryDetail } from '../../events/index.ts';
import { eventHandler, scheduleHandler } from '../lib/handler.ts';
import { lazy } from '../lib/wiring.ts';
import { watchIdle } from './run.ts';
import { sendWeeklyReport } from './weekly-run.ts';
import type { IdleWiring } from './wiring.ts';

export function createIdleHandler(getDeps: () => IdleWiring | Promise<IdleWiring>) {
  const logger = async () => (await getDeps()).logger;
  const onSummary = eventHandler<GpuUtilizationSummaryDetail>({
    name: 'idle-gpus',
    detailTypes: [GPU_UTILIZATION_SUMMARY],
    logger,
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
  const onTick = scheduleHandler({
    name: 'idle-gpus',
    logger,
    async handle({ logger }) {
      const d = await getDeps();
      return sendWeeklyReport({ ...d.kube, ...d, policy: d.idlePolicy, logger });
    },
  });
  // The schedule's `Scheduled Event` (source aws.events) is the hourly tick; anything else is a summary.
  return (event: unknown, context: Parameters<typeof onTick>[1]) =>
    (event as { 'detail-type'?: unknown } | null)?.['detail-type'] === 'Scheduled Event'
      ? onTick(event, context)
      : onSummary(event as Parameters<typeof onSummary>[0], context);
}

// The wiring (the policy file, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createIdleHandler(lazy(async () => (await import('./wiring.ts')).wireIdle('idle-gpus')));
