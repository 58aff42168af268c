import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuotaConfigSchema } from './config.ts';
import { planQuotas, type QuotaFacts, type QuotaPlan } from './planner.ts';
import { drfWeights } from './fill.ts';

const GPU = 'nvidia.com/gpu';
const MIG = 'nvidia.com/mig-1g.10gb';
const MEM = 'aliyun.com/gpu-mem';
const RESOURCES = [GPU, MIG, MEM];

const hard = (plan: QuotaPlan, team: string, r: string) => plan.teams.find((t) => t.team === team)!.resources[r]!.hard;

describe('planQuotas across resources (weighted DRF)', () => {
  it('lends the scarce GPU more slowly to the team that already asks for most of the MIG pool', () => {
    // a and b quota-bound on 12 GPUs (each wants 3 more); c idle. 6 GPUs free: 2 each → a 14,
    // b 14, c 2, of which c lends 1 (it keeps its headroom of 1). Team a also wants 50 of the 60
    // MIG slices: its dominant share is MIG (50/60), its GPU want 15/30 of the pool, so it rises on
    // GPUs at 0.6 of b's pace: 0.375 : 0.625 → the one GPU goes to b. With plain weights (no DRF)
    // the tie would have gone to a by name.
    const config = QuotaConfigSchema.parse({
      resources: [GPU, MIG],
      teams: [
        { name: 'a', namespaces: ['a'] },
        { name: 'b', namespaces: ['b'] },
        { name: 'c', namespaces: ['c'] },
      ],
    });
    const facts: QuotaFacts = {
      capacity: { [GPU]: 30, [MIG]: 60 },
      usage: { a: { [GPU]: 12, [MIG]: 40 }, b: { [GPU]: 12 } },
      current: { a: { [GPU]: 12, [MIG]: 40 }, b: { [GPU]: 12 }, c: { [GPU]: 2 } },
    };
    const plan = planQuotas(config, facts);
    expect([hard(plan, 'a', GPU), hard(plan, 'b', GPU), hard(plan, 'c', GPU)]).toEqual([14, 15, 1]);
    expect(hard(plan, 'a', MIG)).toBe(50); // MIG is not scarce: a gets all it wants there
  });

  it('shares a capacity loss by dominant share: the team holding most of the other pool gives back first', () => {
    // GPUs drop to 12 for 16 guaranteed, nobody running. a is also guaranteed 40 of 50 MIG slices
    // (dominant share 0.8; its GPUs are 8/12 = 0.67 of that), b holds GPUs only: the 12 are kept
    // at 0.83 : 1 (0.67/0.8 : 1) → 5.45 : 6.55 → a 5, b 7. Per resource on its own: 6 each.
    const config = QuotaConfigSchema.parse({
      resources: [GPU, MIG],
      teams: [
        { name: 'a', namespaces: ['a'], guarantee: { [GPU]: 8, [MIG]: 40 } },
        { name: 'b', namespaces: ['b'], guarantee: { [GPU]: 8 } },
      ],
    });
    const plan = planQuotas(config, { capacity: { [GPU]: 12, [MIG]: 50 }, usage: {}, current: {} });
    expect([hard(plan, 'a', GPU), hard(plan, 'b', GPU)]).toEqual([5, 7]);
  });
});

/** Random fleets: up to 6 teams, each using a random non-empty subset of three resources. */
const teamArb = fc.record({
  weight: fc.integer({ min: 1, max: 8 }),
  uses: fc.subarray(RESOURCES, { minLength: 1 }),
  per: fc.array(
    fc.record({
      guarantee: fc.integer({ min: 0, max: 40 }),
      max: fc.option(fc.integer({ min: 40, max: 120 }), { nil: undefined }),
      usage: fc.integer({ min: 0, max: 40 }),
      bound: fc.boolean(),
    }),
    { minLength: 3, maxLength: 3 },
  ),
});
const input = fc.record({
  capacity: fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 3, maxLength: 3 }),
  overcommit: fc.constantFrom(1, 1.1, 1.25),
  buffer: fc.integer({ min: 0, max: 16 }),
  teams: fc.array(teamArb, { minLength: 1, maxLength: 6 }),
});
type Input = typeof input extends fc.Arbitrary<infer T> ? T : never;

function build(x: Input) {
  const config = QuotaConfigSchema.parse({
    resources: RESOURCES,
    overcommit: x.overcommit,
    buffer: { [GPU]: x.buffer },
    teams: x.teams.map((t, i) => {
      const on = (f: (p: Input['teams'][number]['per'][number]) => number | undefined) =>
        Object.fromEntries(
          RESOURCES.flatMap((r, k) => (t.uses.includes(r) && f(t.per[k]!) !== undefined ? [[r, f(t.per[k]!)]] : [])),
        );
      return {
        name: `t${i}`,
        namespaces: [`ns${i}`],
        weight: t.weight,
        guarantee: on((p) => p.guarantee),
        max: on((p) => p.max),
      };
    }),
  });
  const facts: QuotaFacts = {
    capacity: Object.fromEntries(RESOURCES.map((r, k) => [r, x.capacity[k]!])),
    usage: Object.fromEntries(
      x.teams.map((t, i) => [
        `ns${i}`,
        Object.fromEntries(RESOURCES.flatMap((r, k) => (t.uses.includes(r) ? [[r, t.per[k]!.usage]] : []))),
      ]),
    ),
    current: Object.fromEntries(
      x.teams.map((t, i) => [
        `ns${i}`,
        Object.fromEntries(
          RESOURCES.flatMap((r, k) =>
            t.uses.includes(r) ? [[r, t.per[k]!.bound ? t.per[k]!.usage : t.per[k]!.usage + 5]] : [],
          ),
        ),
      ]),
    ),
  };
  return { config, facts };
}
const opts = { seed: 20261126, numRuns: 400 };
const total = (plan: QuotaPlan, r: string, f: 'hard' | 'usage' | 'base' = 'hard') =>
  plan.teams.reduce((s, t) => s + t.resources[r]![f], 0);

describe('planQuotas across resources: properties', () => {
  it('never goes below usage, and each resource’s total stays within what it shares out unless usage alone exceeds it', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const plan = planQuotas(config, facts);
        for (const r of RESOURCES) {
          for (const t of plan.teams) expect(t.resources[r]!.hard).toBeGreaterThanOrEqual(t.resources[r]!.usage);
          expect(total(plan, r)).toBeLessThanOrEqual(Math.max(plan.pool[r]!.shared, total(plan, r, 'usage')));
        }
      }),
      opts,
    );
  });

  it('gives each team at least min(guarantee, max) of a resource whose pool can back every guarantee on it', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const plan = planQuotas(config, facts);
        for (const r of RESOURCES) {
          const floor = (t: (typeof config.teams)[number]) => Math.min(t.guarantee[r] ?? 0, t.max[r] ?? Infinity);
          const need = config.teams.reduce(
            (s, t) => s + Math.max(plan.teams.find((p) => p.team === t.name)!.resources[r]!.usage, floor(t)),
            0,
          );
          if (need > plan.pool[r]!.shared) continue;
          for (const t of config.teams) expect(hard(plan, t.name, r)).toBeGreaterThanOrEqual(floor(t));
        }
      }),
      opts,
    );
  });

  it('wastes nothing: a team short of what it wants of a resource finds that resource all given out', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const plan = planQuotas(config, facts);
        for (const r of RESOURCES) {
          const short = plan.teams.some((t) => t.resources[r]!.hard < t.resources[r]!.want);
          if (short) expect(total(plan, r)).toBe(Math.max(plan.pool[r]!.shared, total(plan, r, 'usage')));
        }
      }),
      opts,
    );
  });

  it('is DRF-fair to one unit: on a resource that ran out, a team short of it has come as far along its demand vector (weighted dominant share) as any team that was lent it', () => {
    // Progress of team t on resource r, in weighted dominant-share units: lent_t,r · δ_t / (w_t · want_t,r),
    // δ_t = max over resources of want / shared. Taking one unit from a team u to give t more would
    // leave u no further along than t: (lent_u − 1)/… ≤ (lent_t + 1)/… — nobody can rise without
    // lowering a team that is at most as far.
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const plan = planQuotas(config, facts);
        const shared = (r: string) => plan.pool[r]!.shared;
        const dominant = (t: QuotaPlan['teams'][number]) =>
          Math.max(0, ...RESOURCES.filter((r) => shared(r) > 0).map((r) => t.resources[r]!.want / shared(r)));
        const progress = (t: QuotaPlan['teams'][number], r: string, lent: number) =>
          (lent * dominant(t)) / (t.weight * t.resources[r]!.want);
        for (const r of RESOURCES) {
          for (const t of plan.teams) {
            const s = t.resources[r]!;
            if (s.hard >= s.want) continue;
            for (const u of plan.teams) {
              const lent = u.resources[r]!.hard - u.resources[r]!.base;
              if (u === t || lent < 1) continue;
              expect(progress(u, r, lent - 1)).toBeLessThanOrEqual(progress(t, r, s.hard - s.base + 1) * (1 + 1e-9));
            }
          }
        }
      }),
      opts,
    );
  });

  it('is deterministic: the order teams and their namespaces are listed in changes nothing', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const reversed = {
          ...config,
          teams: [...config.teams].reverse().map((t) => ({ ...t, namespaces: [...t.namespaces].reverse() })),
        };
        expect(planQuotas(reversed, facts)).toEqual(planQuotas(config, facts));
      }),
      opts,
    );
  });

  it('gives a team that wants one resource only its plain weight on it (DRF changes nothing for it)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ weight: fc.integer({ min: 1, max: 8 }), r: fc.nat(2), want: fc.integer({ min: 1, max: 50 }) }),
          {
            minLength: 1,
            maxLength: 6,
          },
        ),
        fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 3, maxLength: 3 }),
        (teams, shared) => {
          const demand = [0, 1, 2].map((r) => teams.map((t) => (t.r === r ? t.want : 0)));
          const w = drfWeights(
            demand,
            shared,
            teams.map((t) => t.weight),
          );
          teams.forEach((t, i) => expect(w[t.r]![i]).toBeCloseTo(t.weight, 9));
        },
      ),
      opts,
    );
  });
});
