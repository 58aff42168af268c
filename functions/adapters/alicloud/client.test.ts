import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../../infra/local/alicloud/index.ts';
import type { CloudFile } from '../../../infra/local/alicloud/cloud-file.ts';
import { manualClock } from '../clock.ts';
import {
  BadInputError,
  ConfigurationError,
  ConflictError,
  ForbiddenError,
  NotFoundError,
  ThrottledError,
} from '../errors.ts';
import { AliCloudPools, aliCloudSettingsFromEnv, mapAliCloudError, type AliCloudSettings } from './client.ts';

const CLOUD: CloudFile = {
  bootSeconds: 120,
  removeSeconds: 30,
  pools: [
    {
      id: 'np-a10',
      name: 'a10',
      instanceTypes: ['ecs.gn7i-c8g1.2xlarge'],
      size: 1,
      labels: { team: 'ml' },
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }],
    },
    {
      id: 'np-a100',
      name: 'a100',
      instanceTypes: ['ecs.gn7e-c16g1.4xlarge'],
      size: 0,
      autoRepair: true,
      autoScaling: { enable: true, min: 0, max: 4 },
    },
  ],
};

let sim: AliCloudSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function setup(cloud: CloudFile = CLOUD, extra: Partial<AliCloudSettings> = {}) {
  const simClock = new VirtualClock();
  sim = await startAliCloudSim({ cloud, clock: simClock });
  const c = sim.connection;
  const clock = manualClock();
  const pools = new AliCloudPools(
    {
      regionId: c.regionId,
      clusterId: c.clusterId,
      accessKeyId: c.accessKeyId,
      accessKeySecret: c.accessKeySecret,
      endpoint: c.endpoint,
      protocol: 'http',
      ...extra,
    },
    clock,
  );
  return { sim, simClock, clock, pools };
}

describe('AliCloudPools against the Alibaba Cloud simulator (real @alicloud/openapi-client, ACS3 signatures)', () => {
  it('reads node pools with their size, instance types, labels, taints and ACK settings', async () => {
    const { pools } = await setup();
    const list = await pools.listNodePools();
    expect(list.map((p) => p.id)).toEqual(['np-a10', 'np-a100']);
    expect(list[0]).toMatchObject({
      name: 'a10',
      state: 'active',
      desiredSize: 1,
      totalNodes: 1,
      instanceTypes: ['ecs.gn7i-c8g1.2xlarge'],
      chargeType: 'PostPaid',
      labels: { team: 'ml' },
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }],
      ackAutoRepair: false,
    });
    expect(list[1]).toMatchObject({ ackAutoRepair: true, ackAutoScaling: { enable: true, min: 0, max: 4 } });
  });

  it('sets the desired size absolutely: a retried call adds nothing, the task ends when the instances run', async () => {
    const { sim, simClock, pools } = await setup();
    const first = await pools.setDesiredSize('np-a10', 3);
    const again = await pools.setDesiredSize('np-a10', 3);
    expect(sim.cloud.members('np-a10')).toHaveLength(3);
    expect(await pools.task(first.taskId)).toMatchObject({ state: 'running' });
    expect((await pools.listNodePools())[0]).toMatchObject({ state: 'scaling', desiredSize: 3 });
    simClock.advance(120_000);
    expect(await pools.task(first.taskId)).toEqual({ id: first.taskId, state: 'success' });
    expect(await pools.task(again.taskId)).toEqual({ id: again.taskId, state: 'success' });
    const running = sim.cloud.members('np-a10').filter((i) => i.status === 'Running');
    expect(running).toHaveLength(3);
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(2);
  });

  it('retries throttling with backoff on its clock, and gives up with a ThrottledError after maxAttempts', async () => {
    const { sim, clock, pools } = await setup();
    sim.cloud.inject({ action: 'DescribeClusterNodePools', throttle: 2 });
    const t0 = clock.now();
    expect(await pools.listNodePools()).toHaveLength(2);
    expect(sim.cloud.calls.filter((c) => c.action === 'DescribeClusterNodePools')).toHaveLength(3);
    expect(clock.now() - t0).toBe(250 + 500);

    sim.cloud.inject({ action: 'DescribePrice', throttle: 10 });
    const err = await pools.hourlyPrice('ecs.gn7i-c8g1.2xlarge').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ThrottledError);
    expect((err as Error).message).toContain(
      'ecs:DescribePrice: Throttling.User: Request was denied due to user flow control.',
    );
    expect(sim.cloud.calls.filter((c) => c.action === 'DescribePrice')).toHaveLength(5);
  });

  it('refuses bad credentials with a ConfigurationError that says what Alibaba answered, without retrying', async () => {
    const { sim } = await setup();
    const c = sim.connection;
    const clock = manualClock();
    const wrongSecret = new AliCloudPools(
      {
        regionId: c.regionId,
        clusterId: c.clusterId,
        accessKeyId: c.accessKeyId,
        accessKeySecret: 'not-the-secret',
        endpoint: c.endpoint,
        protocol: 'http',
      },
      clock,
    );
    const e1 = await wrongSecret.listNodePools().catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(ConfigurationError);
    expect((e1 as Error).message).toMatch(
      /^cs:DescribeClusterNodePools: SignatureDoesNotMatch: Specified signature does not match/,
    );
    const unknownKey = new AliCloudPools(
      {
        regionId: c.regionId,
        clusterId: c.clusterId,
        accessKeyId: 'LTAInobody',
        accessKeySecret: 'x',
        endpoint: c.endpoint,
        protocol: 'http',
      },
      clock,
    );
    const e2 = await unknownKey.hourlyPrice('ecs.gn7i-c8g1.2xlarge').catch((e: unknown) => e);
    expect(e2).toBeInstanceOf(ConfigurationError);
    expect((e2 as Error).message).toContain('InvalidAccessKeyId.NotFound: Specified access key is not found.');
    expect(sim.cloud.calls).toHaveLength(0);
    expect(clock.now()).toBe(manualClock().now());
  });

  it('removes named instances (lowering the desired size) and releases pay-as-you-go ones', async () => {
    const { sim, simClock, pools } = await setup();
    const [inst] = sim.cloud.members('np-a10');
    const { taskId } = await pools.removeNodes('np-a10', [inst!.id], { release: true, drain: true });
    expect((await pools.listNodePools())[0]).toMatchObject({ desiredSize: 0, totalNodes: 0, state: 'removing' });
    simClock.advance(30_000);
    expect(await pools.task(taskId)).toMatchObject({ state: 'success' });
    expect(sim.cloud.instances.has(inst!.id)).toBe(false);
    const e = await pools.removeNodes('np-a10', ['i-nothere'], { release: true, drain: true }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(BadInputError);
    expect((e as Error).message).toContain('instances not in node pool np-a10');
  });

  it('reports a failed scale-out task with its error', async () => {
    const { sim, simClock, pools } = await setup();
    sim.cloud.inject({ action: 'ModifyClusterNodePool', failTasks: 1 });
    const { taskId } = await pools.setDesiredSize('np-a100', 2);
    simClock.advance(120_000);
    const task = await pools.task(taskId);
    expect(task.state).toBe('failed');
    expect(task.error?.code).toBe('OperationDenied.NoStock');
    expect(sim.cloud.members('np-a100')).toHaveLength(0);
  });

  it('asks DescribeInstanceTypes for at most 10 types a call, as ECS allows (the simulator refuses 11)', async () => {
    const many = Array.from({ length: 25 }, (_, i) => ({
      id: `ecs.gnx-c${i}.xlarge`,
      gpuAmount: 1,
      gpuSpec: 'NVIDIA L20',
      gpuMemoryGiB: 48,
      cpu: 8,
      memoryGiB: 64,
      pricePerHour: 10 + i,
    }));
    const { sim, pools } = await setup({ ...CLOUD, instanceTypes: many });
    const types = await pools.instanceTypes(many.map((t) => t.id));
    expect(types.map((t) => t.id).sort()).toEqual(many.map((t) => t.id).sort());
    expect(sim.cloud.calls.filter((c) => c.action === 'DescribeInstanceTypes')).toHaveLength(3);
  });

  it('pages through DescribeInstanceTypes (100 a page) and reads GPU specs and prices', async () => {
    const many = Array.from({ length: 130 }, (_, i) => ({
      id: `ecs.gnx-c${i}.xlarge`,
      gpuAmount: 1 + (i % 4),
      gpuSpec: 'NVIDIA L20',
      gpuMemoryGiB: 48,
      cpu: 8,
      memoryGiB: 64,
      pricePerHour: 10 + i,
    }));
    const { sim, pools } = await setup({ ...CLOUD, instanceTypes: many });
    const types = await pools.instanceTypes([]);
    expect(types).toHaveLength(135);
    expect(sim.cloud.calls.filter((c) => c.action === 'DescribeInstanceTypes')).toHaveLength(2);
    expect(types.find((t) => t.id === 'ecs.gnx-c129.xlarge')).toEqual({
      id: 'ecs.gnx-c129.xlarge',
      gpuAmount: 2,
      gpuSpec: 'NVIDIA L20',
      gpuMemoryGiB: 48,
      cpu: 8,
      memoryGiB: 64,
    });
    expect(await pools.instanceTypes(['ecs.ebmgn7e.32xlarge'])).toEqual([
      { id: 'ecs.ebmgn7e.32xlarge', gpuAmount: 8, gpuSpec: 'NVIDIA A100', gpuMemoryGiB: 80, cpu: 128, memoryGiB: 1024 },
    ]);
    expect(await pools.hourlyPrice('ecs.gn7e-c16g1.4xlarge')).toBe(65);
    const e = await pools.hourlyPrice('ecs.nope.xlarge').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(NotFoundError);
  });

  it('reboots a running instance; a second reboot while it is down is refused as IncorrectInstanceStatus', async () => {
    const { sim, simClock, pools } = await setup();
    const [inst] = sim.cloud.members('np-a10');
    const boot = inst!.bootId;
    await pools.reboot(inst!.id);
    expect((await pools.instances([inst!.id]))[0]).toMatchObject({
      id: inst!.id,
      status: 'Stopping',
      instanceType: 'ecs.gn7i-c8g1.2xlarge',
    });
    const e = await pools.reboot(inst!.id).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ForbiddenError);
    expect((e as Error).message).toContain('IncorrectInstanceStatus');
    simClock.advance(60_000);
    expect((await pools.instances([inst!.id]))[0]?.status).toBe('Running');
    expect(sim.cloud.instances.get(inst!.id)!.bootId).not.toBe(boot);
  });
});

describe('AliCloudPools: a price the answer does not give is unknown, never 0', () => {
  // An answer without TradePrice (or a spot entry without SpotPrice) read as 0 made that type the cheapest to buy
  // and its scale-out cost nothing, under any approval limit (ECS API reference: DescribePrice PriceInfo.Price.TradePrice,
  // DescribeSpotPriceHistory SpotPrices.SpotPriceType[].SpotPrice).
  let server: Server | undefined;
  afterEach(() => new Promise<void>((done) => (server ? server.close(() => done()) : done())));

  async function answering(body: object): Promise<AliCloudPools> {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ RequestId: 'r-1', ...body }));
    });
    await new Promise<void>((ready) => server!.listen(0, '127.0.0.1', ready));
    const { port } = server.address() as AddressInfo;
    const settings = { regionId: 'cn-hangzhou', clusterId: 'c-1', accessKeyId: 'ak', accessKeySecret: 'sk' };
    return new AliCloudPools(
      { ...settings, endpoint: `127.0.0.1:${port}`, protocol: 'http', maxAttempts: 1 },
      manualClock(),
    );
  }

  it('DescribePrice without TradePrice', async () => {
    const pools = await answering({ PriceInfo: { Price: { OriginalPrice: 20, Currency: 'CNY' } } });
    expect(await pools.hourlyPrice('ecs.gn7i-c8g1.2xlarge')).toBeUndefined();
  });

  it('DescribePrice with a TradePrice that is no number', async () => {
    const pools = await answering({ PriceInfo: { Price: { TradePrice: '', Currency: 'CNY' } } });
    expect(await pools.hourlyPrice('ecs.gn7i-c8g1.2xlarge')).toBeUndefined();
  });

  it('DescribeSpotPriceHistory whose newest entry has no SpotPrice', async () => {
    const pools = await answering({
      SpotPrices: {
        SpotPriceType: [
          { Timestamp: '2026-12-06T00:00:00Z', OriginPrice: 20 },
          { Timestamp: '2026-12-05T00:00:00Z', SpotPrice: 4, OriginPrice: 20 },
        ],
      },
    });
    expect(await pools.spotPrice('ecs.gn7i-c8g1.2xlarge')).toBeUndefined();
  });

  it('still reads a price that is there', async () => {
    const pools = await answering({ PriceInfo: { Price: { TradePrice: 12.5, Currency: 'CNY' } } });
    expect(await pools.hourlyPrice('ecs.gn7i-c8g1.2xlarge')).toBe(12.5);
  });
});

describe('aliCloudSettingsFromEnv', () => {
  it('names the missing variable', () => {
    expect(() => aliCloudSettingsFromEnv({ ACK_CLUSTER_ID: 'c1' })).toThrow('ALIBABA_CLOUD_REGION_ID is not set');
    expect(() =>
      aliCloudSettingsFromEnv({
        ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
        ACK_CLUSTER_ID: 'c1',
        ALIBABA_CLOUD_ACCESS_KEY_ID: 'k',
      }),
    ).toThrow('ALIBABA_CLOUD_ACCESS_KEY_SECRET is not set');
    expect(() =>
      aliCloudSettingsFromEnv({
        ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
        ACK_CLUSTER_ID: 'c1',
        ALIBABA_CLOUD_PROTOCOL: 'ftp',
      }),
    ).toThrow('ALIBABA_CLOUD_PROTOCOL must be http or https');
    expect(
      aliCloudSettingsFromEnv({
        ALIBABA_CLOUD_REGION_ID: 'cn-hangzhou',
        ACK_CLUSTER_ID: 'c1',
        ALIBABA_CLOUD_ENDPOINT: '127.0.0.1:1',
        ALIBABA_CLOUD_PROTOCOL: 'http',
      }),
    ).toEqual({ regionId: 'cn-hangzhou', clusterId: 'c1', endpoint: '127.0.0.1:1', protocol: 'http' });
  });
});

describe('mapAliCloudError: conflicts and throttling are retried (issue #34)', () => {
  it.each([
    [{ code: 'Throttling.User', data: { statusCode: 400 } }, ThrottledError],
    [{ code: 'ErrorNodePoolStateConflict', data: { statusCode: 400 } }, ConflictError],
    [{ code: 'OperationConflict', data: { statusCode: 409 } }, ConflictError],
    [{ code: 'InvalidParameter', data: { statusCode: 400 } }, BadInputError],
  ])('maps %o', (err, type) => {
    const mapped = mapAliCloudError(err, 'cs:ModifyClusterNodePool');
    expect(mapped).toBeInstanceOf(type);
    expect(mapped.retryable).toBe(type !== BadInputError);
  });
});
