/**
 * Lambda `remediate-gpu-action`: a `GPU Action Result` from a node's agent (a fence, reset or probe
 * done or failed) moves that node's repair on at once — the sweep's own step for one node — instead
 * of at the next minute. The answer itself is read from the Node (gpu-reflex.io/gpu-action-results),
 * as the scheduled sweep reads it: the event only says when to look, so a lost event costs a minute,
 * never a repair.
 */
import { randomUUID } from 'node:crypto';
import { gpuAnswerHandler } from '../lib/gpu-answer-handler.ts';
import { sweepNode } from './sweep-jobs.ts';
import { lazy } from '../lib/wiring.ts';
import type { RemediationWiring } from './wiring.ts';

export function createGpuActionHandler(getDeps: () => RemediationWiring | Promise<RemediationWiring>) {
  // Remediation's answers only (the kernel's one result path; its rule: events/patterns/gpu-action.json).
  return gpuAnswerHandler({
    name: 'remediate-gpu-action',
    owner: 'remediate',
    logger: async () => (await getDeps()).logger,
    async handle(event, { logger, context }) {
      const d = await getDeps();
      const out = await sweepNode(
        { ...d.kube, ...d, logger, holder: context?.awsRequestId ?? randomUUID() },
        event.detail.node,
      );
      return { node: event.detail.node, acted: out.plans.map((p) => `${p.action} ${p.phase}`), skipped: out.skipped };
    },
  });
}

// The wiring (policy file, YAML, the clients) loads at the first invocation: lib/wiring.ts.
export const handler = createGpuActionHandler(
  lazy(async () => (await import('./wiring.ts')).wireRemediation('remediate-gpu-action')),
);
