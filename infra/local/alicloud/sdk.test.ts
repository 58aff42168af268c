import * as csModule from '@alicloud/cs20151215';
import * as ecsModule from '@alicloud/ecs20140526';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { EXAMPLE_CLOUD_PATH } from './cloud-file.ts';
import { startAliCloudSim, type AliCloudSim } from './index.ts';

/**
 * The simulator against Alibaba Cloud's generated SDKs (@alicloud/cs20151215, @alicloud/ecs20140526,
 * built on @alicloud/openapi-core, not the client our adapter uses): code nobody here wrote decides
 * what is on the wire, the simulator must understand it and answer what the SDK's models parse.
 */
// The SDK models are read loosely here: the test checks values, the SDK's own types do not matter.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;
type AnyClient = Record<string, (...args: unknown[]) => Promise<{ body: Loose }>>;
const klass = (m: unknown) => {
  const d = (m as { default: unknown }).default;
  return (typeof d === 'function' ? d : (d as { default: unknown }).default) as new (c: object) => AnyClient;
};
const {
  DescribeClusterNodePoolsRequest,
  ModifyClusterNodePoolRequest,
  ModifyClusterNodePoolRequestScalingGroup,
  RemoveNodePoolNodesRequest,
  ScaleClusterNodePoolRequest,
} = csModule as unknown as Record<string, new (o: object) => object>;
const { DescribeInstanceTypesRequest, DescribePriceRequest, DescribeInstancesRequest, RebootInstanceRequest } =
  ecsModule as unknown as Record<string, new (o: object) => object>;

let sim: AliCloudSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

async function clients(secret?: string) {
  const clock = new VirtualClock();
  sim = await startAliCloudSim({ cloud: EXAMPLE_CLOUD_PATH, clock });
  const c = sim.connection;
  const config = {
    accessKeyId: c.accessKeyId,
    accessKeySecret: secret ?? c.accessKeySecret,
    endpoint: c.endpoint,
    protocol: 'http',
    regionId: c.regionId,
  };
  return { clock, sim, c, cs: new (klass(csModule))(config), ecs: new (klass(ecsModule))(config) };
}

const failure = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: { code?: string; statusCode?: number; message?: string; data?: Record<string, unknown> }) => e,
  );

describe('Alibaba Cloud simulator with the generated CS and ECS SDKs', () => {
  it('CS: lists node pools in the SDK model, scales one absolutely and by count, removes a node, reports tasks', async () => {
    const { clock, sim, c, cs } = await clients();
    const pools = await cs.describeClusterNodePools!(c.clusterId, new DescribeClusterNodePoolsRequest!({}));
    const np = pools.body.nodepools as Loose[];
    expect(np.map((p) => [p.nodepoolInfo.nodepoolId, p.scalingGroup.desiredSize, p.status.totalNodes])).toEqual([
      ['np-t4-inference', 2, 2],
      ['np-a10-general', 1, 1],
      ['np-a100-training', 0, 0],
    ]);
    expect(np[2].kubernetesConfig.taints[0]).toMatchObject({
      key: 'nvidia.com/gpu',
      value: 'present',
      effect: 'NoSchedule',
    });
    expect(np[0].scalingGroup.instanceTypes).toEqual(['ecs.gn6i-c4g1.xlarge']);

    const mod = await cs.modifyClusterNodePool!(
      c.clusterId,
      'np-a100-training',
      new ModifyClusterNodePoolRequest!({
        scalingGroup: new ModifyClusterNodePoolRequestScalingGroup!({ desiredSize: 2 }),
      }),
    );
    const scale = await cs.scaleClusterNodePool!(
      c.clusterId,
      'np-a100-training',
      new ScaleClusterNodePoolRequest!({ count: 1 }),
    );
    expect(sim.cloud.members('np-a100-training')).toHaveLength(3);
    const victim = sim.cloud.members('np-t4-inference')[0]!.id;
    const rm = await cs.removeNodePoolNodes!(
      c.clusterId,
      'np-t4-inference',
      new RemoveNodePoolNodesRequest!({ instanceIds: [victim], releaseNode: true, drainNode: true }),
    );
    expect((await cs.describeTaskInfo!(mod.body.taskId)).body).toMatchObject({
      taskId: mod.body.taskId,
      clusterId: c.clusterId,
      state: 'running',
    });
    clock.advance(180_000);
    for (const id of [mod.body.taskId, scale.body.taskId, rm.body.taskId])
      expect((await cs.describeTaskInfo!(id)).body.state).toBe('success');
    expect(sim.cloud.members('np-a100-training').map((i) => i.status)).toEqual(['Running', 'Running', 'Running']);
    expect(sim.cloud.instances.has(victim)).toBe(false);
  });

  it('CS: business errors come back with their code and status', async () => {
    const { c, cs } = await clients();
    const e = await failure(
      cs.modifyClusterNodePool!(
        c.clusterId,
        'np-missing',
        new ModifyClusterNodePoolRequest!({
          scalingGroup: new ModifyClusterNodePoolRequestScalingGroup!({ desiredSize: 1 }),
        }),
      ),
    );
    expect(e).toMatchObject({ code: 'ErrorNodePoolNotFound', statusCode: 404 });
    const big = await failure(
      cs.scaleClusterNodePool!(c.clusterId, 'np-a10-general', new ScaleClusterNodePoolRequest!({ count: 501 })),
    );
    expect(big).toMatchObject({ code: 'InvalidParameter', statusCode: 400 });
    expect(big!.message).toContain('count must be an integer from 1 to 500');
    const other = await failure(cs.describeClusterNodePools!('c-other', new DescribeClusterNodePoolsRequest!({})));
    expect(other).toMatchObject({ code: 'ErrorClusterNotFound', statusCode: 404 });
  });

  it('ECS: instance types page by NextToken, prices, instances, reboot with DryRun', async () => {
    const { sim, c, ecs } = await clients();
    const p1 = await ecs.describeInstanceTypes!(new DescribeInstanceTypesRequest!({ maxResults: 3 }));
    expect(p1.body.instanceTypes.instanceType).toHaveLength(3);
    const p2 = await ecs.describeInstanceTypes!(
      new DescribeInstanceTypesRequest!({ maxResults: 3, nextToken: p1.body.nextToken }),
    );
    expect(p2.body.nextToken).toBe('');
    const all = [...p1.body.instanceTypes.instanceType, ...p2.body.instanceTypes.instanceType];
    expect(all.map((t: Loose) => [t.instanceTypeId, t.GPUAmount, t.GPUSpec])).toContainEqual([
      'ecs.ebmgn7e.32xlarge',
      8,
      'NVIDIA A100',
    ]);
    const one = await ecs.describeInstanceTypes!(
      new DescribeInstanceTypesRequest!({ instanceTypes: ['ecs.gn6i-c4g1.xlarge'] }),
    );
    expect(one.body.instanceTypes.instanceType.map((t: Loose) => t.instanceTypeId)).toEqual(['ecs.gn6i-c4g1.xlarge']);
    // At most 10 InstanceTypes a call (the ECS API reference): the 11th is refused, not ignored.
    const eleven = Array.from({ length: 11 }, (_, i) => `ecs.gn6i-c${i}g1.xlarge`);
    const tooMany = await failure(
      ecs.describeInstanceTypes!(new DescribeInstanceTypesRequest!({ instanceTypes: eleven })),
    );
    expect(tooMany).toMatchObject({ code: 'InvalidParameter', statusCode: 400 });

    const price = await ecs.describePrice!(
      new DescribePriceRequest!({
        regionId: c.regionId,
        resourceType: 'instance',
        instanceType: 'ecs.gn6i-c4g1.xlarge',
        priceUnit: 'Hour',
      }),
    );
    expect(price.body.priceInfo.price).toMatchObject({ tradePrice: 8.5, currency: 'CNY' });

    const id = sim.cloud.members('np-a10-general')[0]!.id;
    const inst = await ecs.describeInstances!(
      new DescribeInstancesRequest!({ regionId: c.regionId, instanceIds: JSON.stringify([id]) }),
    );
    expect(inst.body.totalCount).toBe(1);
    expect(inst.body.instances.instance[0]).toMatchObject({
      instanceId: id,
      status: 'Running',
      instanceType: 'ecs.gn7i-c8g1.2xlarge',
      GPUAmount: 1,
    });

    const dry = await failure(ecs.rebootInstance!(new RebootInstanceRequest!({ instanceId: id, dryRun: true })));
    expect(dry).toMatchObject({ code: 'DryRunOperation', statusCode: 400 });
    expect(sim.cloud.instances.get(id)!.status).toBe('Running');
    await ecs.rebootInstance!(new RebootInstanceRequest!({ instanceId: id }));
    expect(sim.cloud.instances.get(id)!.status).toBe('Stopping');
    const missing = await failure(
      ecs.describePrice!(new DescribePriceRequest!({ instanceType: 'ecs.gn6i-c4g1.xlarge' })),
    );
    expect(missing).toMatchObject({ code: 'MissingRegionId', statusCode: 400 });
  });

  it('refuses a wrong secret and an unknown key with the gateway codes, and injected throttling with Throttling.User', async () => {
    const bad = await clients('wrong-secret');
    const e = await failure(bad.ecs.describeInstanceTypes!(new DescribeInstanceTypesRequest!({})));
    expect(e).toMatchObject({ code: 'SignatureDoesNotMatch', statusCode: 400 });
    expect(e!.data).toMatchObject({ HostId: bad.c.endpoint });
    expect(bad.sim.cloud.calls).toHaveLength(0);
    await bad.sim.close();

    const { c, sim: s2, cs } = await clients();
    s2.cloud.inject({ action: 'DescribeClusterNodePools', throttle: 1 });
    const t = await failure(cs.describeClusterNodePools!(c.clusterId, new DescribeClusterNodePoolsRequest!({})));
    expect(t).toMatchObject({ code: 'Throttling.User' });
    expect(
      (await cs.describeClusterNodePools!(c.clusterId, new DescribeClusterNodePoolsRequest!({}))).body.nodepools,
    ).toHaveLength(3);
    const stranger = new (klass(csModule))({
      accessKeyId: 'LTAIstranger',
      accessKeySecret: 'x',
      endpoint: c.endpoint,
      protocol: 'http',
      regionId: c.regionId,
    });
    expect(
      await failure(stranger.describeClusterNodePools!(c.clusterId, new DescribeClusterNodePoolsRequest!({}))),
    ).toMatchObject({ code: 'InvalidAccessKeyId.NotFound', statusCode: 404 });
  });
});
