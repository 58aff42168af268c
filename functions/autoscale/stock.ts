import type { NodePool } from '../adapters/alicloud/ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { AutoscaleDeps, PoolRecord } from './deps.ts';

export const INSTANCE_TYPE_LABEL = 'node.kubernetes.io/instance-type';

/**
 * How long a pool whose every instance type ECS answered sold out is passed over: cluster-autoscaler's
 * initial node-group backoff after a failed scale-up (FAQ, `--initial-node-group-backoff-duration`,
 * 5 min). Its newest node says which types were sold out for as long as CA's longest backoff (30 min).
 */
export const NO_STOCK_BACKOFF_MS = 5 * 60_000;
export const SOLD_OUT_MEMORY_MS = 30 * 60_000;

/** ECS's stock-out codes: `OperationDenied.NoStock` (RunInstances error codes) and its zone variants. */
export const isNoStock = (code: string | undefined) => code !== undefined && /NoStock|NotEnoughResource/.test(code);

/**
 * The instance type a pool's next node will be, and why none when the pool is sold out. The
 * scaling group tries its types in their order and falls back to the next when one is sold out
 * (Auto Scaling scaling configuration `InstanceTypes`: priority by order), so a new node is the
 * first type not known sold out: not in a NoStock answer still in its backoff, and not before the
 * type of the pool's newest node made in the last 30 min (the group passed over those then).
 */
export function typeToBuy(
  pool: NodePool,
  members: readonly NodeInfo[],
  rec: PoolRecord | undefined,
  now: number,
): { type: string | undefined; soldOut?: string } {
  // (the first type when every one is sold out, with why)
  const banned = new Set(rec?.noStock && rec.noStock.until > now ? rec.noStock.types : []);
  const newest = members
    .filter((n) => n.createdAt !== undefined && now - Date.parse(n.createdAt) < SOLD_OUT_MEMORY_MS)
    .sort((a, b) => Date.parse(b.createdAt!) - Date.parse(a.createdAt!))[0];
  const at = newest ? pool.instanceTypes.indexOf(newest.labels[INSTANCE_TYPE_LABEL] ?? '') : -1;
  pool.instanceTypes.slice(0, Math.max(0, at)).forEach((t) => banned.add(t));
  const type = pool.instanceTypes.find((t) => !banned.has(t));
  if (type !== undefined || pool.instanceTypes.length === 0) return { type };
  const until = rec?.noStock ? new Date(rec.noStock.until).toISOString().slice(11, 16) : '';
  // Sold out through and through: the pool is frozen, its first type still its template (for scale-in).
  return {
    type: pool.instanceTypes[0],
    soldOut: `every instance type is sold out (OperationDenied.NoStock)${until ? ` until ${until}` : ''}`,
  };
}

/**
 * What a node of the pool costs per hour. A spot pool (`spot_strategy` `SpotAsPriceGo` or
 * `SpotWithPriceLimit`) pays the market price, from DescribeSpotPriceHistory's newest entry; with a
 * price limit, at most the limit (ECS preemptible instances: the bid caps what is paid; ACK
 * `spot_price_limit`). No spot price known: the pool's limit, else the pay-as-you-go price; none of them: unknown.
 */
export async function priceOf(
  deps: AutoscaleDeps,
  pool: NodePool,
  type: string,
  payAsYouGo: number | undefined,
  cache: Map<string, number | undefined>,
): Promise<number | undefined> {
  const strategy = pool.spotStrategy ?? 'NoSpot';
  if (strategy !== 'SpotAsPriceGo' && strategy !== 'SpotWithPriceLimit') return payAsYouGo;
  if (!cache.has(type)) cache.set(type, await deps.cloud.spotPrice(type));
  const market = cache.get(type);
  const limit = strategy === 'SpotWithPriceLimit' ? pool.spotPriceLimits?.[type] : undefined;
  if (market === undefined) return limit ?? payAsYouGo;
  return limit === undefined ? market : Math.min(market, limit);
}
