import { afterEach, describe, expect, it } from 'vitest';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { VirtualClock } from '../../events/clock.ts';
import { AliCloudPools } from '../adapters/alicloud/client.ts';
import type { NodePool } from '../adapters/alicloud/ports.ts';
import { manualClock } from '../adapters/clock.ts';
import { costReport, type CostNode, type CostPod } from './core/cost.ts';
import { IdlePolicySchema } from './core/policy.ts';
import { livePrices, type PriceSource } from './live-prices.ts';
import { readCost } from './read-cost.ts';

const node = (name: string, type: string, pool: string, gpus?: number): CostNode => ({
  name,
  labels: {
    'node.kubernetes.io/instance-type': type,
    'alibabacloud.com/nodepool-id': pool,
    ...(gpus !== undefined ? { 'nvidia.com/gpu.count': String(gpus) } : {}),
  },
  annotations: {},
});

function source(pools: Partial<NodePool>[], hourly: Record<string, number>, spot: Record<string, number>) {
  const calls: string[] = [];
  const s: PriceSource = {
    listNodePools: async () => pools as NodePool[],
    hourlyPrice: async (t) => (calls.push(`hourly ${t}`), hourly[t] ?? 0),
    spotPrice: async (t) => (calls.push(`spot ${t}`), spot[t]),
  };
  return { s, calls };
}

describe('live prices for nodes the policy leaves unpriced', () => {
  it('pay-as-you-go or spot by the pool, per GPU; the policy’s own price wins; each price asked once', async () => {
    const { s, calls } = source(
      [
        { id: 'np-od', spotStrategy: 'NoSpot' },
        { id: 'np-spot', spotStrategy: 'SpotAsPriceGo' },
      ],
      { 'ecs.gn7e-c16g1.16xlarge': 160 },
      { 'ecs.gn7e-c16g1.16xlarge': 48 },
    );
    const nodes = [
      node('a-0', 'ecs.gn7e-c16g1.16xlarge', 'np-od', 8),
      node('a-1', 'ecs.gn7e-c16g1.16xlarge', 'np-od', 8),
      node('s-0', 'ecs.gn7e-c16g1.16xlarge', 'np-spot', 8),
      node('t-0', 'ecs.gn6i-c4g1.xlarge', 'np-od', 1),
    ];
    const policy = IdlePolicySchema.parse({ prices: { 'ecs.gn6i-c4g1.xlarge': 7 } });
    const live = await livePrices(nodes, policy, s);
    expect(Object.fromEntries(live.byNode)).toEqual({ 'a-0': 20, 'a-1': 20, 's-0': 6 });
    expect(calls.sort()).toEqual(['hourly ecs.gn7e-c16g1.16xlarge', 'spot ecs.gn7e-c16g1.16xlarge']);
    // In the report: a pod on the spot node costs the spot price, one on the T4 the policy's.
    const pod = (name: string, nodeName: string): CostPod => ({
      namespace: 'ml',
      name,
      nodeName,
      phase: 'Running',
      labels: {},
      extendedResources: { 'nvidia.com/gpu': 1 },
    });
    const rep = costReport(nodes, [pod('x', 's-0'), pod('y', 't-0')], policy, 0, 3_600_000, live.byNode);
    expect(rep.rows[0]).toMatchObject({ gpuHours: 2, cost: 13 });
  });

  it('says what it cannot price rather than guess: no GPU count, no price from the cloud', async () => {
    const { s } = source([{ id: 'np-od', spotStrategy: 'NoSpot' }], {}, {});
    const live = await livePrices(
      [node('a-0', 'ecs.gn7e-c16g1.16xlarge', 'np-od'), node('b-0', 'ecs.unknown', 'np-od', 1)],
      IdlePolicySchema.parse({}),
      s,
    );
    expect(live.byNode.size).toBe(0);
    expect(live.notes).toEqual([
      'a-0: no nvidia.com/gpu.count label: its ecs.gn7e-c16g1.16xlarge price cannot be split per GPU',
      'b-0: Alibaba Cloud gives no price for ecs.unknown',
    ]);
  });
});

describe('live prices where the node’s pool does not say how it is paid', () => {
  it('leaves unpriced, and says so, a node of no listed pool, or of a subscription (PrePaid) one', async () => {
    // A node of a pool the listing does not name may be a spot one, and a subscription (PrePaid) node is not paid
    // the pay-as-you-go list price: either priced at DescribePrice's pay-as-you-go TradePrice is a wrong sum.
    const { s } = source(
      [
        { id: 'np-od', spotStrategy: 'NoSpot' },
        { id: 'np-sub', spotStrategy: 'NoSpot', chargeType: 'PrePaid' },
      ],
      { 'ecs.gn7i-c8g1.2xlarge': 18 },
      {},
    );
    const bare = node('n-0', 'ecs.gn7i-c8g1.2xlarge', '', 1);
    delete (bare.labels as Record<string, string>)['alibabacloud.com/nodepool-id'];
    const live = await livePrices(
      [
        node('a-0', 'ecs.gn7i-c8g1.2xlarge', 'np-od', 1),
        node('g-0', 'ecs.gn7i-c8g1.2xlarge', 'np-gone', 1),
        bare,
        node('s-0', 'ecs.gn7i-c8g1.2xlarge', 'np-sub', 1),
      ],
      IdlePolicySchema.parse({}),
      s,
    );
    expect(Object.fromEntries(live.byNode)).toEqual({ 'a-0': 18 });
    expect(live.notes).toEqual([
      'g-0: its node pool np-gone is not among the cluster’s node pools: whether it is spot is unknown',
      'n-0: no alibabacloud.com/nodepool-id label: whether it is spot is unknown',
      's-0: its node pool np-sub is a subscription (PrePaid): it is not paid the pay-as-you-go price',
    ]);
  });
});

describe('live prices through Alibaba’s SDK against the cloud simulator', () => {
  let sim: AliCloudSim | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  it('DescribePrice’s TradePrice per GPU for a pay-as-you-go pool, the spot history’s newest for a spot one', async () => {
    sim = await startAliCloudSim({
      cloud: {
        pools: [
          { id: 'np-a10', name: 'a10', instanceTypes: ['ecs.gn7i-c8g1.2xlarge'] },
          { id: 'np-spot', name: 'spot', instanceTypes: ['ecs.gn7i-c8g1.2xlarge'], spotStrategy: 'SpotAsPriceGo' },
        ],
        spotPrices: { 'ecs.gn7i-c8g1.2xlarge': 5.4 },
      } as never,
      clock: new VirtualClock(),
    });
    const c = sim.connection;
    const cloud = new AliCloudPools(
      {
        regionId: c.regionId,
        clusterId: c.clusterId,
        accessKeyId: c.accessKeyId,
        accessKeySecret: c.accessKeySecret,
        endpoint: c.endpoint,
        protocol: 'http',
      },
      manualClock(),
    );
    const live = await livePrices(
      [node('a10-0', 'ecs.gn7i-c8g1.2xlarge', 'np-a10', 1), node('spot-0', 'ecs.gn7i-c8g1.2xlarge', 'np-spot', 1)],
      IdlePolicySchema.parse({}),
      cloud,
    );
    // The simulator's catalog: 18 CNY an hour pay-as-you-go, the scenario's 5.4 spot.
    expect(Object.fromEntries(live.byNode)).toEqual({ 'a10-0': 18, 'spot-0': 5.4 });
  });
});

describe('readCost with live prices (what cost report --live-prices runs)', () => {
  it('prices the unpriced nodes from the cloud and says what it could not', async () => {
    const { s } = source([{ id: 'np-od' }], { 'ecs.gn7i-c8g1.2xlarge': 18 }, {});
    const nodes = [node('a10-0', 'ecs.gn7i-c8g1.2xlarge', 'np-od', 1), node('x-0', 'ecs.gn7i-c8g1.2xlarge', 'np-od')];
    const pods: CostPod[] = ['a10-0', 'x-0'].map((n) => ({
      namespace: 'ml',
      name: `p-${n}`,
      nodeName: n,
      phase: 'Running',
      labels: {},
      extendedResources: { 'nvidia.com/gpu': 1 },
    }));
    const notes: string[] = [];
    const rep = await readCost(
      { nodes: { list: async () => nodes as never }, pods: { list: async () => pods as never } },
      IdlePolicySchema.parse({}),
      3_600_000,
      3_600_000,
      { cloud: s, note: (w) => notes.push(w) },
    );
    expect(rep.rows[0]).toMatchObject({ gpuHours: 2, unpricedGpuHours: 1 });
    expect(notes).toEqual([
      'x-0: no nvidia.com/gpu.count label: its ecs.gn7i-c8g1.2xlarge price cannot be split per GPU',
    ]);
  });
});
