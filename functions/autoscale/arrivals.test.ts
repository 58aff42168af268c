import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL, type AutoscaleDeps } from './run.ts';
import { poolKey, type PoolRecord } from './deps.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

// A scale-out is done when its nodes have joined Ready and advertise the GPUs they were bought for, not when ACK's
// task says success (house rule 2): nodes that never join, or join without GPUs, are told and not waited on forever.
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
let sim: AliCloudSim;
let kube: FakeKube;
let clock: ManualClock;
let notifier: RecordingNotifier;
let deps: AutoscaleDeps;
const GPU_NODE = { 'nvidia.com/gpu': '1', cpu: '3500m', memory: '14Gi' };
const NO_GPU = { cpu: '3500m', memory: '14Gi' };
// What ACK's nodes carry: the pool, and the instance type (a member of the type it buys sizes its new nodes).
const T4_LABELS = { [NODEPOOL_LABEL]: 'np-t4', 'node.kubernetes.io/instance-type': 'ecs.gn6i-c4g1.xlarge' };

beforeEach(async () => {
  const simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      bootSeconds: 120,
      pools: [
        { id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 1 },
        { id: 'np-a10', name: 'a10', instanceTypes: ['ecs.gn7i-c8g1.2xlarge'], size: 0 },
      ],
    },
  });
  clock = manualClock(T0, (ms) => simClock.advance(ms));
  kube = fakeKube({ clock });
  const [t4] = sim.cloud.members('np-t4');
  kube.cluster.addNode({ name: t4!.nodeName, labels: T4_LABELS, allocatable: GPU_NODE });
  // Its GPU is busy: a waiting pod has no room on it.
  kube.cluster.addPod({
    name: 'serving',
    namespace: 'ml',
    nodeName: t4!.nodeName,
    owners: [{ kind: 'ReplicaSet', name: 'serving', controller: true }],
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1, cpu: 2 },
  });
  notifier = new RecordingNotifier();
  deps = {
    ...simDeps(
      sim,
      kube,
      clock,
      new RecordingPublisher(),
      AutoscalePolicySchema.parse({
        pendingSeconds: 60,
        cooldownMinutes: 3,
        pools: { 'np-t4': { max: 6, maxStep: 4 }, 'np-a10': { max: 2 } },
      }),
    ),
    notifier,
  };
});
afterEach(() => sim.close());

const pendingGpuPods = (n: number) => {
  for (let i = 0; i < n; i++)
    kube.cluster.addPod({
      name: `infer-${i}`,
      namespace: 'ml',
      uid: `infer-${i}`,
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2, memory: 8 * 2 ** 30 },
      createdAt: new Date(T0).toISOString(),
    });
};
/** The pool's new instances register with the cluster, as the kubelet does (Ready, with these resources). */
const join = (allocatable: Record<string, string>, ready = true) => {
  for (const m of sim.cloud.members('np-t4'))
    if (!kube.cluster.nodes.has(m.nodeName))
      kube.cluster.addNode({ name: m.nodeName, labels: T4_LABELS, allocatable, ready });
};
const warnings = () => notifier.notices.filter((n) => n.severity === 'warning');
const recordOf = async (pool: string) => ((await kube.state.getAll())[poolKey(pool)] ?? {}) as PoolRecord;

/** Rounds every minute for `minutes`, as the schedule runs them; the pools grown in each. */
async function rounds(minutes: number): Promise<Record<string, number>[]> {
  const out: Record<string, number>[] = [];
  for (let i = 0; i < minutes; i++) {
    await clock.advance(60_000);
    out.push((await autoscalePools(deps)).scaled);
  }
  return out;
}

describe('autoscale-pools: a scale-out is followed until its nodes arrive', () => {
  it('sizes a pool by the type when its member advertises no GPU (driver or device plugin down), not as GPU-less', async () => {
    // The pool's one member lost its GPUs from allocatable: a node of the pool is still bought as a GPU node.
    kube.cluster.nodes.get(sim.cloud.members('np-t4')[0]!.nodeName)!.allocatable = { ...NO_GPU };
    kube.cluster.pod('ml', 'serving')!.nodeName = undefined;
    kube.cluster.pod('ml', 'serving')!.phase = 'Succeeded';
    pendingGpuPods(2);
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.unhostable).toBe(0);
    expect(out.scaled).toEqual({ 'np-t4': 3 });
  });

  it('does not count new nodes that joined without GPUs as arrived, nor buy more of them meanwhile', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 3 });
    // ACK's task ends successfully and both nodes join Ready, but their device plugin advertises no GPU.
    await clock.advance(180_000);
    join(NO_GPU);
    const after = await rounds(5);
    // Past the cooldown, within the provision time: the GPUs may still be coming (driver install), nothing more bought.
    expect(after).toEqual([{}, {}, {}, {}, {}]);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(warnings()).toEqual([]);
  });

  it('tells a person once, and uses another pool, when the new nodes still advertise no GPUs after 15 min', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    await autoscalePools(deps);
    await clock.advance(180_000);
    join(NO_GPU);
    const after = await rounds(14);
    expect(after.slice(0, 11)).toEqual(Array(11).fill({}));
    // 15 min after the request (cluster-autoscaler's max-node-provision-time): the t4 nodes are not coming.
    expect(after.slice(11).find((s) => Object.keys(s).length > 0)).toEqual({ 'np-a10': 2 });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(warnings().map((n) => n.title)).toEqual([
      'gpu-reflex: node pool t4 grew 1 → 3 but its new nodes are not ready with GPUs after 15 min',
    ]);
    expect(warnings()[0]!.text).toContain('2 joined Ready without advertising GPUs');
  });

  it('tells a person once, and uses another pool, when the nodes ACK says it added never join the cluster', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    await autoscalePools(deps);
    const after = await rounds(20);
    expect(after.filter((s) => Object.keys(s).length > 0)).toEqual([{ 'np-a10': 2 }]);
    expect(warnings().map((n) => n.title)).toEqual([
      'gpu-reflex: node pool t4 grew 1 → 3 but its new nodes are not ready with GPUs after 15 min',
    ]);
    expect(warnings()[0]!.text).toContain('2 never joined the cluster');
  });

  it('forgets a scale-out once its nodes have joined Ready with GPUs: nothing told', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    await autoscalePools(deps);
    await clock.advance(180_000);
    join(GPU_NODE);
    for (const [i, m] of sim.cloud.members('np-t4').slice(1).entries())
      Object.assign(kube.cluster.pod('ml', `infer-${i}`)!, { nodeName: m.nodeName, phase: 'Running' });
    await rounds(20);
    expect((await recordOf('np-t4')).growing).toBeUndefined();
    expect(warnings()).toEqual([]);
  });

  it('follows a size a person lowered in the console: the nodes no longer asked for are not awaited', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    await autoscalePools(deps);
    // Someone sets the pool back to 2 before the second node is made; the one that is made joins with its GPU.
    sim.cloud.setDesired('np-t4', 2);
    kube.cluster.pod('ml', 'infer-1')!.phase = 'Succeeded';
    await clock.advance(180_000);
    join(GPU_NODE);
    Object.assign(kube.cluster.pod('ml', 'infer-0')!, { nodeName: sim.cloud.members('np-t4')[1]!.nodeName });
    kube.cluster.pod('ml', 'infer-0')!.phase = 'Running';
    await rounds(20);
    expect(warnings()).toEqual([]);
    expect((await recordOf('np-t4')).growing).toBeUndefined();
  });

  it("does not take a node of a size someone else raised as ours: the pool's missing node is still told", async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 2 });
    // A person raises the pool to 3 in the console; only one of the two new instances ever joins (with its GPU).
    sim.cloud.setDesired('np-t4', 3);
    await clock.advance(180_000);
    const [, first] = sim.cloud.members('np-t4');
    kube.cluster.addNode({ name: first!.nodeName, labels: T4_LABELS, allocatable: GPU_NODE });
    Object.assign(kube.cluster.pod('ml', 'infer-0')!, { nodeName: first!.nodeName, phase: 'Running' });
    // Another pod comes: the pool's third node, which never joins, is not capacity on its way for good.
    kube.cluster.addPod({
      name: 'infer-late',
      namespace: 'ml',
      uid: 'infer-late',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2, memory: 8 * 2 ** 30 },
      createdAt: new Date(clock.now()).toISOString(),
    });
    const after = await rounds(20);
    // Before, the joined node was counted as the one gpu-reflex asked for: the record was forgotten, the missing
    // node counted as on its way for good (the pod waited behind it), and no one was told.
    expect((await recordOf('np-t4')).growing).toBeDefined();
    expect(after.filter((x) => Object.keys(x).length > 0)).toEqual([{ 'np-a10': 1 }]);
    expect(warnings().map((n) => n.title)).toEqual([
      'gpu-reflex: node pool t4 grew 1 → 3 but its new nodes are not ready with GPUs after 15 min',
    ]);
    expect(warnings()[0]!.text).toContain('1 of the 2 nodes');
    expect(warnings()[0]!.text).toContain('1 never joined the cluster');
    expect(warnings()[0]!.text).toContain('raised to 3 by someone else');
  });

  it('gives a size a person raised after the pool was held its own 15 min before holding it again', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    // The node never joins: held at 15 min, a person told.
    await rounds(16);
    expect(warnings()).toHaveLength(1);
    // A person raises the pool by one to try again: the pool is awaited afresh, not held on the old deadline.
    sim.cloud.setDesired('np-t4', 3);
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect((await recordOf('np-t4')).growing).toMatchObject({ to: 3, at: clock.now() });
    // Both new instances join with their GPUs: the scale-out is done, the hold gone.
    await clock.advance(180_000);
    join(GPU_NODE);
    Object.assign(kube.cluster.pod('ml', 'infer-0')!, { nodeName: sim.cloud.members('np-t4')[1]!.nodeName });
    kube.cluster.pod('ml', 'infer-0')!.phase = 'Running';
    await rounds(2);
    expect((await recordOf('np-t4')).growing).toBeUndefined();
    expect(warnings()).toHaveLength(1);
  });

  it('grows for pods behind a member long NotReady: a broken node is not one on its way', async () => {
    // The pool is 2; its second node registered a day ago and went NotReady (kubelet down, host hung).
    sim.cloud.setDesired('np-t4', 2);
    await clock.advance(180_000);
    const dead = sim.cloud.members('np-t4')[1]!;
    const createdAt = new Date(T0 - 86_400_000).toISOString();
    kube.cluster.addNode({ name: dead.nodeName, labels: T4_LABELS, allocatable: GPU_NODE, ready: false, createdAt });
    pendingGpuPods(1);
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.awaitingInFlight).toBe(0);
    expect(out.scaled).toEqual({ 'np-t4': 3 });
  });

  it('still counts a node registered minutes ago and not yet Ready as on its way', async () => {
    sim.cloud.setDesired('np-t4', 2);
    await clock.advance(180_000);
    const booting = sim.cloud.members('np-t4')[1]!;
    const createdAt = new Date(clock.now() - 60_000).toISOString();
    kube.cluster.addNode({ name: booting.nodeName, labels: T4_LABELS, allocatable: NO_GPU, ready: false, createdAt });
    pendingGpuPods(1);
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.awaitingInFlight).toBe(1);
    expect(out.scaled).toEqual({});
  });
});
