import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../../infra/local/alicloud/index.ts';
import { manualClock } from '../clock.ts';
import { BadInputError } from '../errors.ts';
import { fakeKube, type FakeKube } from '../kube/fake.ts';
import { AliCloudPools } from './client.ts';
import { ackRepairOwner, aliCloudRepair, instanceIdOf } from './repair.ts';
import { NODEPOOL_LABEL } from './ports.ts';

let sim: AliCloudSim;
let kube: FakeKube;
let repair: ReturnType<typeof aliCloudRepair>;

beforeEach(async () => {
  sim = await startAliCloudSim({ clock: new VirtualClock(), cloud: { pools: [{ id: 'np-a100', name: 'a100', instanceTypes: ['ecs.ebmgn7e.32xlarge'], size: 1 }] } });
  const c = sim.connection;
  const clock = manualClock();
  kube = fakeKube({ clock });
  const [inst] = sim.cloud.members('np-a100');
  kube.cluster.addNode({ name: 'a100-0', providerId: `cn-hangzhou.${inst!.id}` });
  kube.cluster.addNode({ name: 'on-prem-0' });
  repair = aliCloudRepair(new AliCloudPools({ regionId: c.regionId, clusterId: c.clusterId, accessKeyId: c.accessKeyId, accessKeySecret: c.accessKeySecret, endpoint: c.endpoint, protocol: 'http' }, clock), kube.nodes);
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

  it('refuses a node that names no ECS instance, and a replacement it cannot do, saying why', async () => {
    await expect(repair.run({ kind: 'reboot', node: 'on-prem-0' })).rejects.toThrow(/node on-prem-0 names no ECS instance \(spec\.providerID unset\)/);
    await expect(repair.run({ kind: 'replace', node: 'a100-0' })).rejects.toBeInstanceOf(BadInputError);
    expect(sim.cloud.calls.filter((c) => c.action === 'RebootInstance')).toHaveLength(0);
  });
});

describe("a node pool with ACK's own auto repair", () => {
  it('names ACK as the node\'s repairer where its pool has auto repair on, nobody elsewhere, reading the pools once a minute', async () => {
    await sim.close();
    sim = await startAliCloudSim({
      clock: new VirtualClock(),
      cloud: { pools: [{ id: 'np-a100', name: 'a100', instanceTypes: ['ecs.ebmgn7e.32xlarge'], size: 1, autoRepair: true }, { id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 1 }] },
    });
    const c = sim.connection;
    let t = 0;
    const pools = new AliCloudPools({ regionId: c.regionId, clusterId: c.clusterId, accessKeyId: c.accessKeyId, accessKeySecret: c.accessKeySecret, endpoint: c.endpoint, protocol: 'http' }, manualClock());
    const owner = ackRepairOwner(pools, () => t);
    expect(await owner({ labels: { [NODEPOOL_LABEL]: 'np-a100' } })).toBe('ACK auto repair of node pool a100 (np-a100)');
    expect(await owner({ labels: { [NODEPOOL_LABEL]: 'np-t4' } })).toBeUndefined();
    expect(await owner({ labels: {} })).toBeUndefined(); // not an ACK node-pool node
    const reads = () => sim.cloud.calls.filter((x) => x.action === 'DescribeClusterNodePools').length;
    expect(reads()).toBe(1);
    t = 61_000;
    await owner({ labels: { [NODEPOOL_LABEL]: 'np-t4' } });
    expect(reads()).toBe(2);
  });
});
