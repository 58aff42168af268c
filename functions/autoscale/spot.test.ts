import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { GPU_POOL_SCALED, type GpuPoolScaledDetail } from '../../events/index.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { manualClock } from '../adapters/clock.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { nodePoolFrom } from '../adapters/alicloud/records.ts';
import { autoscalePools, type AutoscaleDeps } from './run.ts';
import { priceOf } from './stock.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

/**
 * Spot pools are priced from DescribeSpotPriceHistory (capped by the pool's spot_price_limit),
 * not as pay-as-you-go, through the real SDK against the simulated region.
 */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
let sim: AliCloudSim;
afterEach(() => sim.close());

async function growOne(pool: object, spotPrices: Record<string, number>): Promise<GpuPoolScaledDetail> {
  const simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      spotPrices,
      pools: [{ id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 0, ...pool }],
    },
  });
  const clock = manualClock(T0, (ms) => simClock.advance(ms));
  const kube = fakeKube({ clock });
  kube.cluster.addPod({
    name: 'infer-0',
    namespace: 'ml',
    phase: 'Pending',
    scheduled: { status: 'False', reason: 'Unschedulable' },
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1, cpu: 2 },
    createdAt: new Date(T0).toISOString(),
  });
  const publisher = new RecordingPublisher();
  const deps = simDeps(
    sim,
    kube,
    clock,
    publisher,
    AutoscalePolicySchema.parse({ pendingSeconds: 0, pools: { 'np-t4': { max: 4 } } }),
  );
  expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 1 });
  return publisher.published.find((e) => e.detailType === GPU_POOL_SCALED)!.detail as GpuPoolScaledDetail;
}

describe('spot pools', () => {
  it.each([
    ['pay-as-you-go (NoSpot), whatever the spot market says', {}, { 'ecs.gn6i-c4g1.xlarge': 2.1 }, 8.5],
    ['SpotAsPriceGo at the market price', { spotStrategy: 'SpotAsPriceGo' }, { 'ecs.gn6i-c4g1.xlarge': 2.1 }, 2.1],
    [
      'SpotWithPriceLimit at most its limit',
      { spotStrategy: 'SpotWithPriceLimit', spotPriceLimit: { 'ecs.gn6i-c4g1.xlarge': 1.5 } },
      { 'ecs.gn6i-c4g1.xlarge': 2.1 },
      1.5,
    ],
    ['a spot pool with no spot price known at pay-as-you-go', { spotStrategy: 'SpotAsPriceGo' }, {}, 8.5],
  ])('prices a node of a pool %s', async (_, pool, spotPrices, price) => {
    const ev = await growOne(pool, spotPrices);
    expect(ev.hourlyCostDelta).toEqual({ amount: price, currency: 'CNY' });
    const spotCalls = sim.cloud.calls.filter((c) => c.action === 'DescribeSpotPriceHistory').length;
    expect(spotCalls).toBe('spotStrategy' in pool ? 1 : 0);
  });
});

describe('a spot price limit the answer does not give', () => {
  it('is no limit, never a limit of 0: a node priced 0 is the cheapest to buy, and free under any approval limit', async () => {
    // A DescribeClusterNodePools entry whose spot_price_limit names the type without its price_limit.
    const pool = nodePoolFrom({
      nodepool_info: { nodepool_id: 'np-t4', name: 't4' },
      scaling_group: {
        desired_size: 0,
        instance_types: ['ecs.gn6i-c4g1.xlarge'],
        spot_strategy: 'SpotWithPriceLimit',
        spot_price_limit: [{ instance_type: 'ecs.gn6i-c4g1.xlarge' }, { instance_type: 'ecs.x', price_limit: '' }],
      },
    });
    expect(pool.spotPriceLimits?.['ecs.gn6i-c4g1.xlarge']).toBeUndefined();
    expect(pool.spotPriceLimits?.['ecs.x']).toBeUndefined();
    const market = new Map([['ecs.gn6i-c4g1.xlarge', 2.1]]);
    expect(await priceOf({} as AutoscaleDeps, pool, 'ecs.gn6i-c4g1.xlarge', 8.5, market)).toBe(2.1);
  });
});
