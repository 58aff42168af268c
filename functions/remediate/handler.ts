/**
 * Lambda `remediate`: GPU XID Error and GPU Health Changed events → quarantine, drain, repair; Device Plugin
 * Mismatch → restart the node's device plugin, then taint the node and tell a person (plugin-health.ts).
 * Thin: the event handler variant parses and classifies, `remediate` (run.ts) does the rest.
 */
import { randomUUID } from 'node:crypto';
import {
  DEVICE_PLUGIN_MISMATCH,
  GPU_HEALTH_CHANGED,
  GPU_XID_ERROR,
  type DevicePluginMismatchDetail,
} from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { remediate, triggerOf } from './run.ts';
import { remediatePlugin } from './plugin-health.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

export function createRemediateHandler(getDeps: () => RemediationWiring | Promise<RemediationWiring>) {
  return eventHandler({
    name: 'remediate',
    detailTypes: [GPU_XID_ERROR, GPU_HEALTH_CHANGED, DEVICE_PLUGIN_MISMATCH],
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger, context }) {
      const d = await getDeps();
      const deps = { ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() };
      // A dead or misconfigured device plugin (core/plugin-health.ts): its own small plan, under the same lease.
      if (event.detailType === DEVICE_PLUGIN_MISMATCH) {
        const p = await remediatePlugin(event.detail as DevicePluginMismatchDetail, deps);
        return { kind: 'device-plugin', step: p.step, reason: p.reason };
      }
      const out = await remediate(triggerOf(event.detailType, event.detail), deps);
      return {
        kind: out.plan.kind,
        action: out.plan.action,
        phase: out.plan.phase,
        reason: out.plan.reason,
        ...(out.plan.escalation ? { escalation: out.plan.escalation } : {}),
      };
    },
  });
}

// The wiring (policy file, YAML, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createRemediateHandler(
  lazy(async () => (await import('./wiring.ts')).wireRemediation('remediate')),
);
