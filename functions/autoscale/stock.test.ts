import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { GPU_POOL_SCALED, type GpuPoolScaledDetail } from '../../events/index.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL, type AutoscaleDeps } from './run.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

/**
 * Multi-type pools and stock-outs through the real SDK against the simulated region, whose scaling
 * groups take a pool's instance types in order and fall back to the next when one is sold out
 * (infra/local/alicloud/cloud.ts). A pool sold out through and through fails its scale-out
 * `OperationDenied.NoStock`; it is then passed over for cluster-autoscaler's backoff and another pool
 * takes the pods. A pool whose newest node is of a later type is planned and priced as that type.
 */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const MIN = 60_000;
let sim: AliCloudSim;
let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let deps: AutoscaleDeps;

async function start(stock: Record<string, number>) {
  const simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      bootSeconds: 60,
      stock,
      pools: [
        { id: 'np-t4', name: 't4', instanceTypes: ['ecs.gn6i-c4g1.xlarge', 'ecs.gn7i-c8g1.2xlarge'], size: 0 },
        { id: 'np-v100', name: 'v100', instanceTypes: ['ecs.gn6v-c8g1.2xlarge'], size: 0 },
      ],
    },
  });
  clock = manualClock(T0, (ms) => simClock.advance(ms));
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  deps = simDeps(
    sim,
    kube,
    clock,
    publisher,
    AutoscalePolicySchema.parse({
      pendingSeconds: 0,
      cooldownMinutes: 0,
      pools: { 'np-t4': { max: 4 }, 'np-v100': { max: 4 } },
    }),
  );
  kube.cluster.addPod({
    name: 'infer-0',
    namespace: 'ml',
    phase: 'Pending',
    scheduled: { status: 'False', reason: 'Unschedulable' },
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1, cpu: 2 },
    createdAt: new Date(T0).toISOString(),
  });
}
afterEach(() => sim.close());
const events = () =>
  publisher.published.filter((e) => e.detailType === GPU_POOL_SCALED).map((e) => e.detail as GpuPoolScaledDetail);

describe('multi-type pools and stock-outs', () => {
  it('a stock-out on the first type grows the pool with the next; then plans and prices it as that type', async () => {
    await start({ 'ecs.gn6i-c4g1.xlarge': 0 });
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 1 });
    await clock.advance(MIN);
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'succeeded' });
    const [inst] = sim.cloud.members('np-t4');
    expect(inst!.instanceType).toBe('ecs.gn7i-c8g1.2xlarge');
    // The node joins as an A10; a second pod comes; the pool is now planned as A10s (18/h), not T4s.
    kube.cluster.addNode({
      name: inst!.nodeName,
      labels: { [NODEPOOL_LABEL]: 'np-t4', 'node.kubernetes.io/instance-type': inst!.instanceType },
      allocatable: { 'nvidia.com/gpu': '1', cpu: '7500m', memory: '29Gi' },
      createdAt: new Date(clock.now()).toISOString(),
    });
    kube.cluster.pod('ml', 'infer-0')!.nodeName = inst!.nodeName;
    kube.cluster.pod('ml', 'infer-0')!.phase = 'Running';
    kube.cluster.addPod({
      name: 'infer-1',
      namespace: 'ml',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
      createdAt: new Date(clock.now()).toISOString(),
    });
    await clock.advance(3 * MIN);
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 2 });
    expect(events().at(-1)).toMatchObject({ from: 1, to: 2, hourlyCostDelta: { amount: 18 } });
  });

  it('a pool sold out through and through fails NoStock, is passed over for the backoff, and another grows', async () => {
    await start({ 'ecs.gn6i-c4g1.xlarge': 0, 'ecs.gn7i-c8g1.2xlarge': 0 });
    expect((await autoscalePools(deps)).scaled).toEqual({ 'np-t4': 1 });
    await clock.advance(MIN);
    const failed = await autoscalePools(deps);
    expect(failed.finished).toEqual({ 'np-t4': 'failed' });
    expect(events().find((e) => e.state === 'failed')!.reason).toContain('OperationDenied.NoStock');
    expect(failed.scaled).toEqual({ 'np-v100': 1 });
  });
});
