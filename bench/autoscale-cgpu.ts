/**
 * `bench autoscale`, cGPU rows: the scale-out planner on an ACK cGPU fleet, where a share must
 * fit one card (functions/autoscale/core/cards.ts). Pools of 2×T4 (16 GiB cards), 1×A10 (24 GiB)
 * and 4×A10 nodes in `cgpu` mode; pending shares of 4–32 GiB, some larger than any card. Counted:
 * nodes bought for pods no card can hold (must be none), the pods that do fit and get nodes, and
 * whether every new node's shares can really be laid on its cards (an exhaustive check, not the
 * planner's own). The same input planned on the node totals alone (the rule before issue #28's
 * fix) shows what the per-card rule prevents.
 */
import { performance } from 'node:perf_hooks';
import {
  planScaleOut,
  type PendingPod,
  type PoolState,
  type ScaleOutPlan,
} from '../functions/autoscale/core/planner.ts';
import { equalCards, gpuOffer } from '../functions/autoscale/core/template.ts';
import { mulberry32 } from '../infra/local/bus/router.ts';
import { atLeast, info, type Measurement } from './harness.ts';

const GiB = 1024 ** 3;

const TYPES = [
  { id: 'ecs.gn6i-c24g1.12xlarge', name: 't4x2', gpus: 2, memoryGiB: 16, cpu: 48_000, price: 30 },
  { id: 'ecs.gn7i-c8g1.2xlarge', name: 'a10x1', gpus: 1, memoryGiB: 24, cpu: 8_000, price: 18 },
  { id: 'ecs.gn7i-c32g1.16xlarge', name: 'a10x4', gpus: 4, memoryGiB: 24, cpu: 64_000, price: 66 },
];

export function cgpuPools(perCard = true): PoolState[] {
  return TYPES.map((t) => {
    const offer = gpuOffer(t.gpus, t.memoryGiB, 'cgpu');
    return {
      id: `np-${t.name}-cgpu`,
      name: `${t.name}-cgpu`,
      instanceType: t.id,
      hourlyPrice: t.price,
      desired: 0,
      ready: 0,
      min: 0,
      max: 500,
      maxStep: 500,
      labels: { 'ack.node.gpu.schedule': 'cgpu' },
      taints: [],
      allocatable: { ...offer.allocatable, cpu: t.cpu - 500, memory: (t.cpu / 1000) * 4 * GiB, pods: 110 },
      ...(perCard ? { cards: equalCards(t.gpus, t.memoryGiB) } : {}),
    };
  });
}

/** 2,000 shares: 4, 6, 8, 10, 12 GiB mostly; 20 GiB (A10 cards only); 28 and 32 GiB (no card holds them). */
export function cgpuPods(n: number, seed = 17): PendingPod[] {
  const r = mulberry32(seed);
  const sizes = [4, 4, 6, 8, 8, 10, 12, 12, 20, 20, 28, 32];
  return Array.from({ length: n }, (_, i) => ({
    key: `infer-${i % 5}/share-${i}`,
    priority: 0,
    requests: { 'aliyun.com/gpu-mem': sizes[Math.floor(r() * sizes.length)]!, cpu: 1000, memory: 2 * GiB, pods: 1 },
  }));
}

/** Can these shares be laid on these cards, one card each? Exhaustive (a node holds a handful). */
function packable(shares: number[], cards: number[]): boolean {
  const sorted = [...shares].sort((a, b) => b - a);
  const free = [...cards];
  const go = (k: number): boolean => {
    if (k === sorted.length) return true;
    const tried = new Set<number>();
    for (let c = 0; c < free.length; c++) {
      if (free[c]! < sorted[k]! || tried.has(free[c]!)) continue;
      tried.add(free[c]!);
      free[c]! -= sorted[k]!;
      if (go(k + 1)) return true;
      free[c]! += sorted[k]!;
    }
    return false;
  };
  return go(0);
}

function check(plan: ScaleOutPlan, pods: readonly PendingPod[]) {
  const size = new Map(pods.map((p) => [p.key, p.requests['aliyun.com/gpu-mem']!]));
  const biggest = Math.max(...TYPES.map((t) => t.memoryGiB));
  const unholdable = new Set(pods.filter((p) => size.get(p.key)! > biggest).map((p) => p.key));
  let nodesForUnholdable = 0;
  let overPacked = 0;
  for (const inc of plan.increments) {
    const t = TYPES.find((x) => `np-${x.name}-cgpu` === inc.poolId)!;
    for (const node of inc.nodes) {
      if (node.some((k) => unholdable.has(k))) nodesForUnholdable++;
      if (
        !packable(
          node.map((k) => size.get(k)!),
          Array.from({ length: t.gpus }, () => t.memoryGiB),
        )
      )
        overPacked++;
    }
  }
  const placed = plan.increments.reduce((s, x) => s + x.pods.length, 0);
  return { unholdable: unholdable.size, nodesForUnholdable, overPacked, placed };
}

export function cgpuRows(): Measurement[] {
  const pods = cgpuPods(2_000);
  const pools = cgpuPools();
  const t0 = performance.now();
  const plan = planScaleOut(pools, pods);
  const ms = performance.now() - t0;
  const ours = check(plan, pods);
  const totals = check(planScaleOut(cgpuPools(false), pods), pods);
  const holdable = pods.length - ours.unholdable;
  const nodes = plan.increments.reduce((s, x) => s + x.add, 0);
  return [
    info(`cGPU fleet: pending shares no card can hold (of ${pods.length})`, ours.unholdable, 'pods'),
    {
      metric: 'cGPU fleet: nodes bought for a share no card can hold',
      value: ours.nodesForUnholdable,
      unit: 'nodes',
      target: '= 0',
      ok: ours.nodesForUnholdable === 0,
    },
    {
      metric: 'cGPU fleet: new nodes whose shares do not fit their cards',
      value: ours.overPacked,
      unit: 'nodes',
      target: '= 0',
      ok: ours.overPacked === 0,
    },
    atLeast(`cGPU fleet: shares that fit a card placed on new nodes (of ${holdable})`, ours.placed, 'pods', holdable),
    info('cGPU fleet: nodes added', nodes, `nodes (${Math.round(plan.hourlyCost)} CNY/h, ${Math.round(ms)} ms)`),
    info('cGPU fleet, node totals only: nodes bought for a share no card can hold', totals.nodesForUnholdable, 'nodes'),
    info('cGPU fleet, node totals only: new nodes whose shares do not fit their cards', totals.overPacked, 'nodes'),
  ];
}
