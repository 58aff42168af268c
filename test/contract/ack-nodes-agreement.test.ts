/**
 * ACK's node labels as the simulated cloud writes them (infra/local/alicloud/ack-nodes.ts, from
 * Alibaba's docs) against the functions that read them. The names must agree; where the
 * functions read a label's value otherwise than ACK documents it, the case is a finding.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { NODEPOOL_LABEL } from '../../functions/adapters/alicloud/ports.ts';
import { RecordingPublisher } from '../../functions/adapters/bus.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { fakeKube } from '../../functions/adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../../functions/lib/pool-policy.ts';
import { autoscalePools, GPU_SHARE_LABEL } from '../../functions/autoscale/run.ts';
import { simDeps } from '../../functions/autoscale/testing.ts';
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

describe('finding: the autoscaler reads ack.node.gpu.schedule=default, ACK’s exclusive mode, as GPU sharing (issue #28)', () => {
  let sim: AliCloudSim | undefined;
  afterEach(() => sim?.close());

  /** Whether autoscale-pools grows an empty A10 pool with these labels for two waiting whole-GPU pods. */
  async function grows(labels: Record<string, string>): Promise<boolean> {
    const simClock = new VirtualClock(T0);
    sim = await startAliCloudSim({
      clock: simClock,
      cloud: {
        bootSeconds: 120,
        pools: [{ id: 'np-a10', name: 'a10', instanceTypes: ['ecs.gn7i-c8g1.2xlarge'], size: 0, labels }],
      },
    });
    const clock = manualClock(T0, (ms) => simClock.advance(ms));
    const kube = fakeKube({ clock });
    for (const i of [0, 1])
      kube.cluster.addPod({
        name: `infer-${i}`,
        namespace: 'ml',
        uid: `infer-${i}`,
        phase: 'Pending',
        extendedResources: { 'nvidia.com/gpu': 1 },
        requests: { 'nvidia.com/gpu': 1, cpu: 2, memory: 8 * 2 ** 30 },
        createdAt: new Date(T0).toISOString(),
      });
    const deps = simDeps(
      sim,
      kube,
      clock,
      new RecordingPublisher(),
      AutoscalePolicySchema.parse({ pendingSeconds: 60, pools: { 'np-a10': { max: 2 } } }),
    );
    await clock.advance(60_000);
    const out = await autoscalePools(deps);
    await sim.close();
    sim = undefined;
    return Object.keys(out.scaled).includes('np-a10');
  }

  it('a node of such a pool offers whole GPUs in the simulated cloud, as on ACK', () => {
    expect(gpuResources('default', 1, 24)).toEqual({ 'nvidia.com/gpu': '1' });
  });

  it('grows the pool without the label, and not with it: whole-GPU pods look unable to fit', async () => {
    expect({ unlabelled: await grows({}), default: await grows({ [ACK_GPU_SCHEDULE_LABEL]: 'default' }) }).toEqual({
      unlabelled: true,
      default: false,
    });
  });
});
