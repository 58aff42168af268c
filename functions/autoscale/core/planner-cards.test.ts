import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { planScaleOut, type PendingPod, type PoolState } from './planner.ts';
import { equalCards, gpuOffer } from './template.ts';

/** A cGPU pool of `gpus` cards of `memoryGiB` each, as run.ts builds it (core/template.ts). */
const cgpuPool = (id: string, gpus: number, memoryGiB: number, price: number): PoolState => ({
  id,
  name: id,
  instanceType: `ecs.${id}`,
  hourlyPrice: price,
  desired: 0,
  ready: 0,
  min: 0,
  max: 100,
  maxStep: 100,
  labels: {},
  taints: [],
  allocatable: { ...gpuOffer(gpus, memoryGiB, 'cgpu').allocatable, cpu: 64_000 },
  cards: equalCards(gpus, memoryGiB),
});
const share = (key: string, gib: number): PendingPod => ({
  key,
  priority: 0,
  requests: { 'aliyun.com/gpu-mem': gib, cpu: 1000 },
});

/** Can these shares be laid on these cards, each on one card? Exhaustive. */
function packable(shares: number[], cards: number[]): boolean {
  if (shares.length === 0) return true;
  const [first, ...rest] = [...shares].sort((a, b) => b - a);
  return cards.some(
    (c, i) =>
      c >= first! &&
      packable(
        rest,
        cards.map((x, j) => (j === i ? x - first! : x)),
      ),
  );
}

describe('planScaleOut on cGPU pools packs card by card', () => {
  it('three 10 GiB shares on 2×16 GiB cards take two nodes, though one node has 32 GiB', () => {
    const plan = planScaleOut(
      [cgpuPool('np-t4x2', 2, 16, 30)],
      ['a', 'b', 'c'].map((k) => share(k, 10)),
    );
    expect(plan.increments.map((i) => i.nodes.map((n) => n.length))).toEqual([[2, 1]]);
  });

  it('a share larger than every card is unhostable, with the cards said', () => {
    const plan = planScaleOut([cgpuPool('np-t4x2', 2, 16, 30)], [share('big', 20)]);
    expect(plan).toMatchObject({ increments: [], unhostable: [{ pod: 'big' }] });
    expect(plan.unhostable[0]!.why).toMatch(/20 GiB on one card.*16 GiB, 16 GiB free/);
  });

  it('every new node holds only shares its cards can take, and no share bigger than a card is placed', () => {
    const instance = fc.record({
      pools: fc.array(
        fc.record({
          gpus: fc.constantFrom(1, 2, 4),
          memory: fc.constantFrom(16, 24),
          price: fc.integer({ min: 5, max: 80 }),
        }),
        { minLength: 1, maxLength: 3 },
      ),
      shares: fc.array(fc.constantFrom(2, 4, 6, 8, 10, 12, 16, 20, 24, 30), { minLength: 1, maxLength: 14 }),
    });
    fc.assert(
      fc.property(instance, ({ pools: ps, shares }) => {
        const pools = ps.map((p, i) => cgpuPool(`np-${i}`, p.gpus, p.memory, p.price));
        const pods = shares.map((g, i) => share(`s-${i}`, g));
        const size = new Map(pods.map((p) => [p.key, p.requests['aliyun.com/gpu-mem']!]));
        const plan = planScaleOut(pools, pods);
        for (const inc of plan.increments) {
          const p = ps[pools.findIndex((x) => x.id === inc.poolId)]!;
          for (const node of inc.nodes)
            expect(
              packable(
                node.map((k) => size.get(k)!),
                Array.from({ length: p.gpus }, () => p.memory),
              ),
            ).toBe(true);
        }
        const biggest = Math.max(...ps.map((p) => p.memory));
        const placed = plan.increments.flatMap((i) => i.pods);
        expect(placed.filter((k) => size.get(k)! > biggest)).toEqual([]);
        expect(placed.length + plan.unhostable.length + plan.deferred.length).toBe(pods.length);
      }),
      { seed: 28, numRuns: 300 },
    );
  });
});
