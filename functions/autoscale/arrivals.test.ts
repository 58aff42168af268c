import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL, type AutoscaleDeps } from './run.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

// A pool's nodes are GPU nodes: one that advertises no GPU (its driver or device plugin down) says nothing of what a
// new node of the pool will hold.
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
describe('autoscale-pools: a pool whose nodes advertise no GPU', () => {
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
});
