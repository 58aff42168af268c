import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { GPU_POOL_SCALED, type GpuPoolScaledDetail } from '../../events/index.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { BadInputError, TransientError } from '../adapters/errors.ts';
import { nodePoolFrom, taskFrom } from '../adapters/alicloud/records.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { decideHeldPlan, type CommandPorts } from '../chatops/actions.ts';
import { autoscalePools, NODEPOOL_LABEL, scaleOutApprovalId, type AutoscaleDeps } from './run.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
let sim: AliCloudSim;
let simClock: VirtualClock;
let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let notifier: RecordingNotifier;
let deps: AutoscaleDeps;

beforeEach(async () => {
  simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      bootSeconds: 120,
      pools: [
        {
          id: 'np-t4',
          name: 't4',
          instanceTypes: ['ecs.gn6i-c4g1.xlarge'],
          size: 1,
          labels: { 'gpu-reflex.io/pool': 't4' },
        },
        { id: 'np-a10', name: 'a10', instanceTypes: ['ecs.gn7i-c8g1.2xlarge'], size: 0 },
        {
          id: 'np-ack-managed',
          name: 'managed',
          instanceTypes: ['ecs.gn6i-c4g1.xlarge'],
          autoScaling: { enable: true, min: 0, max: 9 },
        },
        { id: 'np-not-ours', name: 'other', instanceTypes: ['ecs.gn6i-c4g1.xlarge'] },
      ],
    },
  });
  clock = manualClock(T0, (ms) => simClock.advance(ms));
  kube = fakeKube({ clock });
  const [t4] = sim.cloud.members('np-t4');
  kube.cluster.addNode({
    name: t4!.nodeName,
    labels: { [NODEPOOL_LABEL]: 'np-t4', 'gpu-reflex.io/pool': 't4' },
    allocatable: { 'nvidia.com/gpu': '1', cpu: '3500m', memory: '14Gi' },
  });
  // Its GPU is busy: a waiting pod has no room on it (existing-room.ts).
  kube.cluster.addPod({
    name: 'serving',
    namespace: 'ml',
    nodeName: t4!.nodeName,
    phase: 'Running',
    owners: [{ kind: 'ReplicaSet', name: 'serving', controller: true }],
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1, cpu: 2 },
  });
  publisher = new RecordingPublisher();
  notifier = new RecordingNotifier();
  deps = {
    ...simDeps(
      sim,
      kube,
      clock,
      publisher,
      AutoscalePolicySchema.parse({
        pendingSeconds: 60,
        cooldownMinutes: 3,
        pools: { 'np-t4': { max: 4, maxStep: 4 }, 'np-a10': { max: 2 }, 'np-ack-managed': { max: 9 } },
      }),
    ),
    notifier,
  };
});
afterEach(() => sim.close());

const pendingGpuPods = (n: number, prefix = 'infer', extra: object = {}) => {
  for (let i = 0; i < n; i++)
    kube.cluster.addPod({
      name: `${prefix}-${i}`,
      namespace: 'ml',
      uid: `${prefix}-${i}`,
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2, memory: 8 * 2 ** 30 },
      createdAt: new Date(T0).toISOString(),
      ...extra,
    });
};
const poolEvents = () =>
  publisher.published.filter((e) => e.detailType === GPU_POOL_SCALED).map((e) => e.detail as GpuPoolScaledDetail);

describe('autoscale-pools', () => {
  it('grows the cheapest pool for GPU pods that have waited, publishes GPU Pool Scaled, then reports the task done', async () => {
    pendingGpuPods(3);
    // Not yet waited 60 s: nothing.
    expect((await autoscalePools(deps)).scaled).toEqual({});
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({ 'np-t4': 4 });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(4);
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(1);
    const [requested] = poolEvents();
    expect(requested).toMatchObject({
      nodepoolId: 'np-t4',
      nodepoolName: 't4',
      from: 1,
      to: 4,
      state: 'requested',
      hourlyCostDelta: { amount: 25.5, currency: 'CNY' },
      instanceTypes: ['ecs.gn6i-c4g1.xlarge'],
      dryRun: false,
    });
    expect(requested!.reason).toContain(
      't4: 1 → 4 (3 for 3 pending pod(s)) at 8.5/h each: ml/infer-0, ml/infer-1, ml/infer-2',
    );
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: growing node pool t4 1 → 4']);
    // The pools no policy names, and the one ACK scales itself, are never written to.
    expect(
      sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool' || c.action === 'ScaleClusterNodePool'),
    ).toHaveLength(1);

    await clock.advance(120_000);
    const later = await autoscalePools(deps);
    expect(later.finished).toEqual({ 'np-t4': 'succeeded' });
    expect(poolEvents().map((e) => e.state)).toEqual(['requested', 'succeeded']);
    expect(poolEvents()[1]!.taskId).toBe(requested!.taskId);
  });

  it('buys nothing for pods the scheduler has not found unschedulable: gated, nominated, or not yet tried', async () => {
    pendingGpuPods(2, 'kueue', { schedulingGates: ['kueue.x-k8s.io/admission'] });
    pendingGpuPods(1, 'preemptor', { nominatedNodeName: 'some-node' });
    pendingGpuPods(1, 'fresh', { scheduled: undefined });
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({});
    expect(out.notDemand).toEqual({ gated: 2, nominated: 1, 'not-unschedulable': 1, fitsExisting: 0 });
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(0);
    // Kueue admits the workload: it lifts the gates, the scheduler tries and fails, and the pool grows.
    for (let i = 0; i < 2; i++)
      Object.assign(kube.cluster.pod('ml', `kueue-${i}`)!, {
        schedulingGates: undefined,
        scheduled: { status: 'False', reason: 'Unschedulable' },
      });
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 3 });
  });

  it('buys what a PodGroup needs to start (its minMember), read from the cluster, not every waiting pod', async () => {
    pendingGpuPods(4, 'train', { annotations: { 'scheduling.k8s.io/group-name': 'train' } });
    await clock.advance(60_000);
    const out = await autoscalePools({
      ...deps,
      gangs: {
        list: async () => ({
          podGroups: [{ metadata: { namespace: 'ml', name: 'train' }, spec: { minMember: 2 } }],
          workloads: [],
        }),
      },
    });
    expect(out.scaled).toEqual({ 'np-t4': 3 });
    expect(out.gangs.grown).toEqual({ 'PodGroup ml/train': 2 });
    expect(poolEvents()[0]!.reason).toMatch(/PodGroup ml\/train \(2 of its 4 waiting pods, what it needs to start/);
  });

  it('buys for every waiting pod of a gang whose PodGroup cannot be read (the gang surely starts)', async () => {
    pendingGpuPods(4, 'train', { annotations: { 'scheduling.k8s.io/group-name': 'train' } });
    await clock.advance(60_000);
    const blind = await autoscalePools({ ...deps, gangs: { list: () => Promise.reject(new Error('forbidden')) } });
    expect(blind.scaled).toEqual({ 'np-a10': 1, 'np-t4': 4 });
    expect(blind.gangs.grown).toEqual({ 'PodGroup ml/train': 4 });
  });

  it('buys nothing for a pod an existing node has room for', async () => {
    kube.cluster.pod('ml', 'serving')!.phase = 'Succeeded';
    pendingGpuPods(1);
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({});
    expect(out.notDemand.fitsExisting).toBe(1);
  });

  it('sizes new nodes by the type they will be, not by a member of another type', async () => {
    // The pool's member is a bigger, older type (two GPUs); ACK adds ecs.gn6i-c4g1.xlarge (one).
    const [t4] = sim.cloud.members('np-t4');
    kube.cluster.nodes.get(t4!.nodeName)!.labels['node.kubernetes.io/instance-type'] = 'ecs.gn6i-c24g1.12xlarge';
    Object.assign(kube.cluster.nodes.get(t4!.nodeName)!.allocatable, {
      'nvidia.com/gpu': '2',
      cpu: '46',
      memory: '180Gi',
    });
    pendingGpuPods(3);
    await clock.advance(60_000);
    // One pod has room on the member's second GPU; the other two get one one-GPU node each.
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({ 'np-t4': 3 });
    expect(out.notDemand.fitsExisting).toBe(1);
    expect(poolEvents()[0]!.reason).toContain('t4: 1 → 3 (2 for 2 pending pod(s))');
  });

  it("holds a scale-out above the policy's hourly cost for approval in chat: asked once, carried out once approved", async () => {
    deps = { ...deps, policy: AutoscalePolicySchema.parse({ ...deps.policy, approval: { aboveHourlyCost: 20 } }) };
    pendingGpuPods(3);
    await clock.advance(60_000);
    // 3 nodes at 8.5/h = 25.5/h, above 20/h: asked, not grown.
    expect(await autoscalePools(deps)).toMatchObject({ scaled: {}, held: { 'np-t4': 4 } });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(1);
    expect(notifier.notices).toEqual([
      expect.objectContaining({
        title: 'gpu-reflex: approve growing node pool t4 1 → 4 (+25.5/h)?',
        approval: { id: scaleOutApprovalId(deps.clusterId, 'np-t4', 1, 4) },
      }),
    ]);
    const id = notifier.notices[0]!.approval!.id;
    expect(notifier.notices[0]!.text).toContain(
      `above the 20/h the policy lets the autoscaler spend alone. Answer "approve ${id}" or "deny ${id}" within 30 min`,
    );
    await clock.advance(60_000);
    expect((await autoscalePools(deps)).held).toEqual({ 'np-t4': 4 });
    expect(notifier.notices).toHaveLength(1);
    const chat = { kube, clock } as unknown as CommandPorts;
    expect(await decideHeldPlan(chat, id, 'approved', 'slack:U-OPS')).toEqual({
      answer: `approved ${id}: autoscale-pools grows np-t4 1 → 4 at its next round, if its plan is still that`,
      decided: true,
    });
    expect(await autoscalePools(deps)).toMatchObject({ scaled: { 'np-t4': 4 }, held: {} });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(4);
    expect(poolEvents().map((e) => [e.from, e.to, e.state])).toEqual([[1, 4, 'requested']]);
  });

  it('grows nothing that was denied, nor asks again for the same plan; cheaper plans go ahead alone', async () => {
    deps = {
      ...deps,
      policy: AutoscalePolicySchema.parse({ ...deps.policy, approval: { aboveHourlyCost: 20, ttlMinutes: 10 } }),
    };
    pendingGpuPods(3);
    await clock.advance(60_000);
    await autoscalePools(deps);
    const id = notifier.notices[0]!.approval!.id;
    expect(
      (await decideHeldPlan({ kube, clock } as unknown as CommandPorts, id, 'rejected', 'slack:U-OPS'))!.answer,
    ).toBe(`rejected ${id}: np-t4 is not grown to 4; that plan is not asked about again`);
    await clock.advance(60_000);
    expect(await autoscalePools(deps)).toMatchObject({ scaled: {}, held: { 'np-t4': 4 } });
    expect(notifier.notices).toHaveLength(1);
    // Two of the pods go: 1 → 2 adds 8.5/h, under the limit, and goes ahead without asking.
    for (const name of ['infer-1', 'infer-2']) kube.cluster.terminate(kube.cluster.pod('ml', name)!, 0);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 2 });
    expect(notifier.notices.map((n) => n.title)).toEqual([
      'gpu-reflex: approve growing node pool t4 1 → 4 (+25.5/h)?',
      'gpu-reflex: growing node pool t4 1 → 2',
    ]);
  });

  it('asks for nothing more while the nodes boot, however often it runs', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    await autoscalePools(deps);
    for (let i = 0; i < 3; i++) {
      await clock.advance(20_000);
      expect((await autoscalePools(deps)).scaled).toEqual({});
    }
    // Even after the cooldown, the two nodes on their way are counted for the two pods.
    await clock.advance(200_000);
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({});
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(1);
  });

  it('holds a pool through its cooldown, and says why the pods wait', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    // The node joined; a new wave arrives within the cooldown.
    const [, fresh] = sim.cloud.members('np-t4');
    kube.cluster.addNode({
      name: fresh!.nodeName,
      labels: { [NODEPOOL_LABEL]: 'np-t4' },
      allocatable: { 'nvidia.com/gpu': '1', cpu: '3500m', memory: '14Gi' },
    });
    pendingGpuPods(2, 'wave2', { createdAt: new Date(clock.now()).toISOString() });
    kube.cluster.addPod({ name: 'infer-0-bound', namespace: 'ml', uid: 'x', nodeName: fresh!.nodeName });
    await clock.advance(60_000);
    const held = await autoscalePools(deps);
    // t4 is cooling down: the a10 pool (18/h) takes the pods instead of nobody.
    expect(held.scaled).toEqual({ 'np-a10': 2 });
  });

  it('buys nothing it cannot price: a pool whose type Alibaba gives no price for is left alone, said so', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    const warnings: string[] = [];
    deps.logger = { ...deps.logger, warn: (m: string) => void warnings.push(m) };
    const real = deps.cloud;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      hourlyPrice: (t: string) => (t === 'ecs.gn6i-c4g1.xlarge' ? Promise.resolve(undefined) : real.hourlyPrice(t)),
    });
    const out = await autoscalePools(deps);
    // The t4 pool (its price unknown, not 0) is not the cheapest: the a10 pool takes the pods.
    expect(out.scaled).toEqual({ 'np-a10': 2 });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(1);
    expect(warnings).toContain(
      "autoscale-pools: Alibaba Cloud gives no price for the node pool's instance type; left alone",
    );
  });

  it('sets no size of a pool whose desired size ACK does not give: unknown is not 0, and a pool of 3 is not "grown" to 1', async () => {
    await deps.cloud.setDesiredSize('np-t4', 3);
    await clock.advance(120_000);
    pendingGpuPods(1);
    await clock.advance(60_000);
    const warnings: { m: string; f: unknown }[] = [];
    deps.logger = { ...deps.logger, warn: (m: string, f?: unknown) => void warnings.push({ m, f }) };
    const real = deps.cloud;
    // What the adapter reads from a DescribeClusterNodePools entry without `scaling_group.desired_size`.
    const unread = nodePoolFrom({ nodepool_info: { nodepool_id: 'np-t4' }, scaling_group: {} }).desiredSize;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      listNodePools: async () =>
        (await real.listNodePools()).map((p) => (p.id === 'np-t4' ? { ...p, desiredSize: unread } : p)),
    });
    const out = await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(out.scaled).toEqual({ 'np-a10': 1 });
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toEqual([]);
    expect(warnings).toContainEqual({
      m: 'autoscale-pools: ACK gives no desired size for the node pool; left alone (no size planned or set)',
      f: { pool: 'np-t4' },
    });
  });

  it('re-sends a decided size that may not have reached ACK (a crash between deciding and sending) before planning again', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    const real = deps.cloud;
    let calls = 0;
    deps.cloud = {
      ...real,
      listNodePools: () => real.listNodePools(),
      instanceTypes: (x) => real.instanceTypes(x),
      hourlyPrice: (x) => real.hourlyPrice(x),
      task: (x) => real.task(x),
      setDesiredSize: async () => {
        calls++;
        throw new Error('connection reset');
      },
    } as typeof real;
    await expect(autoscalePools(deps)).rejects.toThrow('connection reset');
    expect(calls).toBe(1);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(1);
    expect(poolEvents()).toEqual([]);
    deps.cloud = real;
    const retry = await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(retry.scaled).toEqual({});
    expect(poolEvents().map((e) => [e.state, e.from, e.to])).toEqual([['requested', 1, 3]]);
  });

  it('tells chat of a scale-out whose size a retry re-sent (the round stopped after the intent), once', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    const real = deps.cloud;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      setDesiredSize: () => Promise.reject(new TransientError('ModifyClusterNodePool: connection reset')),
    });
    await expect(autoscalePools(deps)).rejects.toThrow('connection reset');
    deps.cloud = real;
    await autoscalePools(deps);
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: growing node pool t4 1 → 3']);
  });

  it('publishes an event the bus refused on the next round, exactly once, without growing the pool again', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    let failures = 2;
    deps.publisher = {
      publish: async (events) =>
        failures-- > 0
          ? Promise.reject(new TransientError('publishing events: Region is missing'))
          : publisher.publish(events),
    };
    // The refusal is one the bus may lift: the round is not failed for it (the pool's record keeps the events).
    await autoscalePools(deps);
    await autoscalePools(deps);
    expect(poolEvents()).toEqual([]);
    await autoscalePools(deps);
    await autoscalePools(deps);
    expect(poolEvents().map((e) => [e.state, e.from, e.to])).toEqual([['requested', 1, 2]]);
    expect(sim.cloud.calls.filter((c) => c.action === 'ModifyClusterNodePool')).toHaveLength(1);
  });

  it('goes on scaling while the bus refuses every publish: the events wait in the pool records, nothing lost', async () => {
    // An EventBridge outage or throttling must not stop the reflex: pods would wait for GPUs the bus has no say in.
    const errors: string[] = [];
    deps.logger = { ...deps.logger, error: (m: string) => void errors.push(m) };
    deps.publisher = { publish: () => Promise.reject(new TransientError('PutEvents: ThrottlingException')) };
    pendingGpuPods(1);
    await clock.advance(60_000);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 2 });
    // A later wave, another round with the first round's event still unsent: still scaled.
    pendingGpuPods(2, 'wave2', { createdAt: new Date(clock.now()).toISOString() });
    await clock.advance(4 * 60_000);
    expect((await autoscalePools(deps)).scaled).not.toEqual({});
    expect(errors[0]).toContain('events not published');
    expect(poolEvents()).toEqual([]);
    // The bus is back: every event the rounds decided goes out, once.
    deps.publisher = publisher;
    await autoscalePools(deps);
    const sent = poolEvents().filter((e) => e.state === 'requested');
    expect(sent.length).toBeGreaterThanOrEqual(2);
    expect(new Set(sent.map((e) => e.eventId)).size).toBe(sent.length);
  });

  it("reports a failed scale-out once, with ACK's error, and tells chat", async () => {
    sim.cloud.inject({ action: 'ModifyClusterNodePool', failTasks: 1 });
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    await clock.advance(120_000);
    const out = await autoscalePools(deps);
    expect(out.finished).toEqual({ 'np-t4': 'failed' });
    const failed = poolEvents().find((e) => e.state === 'failed')!;
    expect(failed.reason).toContain('OperationDenied.NoStock');
    expect(notifier.notices.map((n) => n.title)).toContain('gpu-reflex: node pool t4 could not grow');
    await autoscalePools(deps);
    expect(poolEvents().filter((e) => e.state === 'failed')).toHaveLength(1);
  });

  it('never reads an ACK task in a state it does not know as done: keeps following it and tells a person once', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    const [requested] = poolEvents();
    // DescribeTaskInfo answers a word outside running | success | failed (a task cancelled in the console, say).
    const real = deps.cloud;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      task: async (id: string) => (id === requested!.taskId ? taskFrom(id, { state: 'canceled' }) : real.task(id)),
    });
    await clock.advance(120_000);
    expect((await autoscalePools(deps)).finished).toEqual({});
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(poolEvents().map((e) => e.state)).toEqual(['requested']);
    const odd = notifier.notices.filter((n) => n.title.includes('does not know'));
    expect(odd.map((n) => n.title)).toEqual([
      `gpu-reflex: node pool t4: ACK task ${requested!.taskId} is in a state gpu-reflex does not know`,
    ]);
    expect(odd[0]!.text).toContain("state 'canceled'");
    expect(odd[0]!.severity).toBe('warning');
    // Once ACK answers a state it documents, the request is reported as any other, once.
    deps.cloud = real;
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'succeeded' });
    expect(poolEvents().map((e) => e.state)).toEqual(['requested', 'succeeded']);
  });

  it('a task ACK no longer has stops no round and is not taken as done: told once, no longer followed', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    const [requested] = poolEvents();
    // ACK purged the task (DescribeTaskInfo answers 404): before, every round failed here, for every pool, forever.
    sim.cloud.tasks.delete(requested!.taskId!);
    pendingGpuPods(1, 'more');
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    // t4 cools down after its scale-out: the a10 pool takes the new pod; the round went on.
    expect(out.scaled).toEqual({ 'np-a10': 1 });
    expect(out.finished).toEqual({});
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(poolEvents().map((e) => [e.nodepoolId, e.state])).toEqual([
      ['np-t4', 'requested'],
      ['np-a10', 'requested'],
    ]);
    const gone = notifier.notices.filter((n) => n.title.includes('has no task'));
    expect(gone.map((n) => n.title)).toEqual([
      `gpu-reflex: node pool t4: ACK has no task ${requested!.taskId} any more`,
    ]);
    expect(gone[0]!.text).toContain('neither done nor failed');
    expect(gone[0]!.severity).toBe('warning');
  });

  it('asks ACK for no task when it answered a scale-out with none: told once, not followed', async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    const real = deps.cloud;
    const asked: string[] = [];
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      setDesiredSize: async (id: string, n: number) => (await real.setDesiredSize(id, n), { taskId: '' }),
      task: (id: string) => (asked.push(id), real.task(id)),
    });
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 2 });
    await clock.advance(60_000);
    await autoscalePools(deps);
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(asked).toEqual([]);
    const none = notifier.notices.filter((n) => n.title.includes('gave no task'));
    expect(none.map((n) => n.title)).toEqual(['gpu-reflex: node pool t4: ACK gave no task for growing 1 → 2']);
  });

  it('a size ACK refuses stops no round: told once as failed, not sent again every round', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    const real = deps.cloud;
    const refusal = 'ModifyClusterNodePool: InvalidParameter: the node pool is being upgraded';
    let asked = 0;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      setDesiredSize: (id: string, size: number) =>
        id === 'np-t4' ? (asked++, Promise.reject(new BadInputError(refusal))) : real.setDesiredSize(id, size),
    });
    // Before, the round threw here, and every round after threw again re-sending the refused size: no pool was grown,
    // drained or given back until ACK took it, and no one in chat was told.
    const out = await autoscalePools(deps);
    expect(out.scaled).toEqual({});
    expect(poolEvents().map((e) => [e.nodepoolId, e.state, e.from, e.to])).toEqual([['np-t4', 'failed', 1, 3]]);
    expect(poolEvents()[0]!.reason).toContain('the node pool is being upgraded');
    expect(notifier.notices.map((n) => [n.title, n.severity])).toEqual([
      ['gpu-reflex: ACK refused growing node pool t4 1 → 3', 'warning'],
    ]);
    // The pods go to a pool that takes them; the refused one is not asked again every round.
    await clock.advance(60_000);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-a10': 2 });
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(asked).toBe(1);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(1);
  });

  it('a size ACK refuses when it is sent again (the round that decided it stopped) is dropped and told once', async () => {
    pendingGpuPods(2);
    await clock.advance(60_000);
    const real = deps.cloud;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      setDesiredSize: () => Promise.reject(new TransientError('ModifyClusterNodePool: connection reset')),
    });
    await expect(autoscalePools(deps)).rejects.toThrow('connection reset');
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      setDesiredSize: (id: string, size: number) =>
        id === 'np-t4'
          ? Promise.reject(new BadInputError('ModifyClusterNodePool: QuotaExceeded: node quota'))
          : real.setDesiredSize(id, size),
    });
    // The round goes on: the pods go to the A10 pool.
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-a10': 2 });
    const t4 = () => poolEvents().filter((e) => e.nodepoolId === 'np-t4');
    expect(t4().map((e) => [e.state, e.from, e.to])).toEqual([['failed', 1, 3]]);
    expect(notifier.notices.map((n) => n.title)).toContain('gpu-reflex: ACK refused growing node pool t4 1 → 3');
    await clock.advance(60_000);
    await autoscalePools(deps);
    expect(t4()).toHaveLength(1);
    expect(notifier.notices.filter((n) => n.title.includes(' t4 '))).toHaveLength(1);
  });

  it("a task ACK cannot be asked about now stops no other pool's round, and is followed again after", async () => {
    pendingGpuPods(1);
    await clock.advance(60_000);
    await autoscalePools(deps);
    const [requested] = poolEvents();
    const real = deps.cloud;
    deps.cloud = Object.assign(Object.create(real) as typeof real, {
      task: (id: string) =>
        id === requested!.taskId
          ? Promise.reject(new TransientError('DescribeTaskInfo: ServiceUnavailable'))
          : real.task(id),
    });
    pendingGpuPods(1, 'more');
    await clock.advance(120_000);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-a10': 1 });
    deps.cloud = real;
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'succeeded' });
  });
});
