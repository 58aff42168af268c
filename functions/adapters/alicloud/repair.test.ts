import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../../infra/local/alicloud/index.ts';
import type { CloudChange } from '../../../infra/local/alicloud/cloud.ts';
import { manualClock } from '../clock.ts';
import { fakeKube, type FakeKube } from '../kube/fake.ts';
import { AliCloudPools } from './client.ts';
import { ackRepairOwner, aliCloudRepair, instanceIdOf, type PoolLock } from './repair.ts';
import { NODEPOOL_LABEL, POOL_SIZE_LEASE } from './ports.ts';
import { withLease } from '../../lib/lease.ts';
import { silentLogger } from '../logger.ts';

let sim: AliCloudSim;
let vclock: VirtualClock;
let kube: FakeKube;
let repair: ReturnType<typeof aliCloudRepair>;

beforeEach(async () => {
  vclock = new VirtualClock();
  sim = await startAliCloudSim({
    clock: vclock,
    cloud: { pools: [{ id: 'np-a100', name: 'a100', instanceTypes: ['ecs.ebmgn7e.32xlarge'], size: 1 }] },
  });
  const c = sim.connection;
  const clock = manualClock();
  kube = fakeKube({ clock });
  const [inst] = sim.cloud.members('np-a100');
  kube.cluster.addNode({ name: 'a100-0', providerId: `cn-hangzhou.${inst!.id}` });
  kube.cluster.addNode({ name: 'on-prem-0' });
  repair = aliCloudRepair(
    new AliCloudPools(
      {
        regionId: c.regionId,
        clusterId: c.clusterId,
        accessKeyId: c.accessKeyId,
        accessKeySecret: c.accessKeySecret,
        endpoint: c.endpoint,
        protocol: 'http',
      },
      clock,
    ),
    kube.nodes,
  );
});
afterEach(() => sim.close());

describe('remediation reboots through Alibaba Cloud', () => {
  it('finds the ECS instance in an ACK providerID', () => {
    expect(instanceIdOf('cn-hangzhou.i-bp1abc123')).toBe('i-bp1abc123');
    expect(instanceIdOf('i-bp1abc123')).toBe('i-bp1abc123');
    expect(instanceIdOf('aws:///us-east-1a/i-0abc')).toBe('i-0abc');
    expect(instanceIdOf('kind://docker/kind/kind-control-plane')).toBeUndefined();
    expect(instanceIdOf(undefined)).toBeUndefined();
  });

  it('reboots the instance behind the node once; asked again while it reboots, answers "already"', async () => {
    const [inst] = sim.cloud.members('np-a100');
    expect(await repair.run({ kind: 'reboot', node: 'a100-0' })).toBe(true);
    expect(inst!.status).toBe('Stopping');
    expect(await repair.run({ kind: 'reboot', node: 'a100-0' })).toBe(false);
    expect(sim.cloud.calls.filter((c) => c.action === 'RebootInstance')).toHaveLength(2);
  });

  it('refuses a node that names no ECS instance, saying why', async () => {
    await expect(repair.run({ kind: 'reboot', node: 'on-prem-0' })).rejects.toThrow(
      /node on-prem-0 names no ECS instance \(spec\.providerID unset\)/,
    );
    expect(sim.cloud.calls.filter((c) => c.action === 'RebootInstance')).toHaveLength(0);
  });
});

describe("a node pool with ACK's own auto repair", () => {
  it("names ACK as the node's repairer where its pool has auto repair on, nobody elsewhere, reading the pools once a minute", async () => {
    await sim.close();
    sim = await startAliCloudSim({
      clock: new VirtualClock(),
      cloud: {
        pools: [
          { id: 'np-a100', name: 'a100', instanceTypes: ['ecs.ebmgn7e.32xlarge'], size: 1, autoRepair: true },
          { id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 1 },
        ],
      },
    });
    const c = sim.connection;
    let t = 0;
    const pools = new AliCloudPools(
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
    const owner = ackRepairOwner(pools, () => t);
    expect(await owner({ labels: { [NODEPOOL_LABEL]: 'np-a100' } })).toBe(
      'ACK auto repair of node pool a100 (np-a100)',
    );
    expect(await owner({ labels: { [NODEPOOL_LABEL]: 'np-t4' } })).toBeUndefined();
    expect(await owner({ labels: {} })).toBeUndefined(); // not an ACK node-pool node
    const reads = () => sim.cloud.calls.filter((x) => x.action === 'DescribeClusterNodePools').length;
    expect(reads()).toBe(1);
    t = 61_000;
    await owner({ labels: { [NODEPOOL_LABEL]: 'np-t4' } });
    expect(reads()).toBe(2);
  });
});

describe('remediation replaces through the node pool, capacity first', () => {
  const pools = () => {
    const c = sim.connection;
    return new AliCloudPools(
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
  };

  it('grows the pool to an absolute size once, then removes and releases the instance without a drain, and ACK lowers the size itself', async () => {
    const cloud = pools();
    const clock = vclock;
    const [old] = sim.cloud.members('np-a100');
    const grow = await repair.run({ kind: 'replace', step: 'grow', node: 'a100-0', pool: 'np-a100', from: 1, to: 2 });
    expect(grow).toMatchObject({ done: true, taskId: expect.stringMatching(/^T-/) });
    // A retry (the answer was lost) adds nothing: the pool already wants 2.
    expect(
      await repair.run({ kind: 'replace', step: 'grow', node: 'a100-0', pool: 'np-a100', from: 1, to: 2 }),
    ).toMatchObject({ done: false, message: expect.stringContaining('already wants 2') });
    expect((await cloud.listNodePools())[0]).toMatchObject({ desiredSize: 2 });
    expect(sim.cloud.members('np-a100')).toHaveLength(2);
    const changes: CloudChange[] = [];
    sim.cloud.onChange((c) => changes.push(c));
    const removed = await repair.run({
      kind: 'replace',
      step: 'remove',
      node: 'a100-0',
      pool: 'np-a100',
      instanceId: old!.id,
    });
    expect(removed).toMatchObject({ done: true, taskId: expect.stringMatching(/^T-/) });
    // By instance id, not drained by ACK (remediation drained it), released once removed.
    expect(changes).toEqual([
      expect.objectContaining({ type: 'removing', drain: false, instance: expect.objectContaining({ id: old!.id }) }),
    ]);
    clock.advance(61_000);
    expect(changes.at(-1)).toMatchObject({ type: 'removed', released: true });
    expect(sim.cloud.instances.has(old!.id)).toBe(false);
    // RemoveNodePoolNodes lowered the desired size: nothing else asks to lower it.
    expect((await cloud.listNodePools())[0]).toMatchObject({ desiredSize: 1 });
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(1);
    expect(sim.cloud.calls.some((c) => c.action === 'ScaleClusterNodePool')).toBe(false);
    // Asked again while it leaves: ACK refuses it, read as already under way.
    expect(
      await repair.run({ kind: 'replace', step: 'remove', node: 'a100-0', pool: 'np-a100', instanceId: old!.id }),
    ).toMatchObject({ done: false });
  });

  it('does not grow a pool that changed since the sweep read it', async () => {
    await pools().setDesiredSize('np-a100', 3);
    expect(
      await repair.run({ kind: 'replace', step: 'grow', node: 'a100-0', pool: 'np-a100', from: 1, to: 2 }),
    ).toMatchObject({ done: false, message: expect.stringContaining('already wants 3') });
    expect((await pools().listNodePools())[0]).toMatchObject({ desiredSize: 3 });
  });

  it('sets no pool size while autoscale-pools holds the pool-size Lease', async () => {
    const clock = manualClock();
    const lock: PoolLock = (work) =>
      withLease(
        POOL_SIZE_LEASE,
        60,
        { leases: kube.leases, clock, logger: silentLogger, holder: 'remediate' },
        work,
        () => undefined,
      );
    const locked = aliCloudRepair(pools(), kube.nodes, lock);
    await kube.leases.tryAcquire(POOL_SIZE_LEASE, 'autoscale-round', 120, clock);
    expect(
      await locked.run({ kind: 'replace', step: 'grow', node: 'a100-0', pool: 'np-a100', from: 1, to: 2 }),
    ).toMatchObject({ done: false, message: expect.stringContaining('asked again next sweep') });
    expect(sim.cloud.calls.some((c) => c.action === 'ModifyClusterNodePool')).toBe(false);
    await kube.leases.release(POOL_SIZE_LEASE, 'autoscale-round');
    expect(
      await locked.run({ kind: 'replace', step: 'grow', node: 'a100-0', pool: 'np-a100', from: 1, to: 2 }),
    ).toMatchObject({ done: true });
  });
});
