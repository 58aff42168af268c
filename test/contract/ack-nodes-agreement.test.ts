/**
 * ACK's node labels as the simulated cloud writes them (infra/local/alicloud/ack-nodes.ts, from
 * Alibaba's docs) against the functions that read them. The names must agree, and the functions
 * read the values as ACK documents them (once a finding: `default`, ACK's exclusive mode, was read
 * as sharing).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { NODEPOOL_LABEL } from '../../functions/adapters/alicloud/ports.ts';
import { RecordingPublisher } from '../../functions/adapters/bus.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { fakeKube } from '../../functions/adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../../functions/lib/pool-policy.ts';
import { autoscalePools, GPU_SHARE_LABEL } from '../../functions/autoscale/run.ts';
import { simDeps } from '../support/autoscale-sim-deps.ts';
import { ACK_GPU_SCHEDULE_LABEL, ACK_NODEPOOL_LABEL, gpuResources } from '../../infra/local/alicloud/ack-nodes.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

describe("ACK's node labels", () => {
  it('are spelled alike by the simulated cloud and the functions', () => {
    expect({ pool: NODEPOOL_LABEL, gpuMode: GPU_SHARE_LABEL }).toEqual({
      pool: ACK_NODEPOOL_LABEL,
      gpuMode: ACK_GPU_SCHEDULE_LABEL,
    });
  });
});

/** A 2×T4 instance type (16 GiB cards), as the ECS catalog lists ecs.gn6i-c24g1.12xlarge. */
const TWO_T4 = {
  id: 'ecs.gn6i-c24g1.12xlarge',
  family: 'ecs.gn6i',
  gpuAmount: 2,
  gpuSpec: 'NVIDIA T4',
  gpuMemoryGiB: 16,
  cpu: 48,
  memoryGiB: 186,
  pricePerHour: 30,
};

interface Round {
  labels: Record<string, string>;
  instanceType?: string;
  /** Pending pods' requests, one entry a pod. */
  pods: Record<string, number>[];
  /** The pool's `sharing` in the policy. */
  sharing?: Record<string, unknown>;
  /** Each entry a Ready node of the pool already there, with the shares (GiB) running on card 0 and card 1. */
  members?: [number, number][];
}

describe("ACK's GPU modes as the autoscaler reads them (alibabacloud.com/help/doc-detail/191140.html; issue #28)", () => {
  let sim: AliCloudSim | undefined;
  afterEach(() => sim?.close());

  /** One autoscale-pools round over an empty pool with these labels and these waiting pods. */
  async function round({ labels, instanceType = 'ecs.gn7i-c8g1.2xlarge', pods, sharing, members = [] }: Round) {
    const simClock = new VirtualClock(T0);
    sim = await startAliCloudSim({
      clock: simClock,
      cloud: {
        bootSeconds: 120,
        instanceTypes: [TWO_T4],
        pools: [{ id: 'np-gpu', name: 'gpu', instanceTypes: [instanceType], size: members.length, labels }],
      },
    });
    const clock = manualClock(T0, (ms) => simClock.advance(ms));
    const kube = fakeKube({ clock });
    members.forEach((onCards, n) => {
      kube.cluster.addNode({
        name: `member-${n}`,
        ready: true,
        labels: { ...labels, [ACK_NODEPOOL_LABEL]: 'np-gpu', 'node.kubernetes.io/instance-type': instanceType },
        allocatable: {
          cpu: '46',
          memory: '180Gi',
          pods: '110',
          'aliyun.com/gpu-mem': '32',
          'aliyun.com/gpu-count': '2',
        },
      });
      onCards.forEach((gib, card) =>
        kube.cluster.addPod({
          name: `running-${n}-${card}`,
          namespace: 'ml',
          uid: `running-${n}-${card}`,
          phase: 'Running',
          nodeName: `member-${n}`,
          annotations: { ALIYUN_COM_GPU_MEM_IDX: String(card) },
          extendedResources: { 'aliyun.com/gpu-mem': gib },
          requests: { 'aliyun.com/gpu-mem': gib, cpu: 1 },
        }),
      );
    });
    pods.forEach((gpu, i) =>
      kube.cluster.addPod({
        name: `infer-${i}`,
        namespace: 'ml',
        uid: `infer-${i}`,
        phase: 'Pending',
        // The scheduler found no node for it: demand (functions/autoscale/demand.ts).
        scheduled: { status: 'False', reason: 'Unschedulable' },
        extendedResources: gpu,
        requests: { ...gpu, cpu: 2, memory: 8 * 2 ** 30 },
        createdAt: new Date(T0).toISOString(),
      }),
    );
    const deps = simDeps(
      sim,
      kube,
      clock,
      new RecordingPublisher(),
      AutoscalePolicySchema.parse({
        pendingSeconds: 60,
        pools: { 'np-gpu': { max: 4, ...(sharing ? { sharing } : {}) } },
      }),
    );
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    await sim.close();
    sim = undefined;
    return { grownTo: out.scaled['np-gpu'] ?? 0, unhostable: out.unhostable };
  }

  const twoWholeGpuPods = [{ 'nvidia.com/gpu': 1 }, { 'nvidia.com/gpu': 1 }];

  it('a node of such a pool offers whole GPUs in the simulated cloud, as on ACK', () => {
    expect(gpuResources('default', 1, 24)).toEqual({ 'nvidia.com/gpu': '1' });
  });

  it('default is exclusive: the pool grows for whole-GPU pods with the label as without it', async () => {
    expect({
      unlabelled: await round({ labels: {}, pods: twoWholeGpuPods }),
      default: await round({ labels: { [ACK_GPU_SCHEDULE_LABEL]: 'default' }, pods: twoWholeGpuPods }),
    }).toEqual({ unlabelled: { grownTo: 2, unhostable: 0 }, default: { grownTo: 2, unhostable: 0 } });
  });

  it('cgpu shares memory: whole-GPU pods do not fit, shares do', async () => {
    const cgpu = { [ACK_GPU_SCHEDULE_LABEL]: 'cgpu' };
    expect({
      whole: await round({ labels: cgpu, pods: twoWholeGpuPods }),
      shares: await round({ labels: cgpu, pods: [{ 'aliyun.com/gpu-mem': 8 }, { 'aliyun.com/gpu-mem': 8 }] }),
    }).toEqual({ whole: { grownTo: 0, unhostable: 2 }, shares: { grownTo: 1, unhostable: 0 } });
  });

  it('a mode ACK does not document grows nothing (unknown is not a guess)', async () => {
    expect(await round({ labels: { [ACK_GPU_SCHEDULE_LABEL]: 'exclusive-ish' }, pods: twoWholeGpuPods })).toEqual({
      grownTo: 0,
      unhostable: 2,
    });
  });

  it('a 20 GiB share fits no card of a 2×T4 node: no node is bought for it, though the node has 32 GiB', async () => {
    const cgpu = { [ACK_GPU_SCHEDULE_LABEL]: 'cgpu' };
    expect(await round({ labels: cgpu, instanceType: TWO_T4.id, pods: [{ 'aliyun.com/gpu-mem': 20 }] })).toEqual({
      grownTo: 0,
      unhostable: 1,
    });
  });

  it('three 10 GiB shares take two 2×T4 nodes: one share per 16 GiB card, not three in 32 GiB', async () => {
    const cgpu = { [ACK_GPU_SCHEDULE_LABEL]: 'cgpu' };
    const pods = [10, 10, 10].map((g) => ({ 'aliyun.com/gpu-mem': g }));
    expect(await round({ labels: cgpu, instanceType: TWO_T4.id, pods })).toEqual({ grownTo: 2, unhostable: 0 });
  });

  it('a time-sliced pool (policy sharing.timeSlicing) grows from zero with GPUs × replicas under the right name', async () => {
    // Three pods of 2 CPUs: one A10 node (7.5 CPUs left after the reserve) holds them all when its GPU is shared.
    const three = (r: string) => Array.from({ length: 3 }, () => ({ [r]: 1 }));
    const ts = (renameByDefault: boolean) => ({ timeSlicing: { replicas: 4, renameByDefault } });
    expect({
      plain: await round({ labels: {}, pods: three('nvidia.com/gpu'), sharing: ts(false) }),
      renamed: await round({ labels: {}, pods: three('nvidia.com/gpu.shared'), sharing: ts(true) }),
      wrongName: await round({ labels: {}, pods: three('nvidia.com/gpu.shared'), sharing: ts(false) }),
      exclusive: await round({ labels: {}, pods: three('nvidia.com/gpu') }),
    }).toEqual({
      plain: { grownTo: 1, unhostable: 0 },
      renamed: { grownTo: 1, unhostable: 0 },
      wrongName: { grownTo: 0, unhostable: 3 },
      exclusive: { grownTo: 3, unhostable: 0 },
    });
  });

  it("a share a card of an existing node has room for buys no node; one that needs more than any card's free room does", async () => {
    const cgpu = { [ACK_GPU_SCHEDULE_LABEL]: 'cgpu' };
    // One 2×T4 member running 10 GiB on each card: 12 GiB free in all, 6 on each card.
    const member = { labels: cgpu, instanceType: TWO_T4.id, members: [[10, 10]] as [number, number][] };
    expect({
      fits: await round({ ...member, pods: [{ 'aliyun.com/gpu-mem': 6 }] }),
      needsANode: await round({ ...member, pods: [{ 'aliyun.com/gpu-mem': 8 }] }),
    }).toEqual({ fits: { grownTo: 0, unhostable: 0 }, needsANode: { grownTo: 2, unhostable: 0 } });
  });
});
