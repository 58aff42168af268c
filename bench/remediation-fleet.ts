/**
 * The remediation bench's fleet and policy, shared by the run (bench/remediation-run.ts, bus and
 * functions) and the simulated API server's process (bench/remediation-sim.ts, which builds it).
 */
import { performance } from 'node:perf_hooks';
import type { Fleet } from '../infra/local/kube/index.ts';
import { NAMESPACE } from '../test/e2e/remediation-stack.ts';

export const PODS_PER_NODE = 4;

export interface RunSpec {
  pools: number;
  nodesPerPool: number;
  failingPerPool: number;
  /** Single-XID latency runs before the storm (0: none). */
  singleRuns: number;
  /** Concurrent remediate invocations, as Lambda would run them (reserved concurrency). */
  concurrency: number;
}

/** Storm pools: 15% and at most 15 nodes per pool within the window, so 10% may all be acted on. */
const BLAST_RADIUS = { maxShare: 0.15, maxCount: 15, windowMinutes: 60 };

export function policyFor(spec: RunSpec) {
  // The latency pool is taken out one node per run, so it has no limit that would stop the runs.
  return {
    blastRadius: BLAST_RADIUS,
    pools: { latency: { maxQuarantinedShare: 1, maxQuarantinedCount: spec.singleRuns + 1 } },
  };
}

/** How many nodes of a storm pool the policy lets out at once. */
export function stormLimit(spec: RunSpec): number {
  return Math.min(BLAST_RADIUS.maxCount, Math.floor(BLAST_RADIUS.maxShare * spec.nodesPerPool));
}

const A100 = { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' };
export const poolName = (p: number) => `pool${String(p).padStart(3, '0')}`;

/** The benchmark fleet: a latency pool plus the storm pools, PODS_PER_NODE GPU pods on every node. */
export function benchFleet(spec: RunSpec): Fleet {
  // One more latency node than runs: the cold start (import, wiring, first connections) goes there.
  const pools = [
    { name: 'latency', count: spec.singleRuns + 1 },
    ...Array.from({ length: spec.pools }, (_, p) => ({ name: poolName(p), count: spec.nodesPerPool })),
  ];
  return {
    nodes: pools.map((p) => ({
      name: p.name,
      count: p.count,
      labels: { 'gpu-reflex.io/pool': p.name, accelerator: 'nvidia-a100' },
      allocatable: A100,
    })),
    namespaces: [{ name: NAMESPACE }, { name: 'train' }],
    // Scheduled by the simulated scheduler (first fit): 4 × 2 GPUs fill each node of the pool.
    pods: pools.map((p) => ({
      name: `${p.name}-worker`,
      namespace: 'train',
      count: p.count * PODS_PER_NODE,
      owner: { kind: 'Job' as const, name: `${p.name}-worker` },
      nodeSelector: { 'gpu-reflex.io/pool': p.name },
      requests: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': '2' },
    })),
  };
}

/** Wall-clock epoch milliseconds with sub-millisecond resolution, comparable across the bench's processes. */
export const epochNow = (): number => performance.timeOrigin + performance.now();
