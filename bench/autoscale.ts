/**
 * `bench autoscale`: the scale-out planner on 10,000 pending pods across 50 node pools (decision
 * time), its cost against cluster-autoscaler-style loops on the same input, its cost against
 * the exact optimum on small random fleets, and how often pods run through stock-outs (autoscale-stockout.ts).
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { planScaleOut, type PendingPod, type PoolState } from '../functions/autoscale/core/planner.ts';
import { cgpuRows } from './autoscale-cgpu.ts';
import { stockoutRows } from './autoscale-stockout.ts';
import { clusterAutoscalerStyle, exactScaleOut } from './autoscale-reference.ts';
import { mulberry32 } from '../infra/local/bus/router.ts';
import { below, info, percentile, type BenchSuite, type Measurement } from './harness.ts';

const GiB = 1024 ** 3;

const rng = mulberry32;

const MODELS = [
  { model: 'T4', perGpu: 8.5 },
  { model: 'A10', perGpu: 18 },
  { model: 'V100', perGpu: 26 },
  { model: 'A100', perGpu: 65 },
  { model: 'L20', perGpu: 30 },
  { model: 'H20', perGpu: 55 },
  { model: 'A30', perGpu: 24 },
  { model: 'L40S', perGpu: 40 },
  { model: 'H100', perGpu: 95 },
  { model: 'P100', perGpu: 12 },
];

/**
 * 50 pools: 10 GPU models × 1, 2, 4, 8 GPUs per node and a GPU-sharing variant; bigger nodes a little cheaper per GPU.
 */
export function benchPools(): PoolState[] {
  const pools: PoolState[] = [];
  MODELS.forEach(({ model, perGpu }, m) => {
    for (const gpus of [1, 2, 4, 8]) {
      const discount = gpus === 8 ? 0.92 : gpus === 4 ? 0.95 : 1;
      pools.push({
        id: `np-${model.toLowerCase()}-x${gpus}`,
        name: `${model.toLowerCase()}-x${gpus}`,
        instanceType: `ecs.gn-${model.toLowerCase()}-x${gpus}`,
        hourlyPrice: Math.round(perGpu * gpus * discount * 100) / 100,
        desired: 0,
        ready: 0,
        min: 0,
        max: 500,
        maxStep: 500,
        labels: { 'gpu-reflex.io/gpu-model': model },
        taints: m % 3 === 0 ? [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }] : [],
        allocatable: { 'nvidia.com/gpu': gpus, cpu: gpus * 7500, memory: gpus * 60 * GiB, pods: 110 },
      });
    }
    pools.push({
      id: `np-${model.toLowerCase()}-share`,
      name: `${model.toLowerCase()}-share`,
      instanceType: `ecs.gn-${model.toLowerCase()}-x1`,
      hourlyPrice: perGpu,
      desired: 0,
      ready: 0,
      min: 0,
      max: 500,
      maxStep: 500,
      labels: { 'gpu-reflex.io/gpu-model': model, 'gpu-reflex.io/sharing': 'true' },
      taints: [],
      allocatable: { 'aliyun.com/gpu-mem': 24, cpu: 7500, memory: 60 * GiB, pods: 110 },
    });
  });
  return pools;
}

export function benchPods(n: number, seed = 7): PendingPod[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: n }, (_, i): PendingPod => {
    const model = pick(MODELS).model;
    const selector = r() < 0.7 ? { 'gpu-reflex.io/gpu-model': model } : undefined;
    const tolerations =
      r() < 0.3 ? [{ key: 'nvidia.com/gpu', operator: 'Exists' as const, effect: 'NoSchedule' }] : undefined;
    const priority = pick([0, 0, 0, 100, 1000]);
    if (r() < 0.05)
      return {
        key: `team-${i % 7}/share-${i}`,
        priority,
        requests: { 'aliyun.com/gpu-mem': pick([4, 6, 8, 12]), cpu: 1000, memory: 4 * GiB, pods: 1 },
        nodeSelector: { 'gpu-reflex.io/sharing': 'true', ...(selector ?? {}) },
      };
    const gpus = pick([1, 1, 1, 2, 2, 4, 8]);
    return {
      key: `team-${i % 7}/job-${i}`,
      priority,
      requests: {
        'nvidia.com/gpu': gpus,
        cpu: gpus * pick([2000, 4000, 7000]),
        memory: gpus * pick([16, 32, 56]) * GiB,
        pods: 1,
      },
      ...(selector ? { nodeSelector: selector } : {}),
      ...(tolerations ? { tolerations } : {}),
    };
  });
}

function smallFleets(count: number, seed = 11): { pools: PoolState[]; pods: PendingPod[] }[] {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  return Array.from({ length: count }, () => {
    const pools = Array.from({ length: 1 + Math.floor(r() * 3) }, (_, i): PoolState => {
      const gpus = pick([1, 2, 4, 8]);
      return {
        id: `np-${i}`,
        name: `p${i}`,
        instanceType: `t${i}`,
        hourlyPrice: gpus * (5 + Math.floor(r() * 55)),
        desired: 0,
        ready: 0,
        min: 0,
        max: 100,
        maxStep: 100,
        labels: {},
        taints: [],
        allocatable: { 'nvidia.com/gpu': gpus, cpu: gpus * 8000, memory: gpus * 64 * GiB },
      };
    });
    const pods = Array.from({ length: 1 + Math.floor(r() * 8) }, (_, i): PendingPod => ({
      key: `p-${i}`,
      priority: 0,
      requests: { 'nvidia.com/gpu': pick([1, 1, 1, 2, 4]), cpu: pick([1000, 4000, 8000, 16000]), memory: 8 * GiB },
    }));
    return { pools, pods };
  });
}

export const autoscaleSuite: BenchSuite = {
  name: 'autoscale',
  summary:
    'scale-out planner: 10,000 pending pods × 50 pools decision time; cost against cluster-autoscaler-style ' +
    'expanders and the exact optimum',
  async run(progress) {
    const rows: Measurement[] = [];
    const pools = benchPools();
    const pods = benchPods(10_000);
    progress('planning 10,000 pending pods across 50 pools, 7 runs');
    const times: number[] = [];
    const load = loadavg()[0]!;
    let plan = planScaleOut(pools, pods);
    for (let i = 0; i < 7; i++) {
      const t0 = performance.now();
      plan = planScaleOut(pools, pods);
      times.push(performance.now() - t0);
    }
    // Issue #34's target: 250 ms on a quiet machine. On a shared machine a run's wall time counts the other
    // processes' turns on the cores; the fastest of the seven is the run least disturbed, and the load average
    // (recorded) says how shared the machine was. The median stays the row judged against the target.
    rows.push(below('decision time, 10,000 pods × 50 pools (median)', percentile(times, 50), 'ms', 250));
    rows.push(info('decision time, 10,000 pods × 50 pools (fastest of 7)', Math.min(...times), 'ms'));
    rows.push(below('decision time, 10,000 pods × 50 pools (slowest of 7)', Math.max(...times), 'ms', 500));
    rows.push(
      info('load average (1 min) when the runs began', Math.round(load * 100) / 100, `on ${cpus().length} cores`),
    );
    rows.push(
      info(
        'pods placed on new nodes',
        plan.increments.reduce((t, x) => t + x.pods.length, 0),
        `of ${pods.length}`,
      ),
    );
    rows.push(info('pods no pool can host (reported)', plan.unhostable.length, 'pods'));
    rows.push(info('pods deferred by pool limits', plan.deferred.length, 'pods'));
    rows.push(
      info(
        'nodes added',
        plan.increments.reduce((t, x) => t + x.add, 0),
        'nodes',
      ),
    );
    rows.push(info('hourly cost of the plan', Math.round(plan.hourlyCost), 'CNY/h'));
    progress('cluster-autoscaler-style loops on the same input');
    for (const expander of ['price', 'least-waste'] as const) {
      const t0 = performance.now();
      const ca = clusterAutoscalerStyle(pools, pods, expander);
      const ms = performance.now() - t0;
      rows.push(
        info(
          `CA-style (${expander}) cost ÷ ours`,
          Math.round((ca.hourlyCost / plan.hourlyCost) * 1000) / 1000,
          `× (${Math.round(ms)} ms)`,
        ),
      );
    }
    progress('exact optimum on 300 small fleets (≤ 3 pools, ≤ 8 pods)');
    const gaps: number[] = [];
    const caGaps: number[] = [];
    for (const f of smallFleets(300)) {
      const exact = exactScaleOut(f.pools, f.pods, 10);
      if (!exact) continue;
      gaps.push(planScaleOut(f.pools, f.pods).hourlyCost / exact - 1);
      caGaps.push(clusterAutoscalerStyle(f.pools, f.pods, 'price').hourlyCost / exact - 1);
    }
    const mean = (g: number[]) => (100 * g.reduce((t, x) => t + x, 0)) / g.length;
    rows.push({
      metric: `cost above the exact optimum, mean of ${gaps.length} small fleets`,
      value: mean(gaps),
      unit: '%',
      target: '≤ 0.2 %',
      ok: mean(gaps) <= 0.2, // issue #34's done-when
    });
    rows.push(
      info('small fleets planned at the optimum', (100 * gaps.filter((g) => g < 1e-9).length) / gaps.length, '%'),
    );
    rows.push(info('worst small fleet above the optimum', 100 * Math.max(...gaps), '%'));
    rows.push(info('CA-style (price) above the optimum, mean', mean(caGaps), '%'));
    progress('a cGPU fleet: 2,000 shares on 2×T4 and A10 pools, card by card');
    rows.push(...cgpuRows());
    progress(
      'stock-outs: 40 seeded fleets through autoscale-pools on the simulated region, and a first-type-only baseline',
    );
    rows.push(...(await stockoutRows(40)));
    return rows;
  },
};
