/**
 * The cost report read from the cluster (core/cost.ts over the nodes and pods listed now), optionally
 * priced live where the policy is silent (live-prices.ts). Shared by `gpu-reflex cost report` and the
 * weekly report (weekly-run.ts); the cloud client is the caller's to give, so idle-gpus loads none.
 */
import type { NodeOps, PodOps } from '../adapters/kube/ports.ts';
import { costReport, type CostReport } from './core/cost.ts';
import type { IdlePolicy } from './core/policy.ts';
import { livePrices, type PriceSource } from './live-prices.ts';

export async function readCost(
  ports: { nodes: Pick<NodeOps, 'list'>; pods: Pick<PodOps, 'list'> },
  policy: IdlePolicy,
  sinceMs: number,
  nowMs: number,
  /** Live prices for what the policy leaves unpriced (live-prices.ts); what cannot be priced goes to `note`. */
  live?: { cloud: PriceSource; note: (words: string) => void },
): Promise<CostReport> {
  const [nodes, pods] = await Promise.all([ports.nodes.list(), ports.pods.list()]);
  const prices = live ? await livePrices(nodes, policy, live.cloud) : undefined;
  for (const n of prices?.notes ?? []) live!.note(n);
  return costReport(nodes, pods, policy, nowMs - sinceMs, nowMs, prices?.byNode);
}
