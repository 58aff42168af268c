/**
 * Live prices for the cost report (issue #33): what Alibaba Cloud charges now, per GPU-hour, for each node
 * the idle policy leaves unpriced. The policy's `prices` win (a contract's discount is not what the list
 * says); a node of a spot pool (its scaling group's `spot_strategy` is SpotWithPriceLimit or SpotAsPriceGo)
 * is priced at the newest DescribeSpotPriceHistory `SpotPrice`, any other at DescribePrice's `TradePrice`
 * (pay-as-you-go, per hour; ECS API reference). Both are per instance: divided by the node's GPUs
 * (`nvidia.com/gpu.count`, GPU Feature Discovery). A node with no known GPU count, or a type the cloud
 * prices at nothing, stays unpriced and is said so: a wrong sum is worse than none. So does a node whose pool
 * is unknown (no pool label, or a pool DescribeClusterNodePools does not list: it may be a spot one), or a
 * subscription pool's (`scaling_group.instance_charge_type` PrePaid, ACK API reference): it is not paid the
 * pay-as-you-go list price.
 */
import type { CloudPools } from '../adapters/alicloud/ports.ts';
import { INSTANCE_TYPE_LABEL } from './core/planner.ts';
import type { CostNode } from './core/cost.ts';
import type { IdlePolicy } from './core/policy.ts';

export type PriceSource = Pick<CloudPools, 'listNodePools' | 'hourlyPrice' | 'spotPrice'>;

const POOL_LABEL = 'alibabacloud.com/nodepool-id';
const SPOT = new Set(['SpotWithPriceLimit', 'SpotAsPriceGo']);

export interface LivePrices {
  /** Per GPU-hour, by node name. */
  byNode: Map<string, number>;
  /** What could not be priced, in words. */
  notes: string[];
}

export async function livePrices(
  nodes: readonly CostNode[],
  policy: IdlePolicy,
  cloud: PriceSource,
): Promise<LivePrices> {
  const out: LivePrices = { byNode: new Map(), notes: [] };
  const unpriced = nodes.filter((n) => {
    const type = n.labels[INSTANCE_TYPE_LABEL];
    return type !== undefined && policy.prices[type] === undefined;
  });
  if (unpriced.length === 0) return out;
  const pools = new Map((await cloud.listNodePools()).map((p) => [p.id, p]));
  const cache = new Map<string, Promise<number | undefined>>();
  const priceOf = (type: string, spot: boolean) => {
    const key = `${spot ? 'spot' : 'on-demand'}/${type}`;
    let p = cache.get(key);
    if (!p) cache.set(key, (p = spot ? cloud.spotPrice(type) : cloud.hourlyPrice(type)));
    return p;
  };
  for (const n of unpriced) {
    const type = n.labels[INSTANCE_TYPE_LABEL]!;
    const gpus = Number(n.labels['nvidia.com/gpu.count']);
    if (!(gpus > 0)) {
      out.notes.push(`${n.name}: no nvidia.com/gpu.count label: its ${type} price cannot be split per GPU`);
      continue;
    }
    const poolId = n.labels[POOL_LABEL];
    const pool = poolId !== undefined ? pools.get(poolId) : undefined;
    if (!pool) {
      out.notes.push(
        poolId === undefined
          ? `${n.name}: no ${POOL_LABEL} label: whether it is spot is unknown`
          : `${n.name}: its node pool ${poolId} is not among the cluster’s node pools: whether it is spot is unknown`,
      );
      continue;
    }
    if (pool.chargeType === 'PrePaid') {
      out.notes.push(
        `${n.name}: its node pool ${poolId} is a subscription (PrePaid): it is not paid the pay-as-you-go price`,
      );
      continue;
    }
    const spot = SPOT.has(pool.spotStrategy ?? '');
    const perInstance = await priceOf(type, spot);
    if (perInstance === undefined || !(perInstance > 0)) {
      out.notes.push(`${n.name}: Alibaba Cloud gives no ${spot ? 'spot ' : ''}price for ${type}`);
      continue;
    }
    out.byNode.set(n.name, perInstance / gpus);
  }
  return out;
}
