/**
 * `bench autoscale`, stock-out rows (issue #34): how often pending GPU pods get nodes when ECS has sold out of
 * instance types, through autoscale-pools on the simulated region (infra/local/alicloud: a scaling group takes its
 * instance types in their order and falls back to the next when one is sold out; a group sold out through and
 * through fails its task `OperationDenied.NoStock`), against a first-type-only baseline: the same fleet where each
 * node group has only its first type (cluster-autoscaler's model: one instance type per node group).
 *
 * Each trial is seeded: a 3-type pool and a 1-type pool, each type in stock for 0–3 instances, 1–4 pods of one GPU.
 * A trial succeeds when every pod runs within 20 rounds (a round a minute; the nodes join as the instances boot).
 */
import { VirtualClock } from '../events/clock.ts';
import { RecordingPublisher } from '../functions/adapters/bus.ts';
import { manualClock } from '../functions/adapters/clock.ts';
import { fakeKube } from '../functions/adapters/kube/fake.ts';
import { AutoscalePolicySchema } from '../functions/lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL } from '../functions/autoscale/run.ts';
import { startAliCloudSim } from '../infra/local/alicloud/index.ts';
import { mulberry32 } from '../infra/local/bus/router.ts';
import { simDeps } from '../test/support/autoscale-sim-deps.ts';
import { info, type Measurement } from './harness.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const MIN = 60_000;
const TYPES = ['ecs.gn6i-c4g1.xlarge', 'ecs.gn7i-c8g1.2xlarge', 'ecs.gn6v-c8g1.2xlarge'];
const OTHER = 'ecs.gn7e-c16g1.4xlarge';

export interface StockTrial {
  stock: Record<string, number>;
  pods: number;
}

export function stockTrials(n: number, seed = 34): StockTrial[] {
  const rnd = mulberry32(seed);
  return Array.from({ length: n }, () => ({
    stock: Object.fromEntries([...TYPES, OTHER].map((t) => [t, Math.floor(rnd() * 4)])),
    pods: 1 + Math.floor(rnd() * 4),
  }));
}

/** One trial: whether every pod ran within 20 rounds. `firstOnly`: the 3-type pool offers only its first type. */
export async function runStockTrial(t: StockTrial, firstOnly: boolean): Promise<boolean> {
  const simClock = new VirtualClock(T0);
  const sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      bootSeconds: 60,
      stock: t.stock,
      pools: [
        { id: 'np-multi', name: 'multi', instanceTypes: firstOnly ? TYPES.slice(0, 1) : TYPES, size: 0 },
        { id: 'np-other', name: 'other', instanceTypes: [OTHER], size: 0 },
      ],
    },
  });
  try {
    const clock = manualClock(T0, (ms) => simClock.advance(ms));
    const kube = fakeKube({ clock });
    const deps = simDeps(
      sim,
      kube,
      clock,
      new RecordingPublisher(),
      AutoscalePolicySchema.parse({
        pendingSeconds: 0,
        cooldownMinutes: 0,
        pools: { 'np-multi': { max: 4 }, 'np-other': { max: 4 } },
      }),
    );
    for (let i = 0; i < t.pods; i++)
      kube.cluster.addPod({
        name: `infer-${i}`,
        namespace: 'ml',
        phase: 'Pending',
        scheduled: { status: 'False', reason: 'Unschedulable' },
        extendedResources: { 'nvidia.com/gpu': 1 },
        requests: { 'nvidia.com/gpu': 1, cpu: 2 },
        createdAt: new Date(T0).toISOString(),
      });
    const joined = new Set<string>();
    for (let round = 0; round < 20; round++) {
      await autoscalePools(deps);
      await clock.advance(MIN);
      // The instances that booted join as nodes; a waiting pod binds to each new one (one GPU a node).
      for (const pool of ['np-multi', 'np-other'])
        for (const inst of sim.cloud.members(pool)) {
          if (joined.has(inst.nodeName) || inst.status !== 'Running') continue;
          joined.add(inst.nodeName);
          kube.cluster.addNode({
            name: inst.nodeName,
            labels: { [NODEPOOL_LABEL]: pool, 'node.kubernetes.io/instance-type': inst.instanceType },
            allocatable: { 'nvidia.com/gpu': '1', cpu: '7500m', memory: '29Gi' },
            createdAt: new Date(clock.now()).toISOString(),
          });
          const waiting = kube.cluster.pods().find((p) => p.namespace === 'ml' && !p.nodeName);
          if (waiting) {
            const pod = kube.cluster.pod('ml', waiting.name)!;
            pod.nodeName = inst.nodeName;
            pod.phase = 'Running';
          }
        }
      if (kube.cluster.pods().every((p) => p.namespace !== 'ml' || p.nodeName)) return true;
    }
    return false;
  } finally {
    await sim.close();
  }
}

export async function stockoutRows(trials = 40): Promise<Measurement[]> {
  const all = stockTrials(trials);
  let ours = 0;
  let baseline = 0;
  for (const t of all) {
    if (await runStockTrial(t, false)) ours++;
    if (await runStockTrial(t, true)) baseline++;
  }
  const pct = (k: number) => (100 * k) / all.length;
  return [
    {
      metric: `stock-outs: pods all running within 20 min, ${all.length} seeded fleets (multi-type pools)`,
      value: pct(ours),
      unit: '%',
      target: '≥ first-type-only baseline',
      ok: ours >= baseline,
    },
    info('stock-outs: the same fleets, each node group its first type only (baseline)', pct(baseline), '%'),
  ];
}
