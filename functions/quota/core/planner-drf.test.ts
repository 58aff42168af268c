import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { QuotaConfigSchema } from './config.ts';
import { planQuotas, type QuotaFacts, type QuotaPlan } from './planner.ts';
import { planQuotasPerResource } from './testing/per-resource-planner.ts';

const GPU = 'nvidia.com/gpu';
const MIG = 'nvidia.com/mig-1g.10gb';
const MEM = 'aliyun.com/gpu-mem';
const RESOURCES = [GPU, MIG, MEM];

const hard = (plan: QuotaPlan, team: string, r: string) => plan.teams.find((t) => t.team === team)!.resources[r]!.hard;

describe('planQuotas across resources (weighted DRF)', () => {
  it('lends the scarce GPU more slowly to the team that already asks for most of the MIG pool', () => {
    // Both teams quota-bound on 8 GPUs (each wants 2 more); only 3 GPUs left to lend. Team a also
    // wants 50 of the 60 MIG slices: its dominant share is MIG (50/60), its GPU want is 10/19 of the
    // pool, so it rises on GPUs at 0.63 of b's pace: 1.2 : 1.8 → a 1, b 2. Shared out per resource
    // on its own (before DRF) the tie went to a by name: a 2, b 1.
    const config = QuotaConfigSchema.parse({
      resources: [GPU, MIG],
      teams: [
        { name: 'a', namespaces: ['a'] },
        { name: 'b', namespaces: ['b'] },
      ],
    });
    const facts: QuotaFacts = {
      capacity: { [GPU]: 19, [MIG]: 60 },
      usage: { a: { [GPU]: 8, [MIG]: 40 }, b: { [GPU]: 8 } },
      current: { a: { [GPU]: 8, [MIG]: 40 }, b: { [GPU]: 8 } },
    };
    const plan = planQuotas(config, facts);
    expect([hard(plan, 'a', GPU), hard(plan, 'b', GPU)]).toEqual([9, 10]);
    expect(hard(plan, 'a', MIG)).toBe(50); // MIG is not scarce: a gets all it wants there
    const old = planQuotasPerResource(config, facts);
    expect([old.teams[0]!.resources[GPU]!.hard, old.teams[1]!.resources[GPU]!.hard]).toEqual([10, 9]);
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
    expect(
      planQuotasPerResource(config, { capacity: { [GPU]: 12, [MIG]: 50 }, usage: {}, current: {} }).teams.map(
        (t) => t.resources[GPU]!.hard,
      ),
    ).toEqual([6, 6]);
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
          const short = plan.teams.some(
            (t) => t.resources[r]!.hard < Math.max(t.resources[r]!.want, t.resources[r]!.base),
          );
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
            if (s.hard >= Math.max(s.want, s.base)) continue;
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

  it('shares a fleet where every team uses one resource exactly as the per-resource planner did', () => {
    fc.assert(
      fc.property(
        input.map((x) => ({ ...x, teams: x.teams.map((t) => ({ ...t, uses: t.uses.slice(0, 1) })) })),
        (x) => {
          const { config, facts } = build(x);
          const plan = planQuotas(config, facts);
          const old = planQuotasPerResource(config, facts);
          expect(plan.namespaces).toEqual(old.namespaces);
          expect(plan.warnings).toEqual(old.warnings);
          expect(plan.pool).toEqual(old.pool);
          expect(
            plan.teams.map((t) => ({
              ...t,
              resources: Object.fromEntries(Object.entries(t.resources).map(([r, { base: _, ...rest }]) => [r, rest])),
            })),
          ).toEqual(old.teams);
        },
      ),
      opts,
    );
  });
});
