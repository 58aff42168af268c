import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clusterAutoscalerStyle, exactScaleOut } from '../../../bench/autoscale-reference.ts';
import { whyNot } from './fit.ts';
import { planScaleOut, type PendingPod, type PoolState } from './planner.ts';

const GiB = 1024 ** 3;
const pool = (id: string, gpus: number, price: number, extra: Partial<PoolState> = {}): PoolState => ({
  id,
  name: id.replace(/^np-/, ''),
  instanceType: `ecs.${id}`,
  hourlyPrice: price,
  desired: 0,
  ready: 0,
  min: 0,
  max: 100,
  maxStep: 100,
  labels: { 'gpu-reflex.io/pool': id },
  taints: [],
  allocatable: { 'nvidia.com/gpu': gpus, cpu: gpus * 8000, memory: gpus * 64 * GiB },
  ...extra,
});
const pod = (key: string, gpus: number, extra: Partial<PendingPod> = {}): PendingPod => ({
  key,
  priority: 0,
  requests: { 'nvidia.com/gpu': gpus, cpu: 4000, memory: 16 * GiB },
  ...extra,
});
const pods = (prefix: string, n: number, gpus: number, extra: Partial<PendingPod> = {}) =>
  Array.from({ length: n }, (_, i) => pod(`ml/${prefix}-${i}`, gpus, extra));

describe('planScaleOut', () => {
  it('grows the cheapest pool that can host the pods, one node per pod of a 1-GPU type', () => {
    const plan = planScaleOut([pool('np-a10', 1, 18), pool('np-t4', 1, 8.5)], pods('infer', 3, 1));
    expect(plan.increments).toEqual([
      expect.objectContaining({
        poolId: 'np-t4',
        from: 0,
        to: 3,
        add: 3,
        hourlyCost: 25.5,
        pods: ['ml/infer-0', 'ml/infer-1', 'ml/infer-2'],
      }),
    ]);
    expect(plan.increments[0]!.why).toBe('t4: 0 → 3 (3 for 3 pending pod(s)) at 8.5/h each');
    expect(plan.hourlyCost).toBe(25.5);
  });

  it('packs several pods on a bigger node when that is cheaper per GPU, and mixes pools for the remainder', () => {
    // 8-GPU node at 400/h (50 per GPU) against 1-GPU nodes at 65/h: 10 pods → one big node + 2 small (530), not 2 big (800) or 10 small (650).
    const plan = planScaleOut([pool('np-a100x1', 1, 65), pool('np-a100x8', 8, 400)], pods('train', 10, 1));
    expect(plan.increments.map((i) => [i.poolId, i.add])).toEqual([
      ['np-a100x1', 2],
      ['np-a100x8', 1],
    ]);
    expect(plan.hourlyCost).toBe(530);
    expect(plan.increments.find((i) => i.poolId === 'np-a100x8')!.nodes[0]).toHaveLength(8);
  });

  it('asks for nothing more while the nodes it asked for are on their way (a repeated event changes nothing)', () => {
    const pools = [pool('np-t4', 1, 8.5)];
    const pending = pods('infer', 3, 1);
    const first = planScaleOut(pools, pending);
    const again = planScaleOut([{ ...pools[0]!, desired: first.increments[0]!.to }], pending);
    expect(again.increments).toEqual([]);
    expect(again.awaitingInFlight).toEqual(['ml/infer-0', 'ml/infer-1', 'ml/infer-2']);
    // One more pod arrives while they boot: one more node, not four.
    const more = planScaleOut([{ ...pools[0]!, desired: 3 }], [...pending, pod('ml/infer-3', 1)]);
    expect(more.increments.map((i) => [i.from, i.to])).toEqual([[3, 4]]);
  });

  it('respects the maximum and the step, placing the highest priority first and saying why the rest waits', () => {
    // Names sort the low-priority pods first, so only their priority puts the urgent ones ahead.
    const plan = planScaleOut(
      [pool('np-t4', 1, 8.5, { desired: 2, ready: 2, max: 5, maxStep: 2 })],
      [...pods('batch', 3, 1, { priority: 0 }), ...pods('urgent', 2, 1, { priority: 1000 })],
    );
    expect(plan.increments).toEqual([
      expect.objectContaining({ from: 2, to: 4, add: 2, pods: ['ml/urgent-0', 'ml/urgent-1'] }),
    ]);
    expect(plan.deferred).toEqual(
      ['ml/batch-0', 'ml/batch-1', 'ml/batch-2'].map((p) => ({ pod: p, why: 't4: at most 2 nodes per step' })),
    );
    const full = planScaleOut([pool('np-t4', 1, 8.5, { desired: 5, ready: 5, max: 5 })], pods('x', 1, 1));
    expect(full.deferred).toEqual([{ pod: 'ml/x-0', why: 't4: at its maximum of 5 nodes' }]);
    const frozen = planScaleOut(
      [pool('np-t4', 1, 8.5, { frozen: 'cooling down until 10:05 after the last scale-out' })],
      pods('x', 1, 1),
    );
    expect(frozen.increments).toEqual([]);
    expect(frozen.deferred).toEqual([{ pod: 'ml/x-0', why: 't4: cooling down until 10:05 after the last scale-out' }]);
  });

  it('reports pods no pool can host, naming each pool and why', () => {
    const tainted = pool('np-a100', 8, 400, {
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }],
    });
    const plan = planScaleOut(
      [pool('np-t4', 1, 8.5), tainted],
      [
        pod('ml/huge', 16),
        pod('ml/picky', 1, { nodeSelector: { 'gpu-reflex.io/pool': 'np-h100' } }),
        pod('ml/affine', 1, {
          requiredTerms: [{ matchExpressions: [{ key: 'gpu-reflex.io/pool', operator: 'In', values: ['np-a100'] }] }],
        }),
      ],
    );
    expect(plan.unhostable).toEqual([
      {
        pod: 'ml/affine',
        why: 'no node pool can host it (a100: taint nvidia.com/gpu=present:NoSchedule not tolerated; t4: required node affinity matches none of its labels)',
      },
      {
        pod: 'ml/huge',
        why: 'no node pool can host it (a100: taint nvidia.com/gpu=present:NoSchedule not tolerated; t4: needs 16 nvidia.com/gpu, a node offers 1)',
      },
      {
        pod: 'ml/picky',
        why: "no node pool can host it (a100: nodeSelector gpu-reflex.io/pool=np-h100 (the pool's nodes have gpu-reflex.io/pool=np-a100); t4: nodeSelector gpu-reflex.io/pool=np-h100 (the pool's nodes have gpu-reflex.io/pool=np-t4))",
      },
    ]);
    expect(plan.increments).toEqual([]);
    const tolerated = planScaleOut(
      [tainted],
      [pod('ml/huge', 8, { tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] })],
    );
    expect(tolerated.increments.map((i) => i.poolId)).toEqual(['np-a100']);
  });

  it('drops a node the greedy added early once a later node has room for its pods', () => {
    // Cheapest first: the small pod alone on a 1-GPU node (10/h); then the 3-GPU pod needs the
    // 4-GPU node (60/h), which has room for the small pod too: the 1-GPU node is not needed.
    const small = pool('np-s', 1, 10);
    const large = pool('np-l', 4, 60, { allocatable: { 'nvidia.com/gpu': 4, cpu: 8000, memory: 256 * GiB } });
    const plan = planScaleOut(
      [small, large],
      [
        { ...pod('ml/a', 1), requests: { 'nvidia.com/gpu': 1, cpu: 1000 } },
        { ...pod('ml/b', 3), requests: { 'nvidia.com/gpu': 3, cpu: 1000 } },
      ],
    );
    expect(plan.increments.map((i) => [i.poolId, i.add, i.pods])).toEqual([['np-l', 1, ['ml/a', 'ml/b']]]);
    expect(plan.hourlyCost).toBe(60);
  });

  it('brings a pool up to its minimum and uses those nodes first', () => {
    const plan = planScaleOut([pool('np-t4', 1, 8.5, { min: 2 }), pool('np-a10', 1, 5)], pods('x', 3, 1));
    expect(plan.increments.map((i) => [i.poolId, i.from, i.to, i.add])).toEqual([
      ['np-a10', 0, 1, 1],
      ['np-t4', 0, 2, 0],
    ]);
    expect(plan.increments.find((i) => i.poolId === 'np-t4')!.why).toBe(
      't4: 0 → 2 (2 to reach its minimum of 2) at 8.5/h each',
    );
  });

  it('counts GPU-sharing memory (aliyun.com/gpu-mem) like any other resource', () => {
    const shared = pool('np-a10-share', 1, 18, {
      allocatable: { 'aliyun.com/gpu-mem': 24, cpu: 8000, memory: 30 * GiB },
    });
    const plan = planScaleOut(
      [shared],
      Array.from({ length: 5 }, (_, i) => ({
        key: `ml/s-${i}`,
        priority: 0,
        requests: { 'aliyun.com/gpu-mem': 8, cpu: 1000, memory: 4 * GiB },
      })),
    );
    expect(plan.increments.map((i) => i.nodes.map((n) => n.length))).toEqual([[3, 2]]);
  });

  it('is deterministic: the order pods and pools arrive in does not change the plan', () => {
    const pools = [pool('np-a', 2, 20), pool('np-b', 4, 35), pool('np-c', 1, 11)];
    const pending = [...pods('p', 7, 1), ...pods('q', 3, 2)];
    const a = planScaleOut(pools, pending);
    const b = planScaleOut([...pools].reverse(), [...pending].reverse());
    expect(b).toEqual(a);
  });
});

describe('planScaleOut against the exact optimum and a cluster-autoscaler-style loop (small random fleets)', () => {
  const instance = fc.record({
    pools: fc.array(fc.record({ gpus: fc.constantFrom(1, 2, 4, 8), price: fc.integer({ min: 5, max: 60 }) }), {
      minLength: 1,
      maxLength: 3,
    }),
    pods: fc.array(fc.record({ gpus: fc.constantFrom(1, 1, 1, 2, 4), cpu: fc.constantFrom(1000, 4000, 8000) }), {
      minLength: 1,
      maxLength: 7,
    }),
  });
  const build = (x: { pools: { gpus: number; price: number }[]; pods: { gpus: number; cpu: number }[] }) => ({
    pools: x.pools.map((p, i) => pool(`np-${i}`, p.gpus, p.price * p.gpus)),
    pending: x.pods.map((p, i): PendingPod => ({
      key: `ml/p-${i}`,
      priority: 0,
      requests: { 'nvidia.com/gpu': p.gpus, cpu: p.cpu, memory: 8 * GiB },
    })),
  });

  it('places every hostable pod on a node it fits, and never costs less than the optimum', () => {
    fc.assert(
      fc.property(instance, (x) => {
        const { pools, pending } = build(x);
        const plan = planScaleOut(pools, pending);
        const placed = plan.increments.flatMap((i) => i.pods);
        expect(new Set(placed).size).toBe(placed.length);
        expect(placed.length + plan.unhostable.length).toBe(pending.length);
        for (const inc of plan.increments) {
          const p = pools.find((q) => q.id === inc.poolId)!;
          expect(inc.nodes).toHaveLength(inc.add);
          for (const node of inc.nodes) {
            const members = node.map((k) => pending.find((q) => q.key === k)!);
            for (const m of members) expect(whyNot(m, p)).toBeUndefined();
            for (const r of Object.keys(p.allocatable))
              expect(members.reduce((t, m) => t + (m.requests[r] ?? 0), 0)).toBeLessThanOrEqual(p.allocatable[r]!);
          }
        }
        const exact = exactScaleOut(pools, pending);
        if (exact !== undefined) expect(plan.hourlyCost).toBeGreaterThanOrEqual(exact - 1e-9);
      }),
      { seed: 20261125, numRuns: 200 },
    );
  });

  it('stays within 2% of the optimum on average, and never costs more than the cluster-autoscaler-style price expander', () => {
    const gaps: number[] = [];
    fc.assert(
      fc.property(instance, (x) => {
        const { pools, pending } = build(x);
        const plan = planScaleOut(pools, pending);
        const exact = exactScaleOut(pools, pending);
        if (exact !== undefined && exact > 0) gaps.push(plan.hourlyCost / exact - 1);
        const ca = clusterAutoscalerStyle(pools, pending, 'price');
        if (ca.unplaced === 0) expect(plan.hourlyCost).toBeLessThanOrEqual(ca.hourlyCost + 1e-9);
      }),
      { seed: 20261125, numRuns: 200 },
    );
    const mean = gaps.reduce((t, g) => t + g, 0) / gaps.length;
    expect(gaps.length).toBeGreaterThan(150);
    expect(mean).toBeLessThanOrEqual(0.02);
  });
});

describe('planScaleOut packs GPU-heavy and CPU-heavy pods together', () => {
  it('mixes them on one node instead of filling GPUs on one and CPUs on another', () => {
    // An 8-GPU node with 64 CPUs. By size alone: both 4-GPU pods on one node, four CPU-heavy pods on a
    // second, the small one on a third. Mixed: two nodes.
    const big = pool('np-x8', 8, 264, { allocatable: { 'nvidia.com/gpu': 8, cpu: 64000, memory: 512 * GiB } });
    const pending = [
      ...pods('gpu-heavy', 2, 4).map((p) => ({ ...p, requests: { ...p.requests, cpu: 8000 } })),
      ...pods('cpu-heavy', 4, 1).map((p) => ({ ...p, requests: { ...p.requests, cpu: 16000 } })),
      { ...pod('ml/small', 1), requests: { 'nvidia.com/gpu': 1, cpu: 4000, memory: GiB } },
    ];
    const plan = planScaleOut([big], pending);
    expect(plan.increments.map((i) => i.add)).toEqual([2]);
    expect(plan.hourlyCost).toBe(528);
  });
});
