import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { GPU_POOL_SCALED, type GpuPoolScaledDetail } from '../../events/index.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { BadInputError, TransientError } from '../adapters/errors.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { REPLACEMENT_KEY_PREFIX } from '../lib/replacements.ts';
import { POOL_SIZE_LEASE } from '../adapters/alicloud/ports.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL, type AutoscaleDeps } from './run.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

/**
 * Scale-in through the real SDK against the simulated region: a T4 pool of four, one node busy
 * with a GPU pod, one holding a CPU-only pod, one held by remediation, one bare. After
 * idleMinutes the idle ones (not the remediation's, never under min) are cordoned and drained
 * through the Eviction API, then removed from the pool and released; GPU Pool Scaled says so.
 */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const MIN = 60_000;
let sim: AliCloudSim;
let simClock: VirtualClock;
let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let deps: AutoscaleDeps;
let names: string[];

beforeEach(async () => {
  simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      removeSeconds: 30,
      pools: [{ id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge'], size: 4 }],
    },
  });
  clock = manualClock(T0, (ms) => simClock.advance(ms));
  kube = fakeKube({ clock });
  names = sim.cloud.members('np-t4').map((i) => i.nodeName);
  for (const inst of sim.cloud.members('np-t4'))
    kube.cluster.addNode({
      name: inst.nodeName,
      providerId: `cn-hangzhou.${inst.id}`,
      labels: { [NODEPOOL_LABEL]: 'np-t4' },
      allocatable: { 'nvidia.com/gpu': '1', cpu: '3500m', memory: '14Gi' },
    });
  const [busy, withCpuPod, held] = names;
  kube.cluster.addPod({
    name: 'serve-0',
    namespace: 'ml',
    nodeName: busy,
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1 },
  });
  kube.cluster.addPod({
    name: 'sidecar',
    namespace: 'ml',
    nodeName: withCpuPod,
    requests: { cpu: 1 },
    owners: [{ kind: 'ReplicaSet', name: 'sidecar', controller: true }],
  });
  kube.cluster.addPod({
    name: 'agent-x',
    namespace: 'gpu-reflex',
    nodeName: withCpuPod,
    owners: [{ kind: 'DaemonSet', name: 'agent' }],
  });
  await kube.nodes.setLabels(held!, { [STATE_LABEL]: 'draining' });
  publisher = new RecordingPublisher();
  deps = simDeps(
    sim,
    kube,
    clock,
    publisher,
    AutoscalePolicySchema.parse({ pools: { 'np-t4': { min: 1, max: 6 } }, scaleIn: { idleMinutes: 10 } }),
  );
});
afterEach(() => sim.close());

const events = () =>
  publisher.published.filter((e) => e.detailType === GPU_POOL_SCALED).map((e) => e.detail as GpuPoolScaledDetail);

describe('autoscale-pools gives idle nodes back', () => {
  it('drains the idle nodes after idleMinutes, then removes and releases them, leaving the busy and the held', async () => {
    const [busy, withCpuPod, held, bare] = names as [string, string, string, string];
    expect((await autoscalePools(deps)).draining).toEqual([]);
    await clock.advance(9 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([]);
    await clock.advance(1 * MIN);
    const start = await autoscalePools(deps);
    expect(start.draining.sort()).toEqual([withCpuPod, bare].sort());
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(true);
    expect((await kube.nodes.get(busy)).unschedulable).toBe(false);
    expect((await kube.nodes.get(held)).unschedulable).toBe(false);
    // The CPU pod was evicted (the DaemonSet pod stays); once it is gone the nodes are given back.
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict').map((c) => c.args[1])).toEqual(['sidecar']);
    await clock.advance(MIN);
    const gone = await autoscalePools(deps);
    expect(gone.released.sort()).toEqual([withCpuPod, bare].sort());
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(1);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(2);
    const [shrink] = events();
    expect(shrink).toMatchObject({
      from: 4,
      to: 2,
      state: 'requested',
      hourlyCostDelta: { amount: -17, currency: 'CNY' },
    });
    expect(shrink!.reason).toContain('ran no GPU pod for 10 min');
    // ACK deletes the released instances' nodes; the shrink is told done once the rounds have seen them gone.
    kube.cluster.nodes.delete(withCpuPod);
    kube.cluster.nodes.delete(bare);
    await clock.advance(MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(events().map((e) => e.state)).toEqual(['requested', 'succeeded']);
    expect(sim.cloud.instances.size).toBe(2);
  });

  it('hands a node back when its removal task failed, tells a person, and tries again after idling', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    sim.cloud.inject({ action: 'RemoveNodePoolNodes', failTasks: 1 });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining.sort()).toEqual([withCpuPod, bare].sort());
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released.sort()).toEqual([withCpuPod, bare].sort());
    // The task fails (30 s later): both nodes are still in the pool, drained and cordoned by us.
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(sim.cloud.members('np-t4')).toHaveLength(4);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
    const back = notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'));
    expect(back.map((n) => n.title).sort()).toEqual(
      [`gpu-reflex: could not give back ${withCpuPod}`, `gpu-reflex: could not give back ${bare}`].sort(),
    );
    expect(back[0]!.text).toContain('RemoveNodesFailed');
    expect(notifier.notices.map((n) => n.title)).toContain('gpu-reflex: node pool t4 could not shrink');
    expect(back[0]!.text).toContain('uncordoned');
    // Told once; idle a full period again, they are drained and given back again.
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'))).toHaveLength(2);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining.sort()).toEqual([withCpuPod, bare].sort());
  });

  it('hands a node back when ACK refused its removal and it is still in the pool after the drain timeout', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => {
        throw new BadInputError('removeNodes: InvalidParameter: the node pool is being upgraded');
      },
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released.sort()).toEqual([withCpuPod, bare].sort());
    // Refused, maybe as already under way (an answer lost): left cordoned while it may still go.
    await clock.advance(29 * MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(true);
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
    const back = notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'));
    expect(back).toHaveLength(2);
    expect(back[0]!.text).toContain('the node pool is being upgraded');
  });

  it('follows a removal whose task ACK no longer has by the nodes alone: handed back once still there after the drain timeout', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    // ACK answers the removal with a task it then purges (DescribeTaskInfo: 404) while the nodes stay in the pool.
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => ({ taskId: 'T-purged' }),
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released.sort()).toEqual([withCpuPod, bare].sort());
    // Before, every round from here failed on the NotFound, for good: the nodes stayed cordoned, no one told.
    await clock.advance(29 * MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(true);
    expect(notifier.notices.map((n) => n.title)).toContain(
      'gpu-reflex: node pool t4: ACK has no task T-purged any more',
    );
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
    const back = notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'));
    expect(back).toHaveLength(2);
    expect(back[0]!.text).toContain('ACK has no task T-purged for its removal any more');
    expect(notifier.notices.filter((n) => n.title.includes('has no task'))).toHaveLength(1);
  });

  it('hands a node back when its removal task ended success yet it is still in the pool after the drain timeout', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    // ACK answers the removal with a task that ends `success`, while the nodes (same names, same instances) stay.
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => ({ taskId: 'T-said-done' }),
      task: async (id: string) => (id === 'T-said-done' ? { id, state: 'success' as const } : cloud.task(id)),
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released.sort()).toEqual([withCpuPod, bare].sort());
    // Before the drain timeout it may still be on its way out.
    await clock.advance(29 * MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(true);
    // Before, it stayed cordoned here for good, and no one was told.
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
    const back = notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'));
    expect(back).toHaveLength(2);
    expect(back[0]!.text).toContain(
      'its removal task T-said-done ended, ACK said success, yet it is still in the pool',
    );
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'))).toHaveLength(2);
  });

  it('closes a shrink whose task said success, but left its nodes in the pool, as failed, naming them', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const cloud = deps.cloud;
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => ({ taskId: 'T-said-done' }),
      task: async (id: string) => (id === 'T-said-done' ? { id, state: 'success' as const } : cloud.task(id)),
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    await autoscalePools(deps);
    // ACK's task says success at once, but the nodes have not left: nothing is told done yet.
    const finished: Record<string, string>[] = [];
    for (let i = 0; i < 32; i++) {
      await clock.advance(MIN);
      finished.push((await autoscalePools(deps)).finished);
    }
    expect(sim.cloud.members('np-t4')).toHaveLength(4);
    // Before, the shrink was published `succeeded` the round after it was sent, while both nodes stayed in the pool.
    expect(events().map((e) => e.state)).toEqual(['requested', 'failed']);
    expect(finished.filter((f) => Object.keys(f).length > 0)).toEqual([{ 'np-t4': 'failed' }]);
    const closing = events()[1]!;
    expect(closing).toMatchObject({ from: 4, to: 2, taskId: 'T-said-done' });
    expect(closing.reason).toContain('ACK said its task T-said-done succeeded');
    expect(closing.reason).toContain(withCpuPod);
    expect(closing.reason).toContain(bare);
    expect(closing.reason).toContain('still in the pool');
  });

  it('closes a shrink as succeeded only once its nodes have left the pool', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    await autoscalePools(deps);
    // The task ends (30 s) but the node objects are still there: not told done.
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).finished).toEqual({});
    expect(events().map((e) => e.state)).toEqual(['requested']);
    // ACK deletes the nodes: the next rounds see them gone, then close the shrink.
    kube.cluster.nodes.delete(withCpuPod);
    kube.cluster.nodes.delete(bare);
    await clock.advance(MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'succeeded' });
    expect(events().map((e) => e.state)).toEqual(['requested', 'succeeded']);
  });

  it('tells a person once when a removal task is still running after the drain timeout, leaving the node cordoned', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => ({ taskId: 'T-stuck' }),
      task: async (id: string) => (id === 'T-stuck' ? { id, state: 'running' as const } : cloud.task(id)),
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released.sort()).toEqual([withCpuPod, bare].sort());
    const stuck = () => notifier.notices.filter((n) => n.title.includes('is still leaving node pool t4'));
    await clock.advance(29 * MIN);
    await autoscalePools(deps);
    expect(stuck()).toHaveLength(0);
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(
      stuck()
        .map((n) => n.title)
        .sort(),
    ).toEqual(
      [
        `gpu-reflex: ${withCpuPod} is still leaving node pool t4`,
        `gpu-reflex: ${bare} is still leaving node pool t4`,
      ].sort(),
    );
    expect(stuck()[0]!.text).toContain('T-stuck is still running 30 min later');
    // Told once; still cordoned, still followed.
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(stuck()).toHaveLength(2);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(true);
    expect(notifier.notices.filter((n) => n.title.startsWith('gpu-reflex: could not give back'))).toHaveLength(0);
  });

  it('says ACK refused a removal, and why, in its event and notice (still taken as maybe under way)', async () => {
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      removeNodes: async () => {
        throw new BadInputError('removeNodes: InvalidParameter: the node pool is being upgraded');
      },
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    await autoscalePools(deps);
    const [shrink] = events();
    expect(shrink).toMatchObject({ from: 4, to: 2, state: 'requested' });
    expect(shrink!.taskId).toBeUndefined();
    expect(shrink!.reason).toContain('ran no GPU pod for 10 min');
    expect(shrink!.reason).toContain(
      'ACK refused the removal (removeNodes: InvalidParameter: the node pool is being upgraded)',
    );
    const notice = notifier.notices.find((n) => n.title.includes('node pool t4 4 → 2'))!;
    expect(notice.title).toBe('gpu-reflex: ACK refused shrinking node pool t4 4 → 2');
    expect(notice.severity).toBe('warning');
    expect(notice.text).toContain('the node pool is being upgraded');
    expect(notice.text).toContain('30 min');
  });

  it('says so when ACK answers a removal with no task id, and does not call it a refusal', async () => {
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    const cloud = deps.cloud;
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, { removeNodes: async () => ({ taskId: '' }) });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    await autoscalePools(deps);
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(events()[0]!.reason).toContain('ACK answered the removal with no task to follow');
    const notice = notifier.notices.find((n) => n.title.includes('node pool t4 4 → 2'))!;
    expect(notice.title).toBe('gpu-reflex: shrinking node pool t4 4 → 2: ACK gave no task');
    expect(notice.severity).toBe('warning');
  });

  it('counts a GPU pod still terminating as GPU use: its node is not idle while it shuts down', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    // A training pod deleted with an hour to write its checkpoint: it holds its GPU until its containers stop.
    kube.cluster.addPod({
      name: 'train-0',
      namespace: 'ml',
      nodeName: bare,
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: 3600,
      owners: [{ kind: 'Job', name: 'train', controller: true }],
    });
    kube.cluster.terminate(kube.cluster.pod('ml', 'train-0')!);
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released).toEqual([withCpuPod]);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
  });

  it('gives a drained node back only once its evicted pods are gone, not while they shut down', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    kube.cluster.addPod({
      name: 'serve-1',
      namespace: 'ml',
      nodeName: bare,
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
    });
    kube.cluster.pod('ml', 'sidecar')!.terminationGracePeriodSeconds = 300;
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).released).toEqual([]);
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(0);
    await clock.advance(4 * MIN);
    expect((await autoscalePools(deps)).released).toEqual([withCpuPod]);
  });

  it('never gives back a node whose pod holds its GPU through a DRA claim (no nvidia.com/gpu to count)', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    // A DRA pod: its GPU is a ResourceClaim's device, and the node advertises no nvidia.com/gpu for it.
    kube.cluster.addPod({
      name: 'dra-serve-0',
      namespace: 'ml',
      nodeName: bare,
      resourceClaims: 1,
      owners: [{ kind: 'ReplicaSet', name: 'dra-serve', controller: true }],
    });
    await autoscalePools(deps); // idle time counts from the first look
    await clock.advance(10 * MIN);
    const start = await autoscalePools(deps);
    expect(start.draining).toEqual([withCpuPod]);
    expect((await kube.nodes.get(bare)).unschedulable).toBe(false);
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict').map((c) => c.args[1])).not.toContain('dra-serve-0');
  });

  it('keeps every node while a waiting GPU pod could run on the pool', async () => {
    kube.cluster.addPod({
      name: 'embed-0',
      namespace: 'ml',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
      createdAt: new Date(T0).toISOString(),
    });
    await autoscalePools(deps);
    await clock.advance(15 * MIN);
    const out = await autoscalePools(deps);
    expect(out.draining).toEqual([]);
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(0);
  });

  // cluster-autoscaler's scale-down rules (drainable.ts): each pod keeps the idle node it runs on.
  it.each([
    ['a bare pod', { owners: [] }, 'it has no controller, nothing would recreate it (a bare pod)'],
    [
      'safe-to-evict "false"',
      { annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict': 'false' } },
      'cluster-autoscaler.kubernetes.io/safe-to-evict: "false"',
    ],
    [
      "Karpenter's do-not-disrupt",
      { annotations: { 'karpenter.sh/do-not-disrupt': 'true' } },
      'karpenter.sh/do-not-disrupt: "true"',
    ],
    [
      'a disk-backed emptyDir',
      { localVolumes: [{ name: 'scratch', kind: 'emptyDir' }] },
      'local storage (emptyDir volume scratch)',
    ],
    ['a hostPath', { localVolumes: [{ name: 'logs', kind: 'hostPath' }] }, 'local storage (hostPath volume logs)'],
    ['a pod that fits on no other node', { nodeSelector: { only: 'here' } }, 'it fits on no other node'],
  ])('keeps an idle node that runs %s, and the shrink event says why', async (_, extra, why) => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    Object.assign(kube.cluster.pod('ml', 'sidecar')!, extra);
    await kube.nodes.setLabels(withCpuPod, { only: 'here' });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    const start = await autoscalePools(deps);
    expect(start.draining).toEqual([bare]);
    expect(start.kept).toContainEqual({ node: withCpuPod, why: `ml/sidecar blocks its removal: ${why}` });
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict')).toEqual([]);
    await clock.advance(MIN);
    await autoscalePools(deps);
    const [shrink] = events();
    expect(shrink).toMatchObject({ from: 4, to: 3, state: 'requested' });
    expect(shrink!.reason).toContain(`${withCpuPod} kept: ml/sidecar blocks its removal: ${why}`);
  });

  it('lets a pod go that is safe to evict, a memory-backed emptyDir, or a local volume named safe', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    Object.assign(kube.cluster.pod('ml', 'sidecar')!, {
      owners: [],
      annotations: {
        'cluster-autoscaler.kubernetes.io/safe-to-evict': 'true',
        'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes': 'cache',
      },
    });
    kube.cluster.addPod({
      name: 'tmpfs',
      namespace: 'ml',
      nodeName: withCpuPod,
      owners: [{ kind: 'ReplicaSet', name: 'tmpfs', controller: true }],
      localVolumes: [{ name: 'shm', kind: 'emptyDir', medium: 'Memory' }],
      annotations: { 'cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes': 'cache' },
    });
    kube.cluster.pod('ml', 'tmpfs')!.localVolumes!.push({ name: 'cache', kind: 'hostPath' });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining.sort()).toEqual([withCpuPod, bare].sort());
  });

  it('keeps a node running a kube-system pod (gpu-reflex reads no disruption budgets)', async () => {
    const [, withCpuPod] = names as [string, string];
    Object.assign(kube.cluster.pod('ml', 'sidecar')!, { namespace: 'kube-system' });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    const out = await autoscalePools(deps);
    expect(out.kept.map((k) => k.node)).toContain(withCpuPod);
    expect(out.kept.find((k) => k.node === withCpuPod)!.why).toContain('a kube-system pod');
  });

  it('gives a node back to scheduling when its drain is blocked past the timeout, and tries again only after another idle period', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    // Only the node with the CPU pod is idle; a disruption budget keeps that pod where it is.
    kube.cluster.addPod({
      name: 'serve-1',
      namespace: 'ml',
      nodeName: bare,
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
    });
    kube.cluster.pod('ml', 'sidecar')!.labels = { app: 'sidecar' };
    kube.cluster.addPdb({ namespace: 'ml', matchLabels: { app: 'sidecar' }, minAvailable: 1 });
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    deps.policy = AutoscalePolicySchema.parse({
      pools: { 'np-t4': { min: 1, max: 6 } },
      scaleIn: { idleMinutes: 10, drainTimeoutMinutes: 5 },
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    await clock.advance(4 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(true);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([]);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect(notifier.notices.map((n) => n.title)).toEqual([`gpu-reflex: could not give back ${withCpuPod}`]);
    expect(notifier.notices[0]!.text).toContain('still runs 1 pod(s) after 5 min of draining (ml/sidecar');
    await clock.advance(9 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([]);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(0);
  });

  it("never lifts remediation's hold on a node it was draining: handed back only once remediation lets it go", async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    kube.cluster.addPod({
      name: 'serve-1',
      namespace: 'ml',
      nodeName: bare,
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
    });
    kube.cluster.pod('ml', 'sidecar')!.labels = { app: 'sidecar' };
    kube.cluster.addPdb({ namespace: 'ml', matchLabels: { app: 'sidecar' }, minAvailable: 1 });
    const notifier = new RecordingNotifier();
    deps.notifier = notifier;
    deps.policy = AutoscalePolicySchema.parse({
      pools: { 'np-t4': { min: 1, max: 6 } },
      scaleIn: { idleMinutes: 10, drainTimeoutMinutes: 5 },
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    // An XID on the idle node's GPU: remediation takes it (its state label) while gpu-reflex drains it.
    await kube.nodes.setLabels(withCpuPod, { [STATE_LABEL]: 'draining' });
    await clock.advance(5 * MIN);
    await autoscalePools(deps);
    // Before, the drain's timeout uncordoned it here: a node remediation holds for a GPU fault took pods again.
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(true);
    expect(notifier.notices).toEqual([]);
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(true);
    // Remediation returns it healthy: the cordon was gpu-reflex's (remediation leaves a cordon it did not make), so
    // it is lifted now, and a person told.
    await kube.nodes.setLabels(withCpuPod, { [STATE_LABEL]: 'healthy' });
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(false);
    expect(notifier.notices.map((n) => n.title)).toEqual([`gpu-reflex: could not give back ${withCpuPod}`]);
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(0);
  });

  it("never takes a pool under its minimum by its desired size: nodes ACK is still removing are not the pool's", async () => {
    const cloud = deps.cloud;
    // A person lowered the pool to 2 in the console: ACK has yet to remove two of its four nodes.
    deps.cloud = Object.assign(Object.create(cloud) as typeof cloud, {
      listNodePools: async () =>
        (await cloud.listNodePools()).map((p) => (p.id === 'np-t4' ? { ...p, desiredSize: 2 } : p)),
    });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    // Before, both idle nodes were drained (counted against the 4 nodes there, not the 2 asked for), then removed:
    // RemoveNodePoolNodes lowers the desired size, 2 → 0, under the pool's minimum of 1.
    const start = await autoscalePools(deps);
    expect(start.draining).toHaveLength(1);
    expect(start.kept.map((k) => k.why)).toContain('t4 is at its minimum of 1 nodes');
    await clock.advance(MIN);
    await autoscalePools(deps);
    expect(events()[0]).toMatchObject({ from: 2, to: 1, state: 'requested' });
  });

  it('cordons a node on the record as leaving whose cordon a failed round never made', async () => {
    const [, withCpuPod, , bare] = names as [string, string, string, string];
    // Only the node with the CPU pod is idle; a disruption budget keeps that pod there a while.
    kube.cluster.addPod({
      name: 'serve-1',
      namespace: 'ml',
      nodeName: bare,
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1 },
    });
    kube.cluster.pod('ml', 'sidecar')!.labels = { app: 'sidecar' };
    kube.cluster.addPdb({ namespace: 'ml', matchLabels: { app: 'sidecar' }, minAvailable: 1 });
    await autoscalePools(deps);
    await clock.advance(10 * MIN);
    // The cordon after the record is refused: the node is on the record as leaving, still schedulable.
    const nodes = deps.nodes;
    let refused = false;
    deps.nodes = {
      list: () => nodes.list(),
      uncordon: (name) => nodes.uncordon(name),
      cordon: async (name) => {
        if (refused) return nodes.cordon(name);
        refused = true;
        throw new TransientError('PATCH node: the API server is unreachable');
      },
    };
    await expect(autoscalePools(deps)).rejects.toThrow(TransientError);
    await clock.advance(1 * MIN);
    // Drained, it must take no new pod meanwhile (a GPU pod landing there would be evicted in turn).
    expect((await autoscalePools(deps)).draining).toEqual([withCpuPod]);
    expect((await kube.nodes.get(withCpuPod)).unschedulable).toBe(true);
  });

  it('gives back no node of a pool remediation is replacing a node of, and starts their idle time over after', async () => {
    const [, withCpuPod, held, bare] = names as [string, string, string, string];
    const record = { node: held, incident: `${held}/gpu/xid-79`, pool: 'np-t4', instanceId: 'i-held', since: T0 };
    await kube.state.update(`${REPLACEMENT_KEY_PREFIX}${held}`, () => record);
    await autoscalePools(deps);
    await clock.advance(15 * MIN);
    // Idle for 15 min, but the new node (and every other) stays while the replacement runs.
    expect((await autoscalePools(deps)).draining).toEqual([]);
    expect(sim.cloud.calls.filter((c) => c.action === 'RemoveNodePoolNodes')).toHaveLength(0);
    // The replacement is done (the sweep forgot its record): idle time counts from now, not from before.
    await kube.state.update(`${REPLACEMENT_KEY_PREFIX}${held}`, () => undefined);
    await autoscalePools(deps);
    await clock.advance(9 * MIN);
    expect((await autoscalePools(deps)).draining).toEqual([]);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).draining.sort()).toEqual([withCpuPod, bare].sort());
  });

  it("never lowers a pool when it sends an earlier size again: a size above it is a replacement's node", async () => {
    // An intent to grow 4 → 5 was recorded, and its answer lost; since then a replacement asked for 6.
    await kube.state.update('autoscale.np-t4', () => ({
      intent: { from: 4, to: 5, at: T0, reason: 'pods', cost: 8.5 },
    }));
    await deps.cloud.setDesiredSize('np-t4', 6);
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(6);
    expect(sim.cloud.members('np-t4')).toHaveLength(6);
  });

  it('sets no size while remediation holds the pool-size Lease for a replacement', async () => {
    await autoscalePools(deps);
    await clock.advance(15 * MIN);
    const before = sim.cloud.calls.length;
    await kube.leases.tryAcquire(POOL_SIZE_LEASE, 'remediate-sweep', 60, clock);
    // Idle long enough to give nodes back, but the round waits for the Lease: no call at all.
    expect(await autoscalePools(deps)).toMatchObject({ draining: [], released: [] });
    expect(sim.cloud.calls.slice(before)).toEqual([]);
    await kube.leases.release(POOL_SIZE_LEASE, 'remediate-sweep');
    expect((await autoscalePools(deps)).draining).not.toEqual([]);
  });
});
