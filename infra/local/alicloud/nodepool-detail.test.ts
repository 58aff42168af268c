import * as csModule from '@alicloud/cs20151215';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../../events/clock.ts';
import { EXAMPLE_CLOUD_PATH } from './cloud-file.ts';
import { startAliCloudSim, type AliCloudSim } from './index.ts';

/** DescribeClusterNodePoolDetail through the generated CS SDK: one pool, as DescribeClusterNodePools lists it. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Loose = any;
let sim: AliCloudSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe('DescribeClusterNodePoolDetail', () => {
  it("answers one pool in the SDK's model, the same as the list's entry; an unknown pool is ErrorNodePoolNotFound", async () => {
    sim = await startAliCloudSim({ cloud: EXAMPLE_CLOUD_PATH, clock: new VirtualClock() });
    const c = sim.connection;
    const d = (csModule as Loose).default;
    const Client = (typeof d === 'function' ? d : d.default) as new (o: object) => Loose;
    const cs = new Client({ ...c, protocol: 'http' });
    const list = await cs.describeClusterNodePools(
      c.clusterId,
      new (csModule as Loose).DescribeClusterNodePoolsRequest({}),
    );
    const first = list.body.nodepools[0];
    const id = first.nodepoolInfo.nodepoolId as string;
    const detail = await cs.describeClusterNodePoolDetail(c.clusterId, id);
    expect(detail.statusCode).toBe(200);
    expect(detail.body.nodepoolInfo).toMatchObject({ nodepoolId: id, name: first.nodepoolInfo.name });
    expect(detail.body.scalingGroup.desiredSize).toBe(first.scalingGroup.desiredSize);
    expect(detail.body.status).toMatchObject({ totalNodes: first.status.totalNodes });
    await expect(cs.describeClusterNodePoolDetail(c.clusterId, 'np-nope')).rejects.toMatchObject({
      code: 'ErrorNodePoolNotFound',
      statusCode: 404,
    });
  });
});
