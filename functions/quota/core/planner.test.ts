import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseQuotaConfig, QuotaConfigSchema, type QuotaConfig } from './config.ts';
import { planQuotas, type QuotaFacts } from './planner.ts';

const GPU = 'nvidia.com/gpu';
const K = `requests.${GPU}`;

/** The field notes' teams: ML 32, NLP 24, Vision 16 cards, an 8-card buffer, overcommit under 110%. */
const FIELD_NOTES = QuotaConfigSchema.parse({
  overcommit: 1.1,
  buffer: { [GPU]: 8 },
  teams: [
    { name: 'ml', namespaces: ['ml-train', 'ml-infer'], weight: 4, guarantee: { [GPU]: 32 } },
    { name: 'nlp', namespaces: ['nlp'], weight: 3, guarantee: { [GPU]: 24 } },
    { name: 'vision', namespaces: ['vision'], weight: 2, guarantee: { [GPU]: 16 } },
  ],
});
const facts = (capacity: number, usage: Record<string, number>, current: Record<string, number> = {}): QuotaFacts => ({
  capacity: { [GPU]: capacity },
  usage: Object.fromEntries(Object.entries(usage).map(([ns, n]) => [ns, { [GPU]: n }])),
  current: Object.fromEntries(Object.entries(current).map(([ns, n]) => [ns, { [GPU]: n }])),
});
const hardOf = (plan: ReturnType<typeof planQuotas>) =>
  Object.fromEntries(plan.namespaces.map((n) => [n.namespace, n.hard[K]]));
const team = (plan: ReturnType<typeof planQuotas>, name: string) =>
  plan.teams.find((t) => t.team === name)!.resources[GPU]!.hard;

describe('planQuotas', () => {
  it('gives every team its guarantee when the fleet can back them all', () => {
    const plan = planQuotas(FIELD_NOTES, facts(80, { 'ml-train': 20, 'ml-infer': 4, nlp: 10, vision: 16 }));
    expect(plan.pool[GPU]).toEqual({ capacity: 80, shared: 80 });
    expect([team(plan, 'ml'), team(plan, 'nlp'), team(plan, 'vision')]).toEqual([32, 24, 16]);
    // ml's two namespaces: each keeps its usage, the rest goes by usage (20:4).
    expect(hardOf(plan)).toMatchObject({ 'ml-train': 27, 'ml-infer': 5 });
    expect(plan.namespaces.find((n) => n.namespace === 'nlp')!.reason).toBe(
      'nvidia.com/gpu: team nlp (weight 3) uses 10, guaranteed 24, wants 10 → 24 of 80 shared out',
    );
  });

  it('shares a capacity loss by weight, never below usage, and says which guarantees it cannot back', () => {
    // A node of 8 quarantined: 72 → 71 shared out (×1.1 − 8), 72 guaranteed.
    const plan = planQuotas(FIELD_NOTES, facts(72, { 'ml-train': 10, nlp: 24, vision: 2 }));
    expect(plan.pool[GPU]!.shared).toBe(71);
    expect(team(plan, 'nlp')).toBe(24);
    expect(team(plan, 'ml') + team(plan, 'nlp') + team(plan, 'vision')).toBe(71);
    expect(plan.warnings).toHaveLength(1);
    expect(plan.warnings[0]).toMatch(/nvidia\.com\/gpu: (ml|vision) gets \d+ of its guarantee \d+: capacity/);
    // Deeper: 30 GPUs left, 25 shared out, 36 in use: nothing goes below usage, and it is said.
    const deep = planQuotas(FIELD_NOTES, facts(30, { 'ml-train': 10, nlp: 24, vision: 2 }));
    expect([team(deep, 'ml'), team(deep, 'nlp'), team(deep, 'vision')]).toEqual([10, 24, 2]);
    expect(deep.warnings).toEqual([
      'nvidia.com/gpu: the teams already use 36, more than the 25 shared out (capacity 30): no quota goes below usage, so the total is 36',
    ]);
  });

  it('lends an idle share to a quota-bound team, and takes it back as the lender’s usage returns', () => {
    const cfg = QuotaConfigSchema.parse({
      teams: [
        { name: 'a', namespaces: ['a'], guarantee: { [GPU]: 8 } },
        { name: 'b', namespaces: ['b'], guarantee: { [GPU]: 8 } },
      ],
    });
    // b uses all 8 of its quota (its next pod would be refused); a is idle: b may borrow.
    const lend = planQuotas(cfg, facts(24, { a: 0, b: 8 }, { a: 8, b: 8 }));
    expect(hardOf(lend)).toEqual({ a: 8, b: 10 });
    const more = planQuotas(cfg, facts(24, { a: 0, b: 10 }, { a: 8, b: 10 }));
    expect(hardOf(more)).toEqual({ a: 8, b: 13 });
    // a comes back: its guarantee stands; b keeps what it runs but gets no more.
    const back = planQuotas(cfg, facts(24, { a: 6, b: 10 }, { a: 8, b: 13 }));
    expect(hardOf(back)).toEqual({ a: 8, b: 10 });
  });

  it('weighs teams: a 3:1 weight takes 3:1 of a loss-bounded pool and of what is lent', () => {
    const cfg = QuotaConfigSchema.parse({
      teams: [
        { name: 'heavy', namespaces: ['h'], weight: 3, guarantee: { [GPU]: 20 } },
        { name: 'light', namespaces: ['l'], weight: 1, guarantee: { [GPU]: 20 } },
      ],
    });
    // 20 GPUs for 40 guaranteed, nobody running: the loss falls 1:3.
    expect(hardOf(planQuotas(cfg, facts(20, { h: 0, l: 0 })))).toEqual({ h: 15, l: 5 });
    // Both quota-bound at 10 (each wants a burst of 3 more); 4 left to lend: 3 to heavy, 1 to light.
    const bound = QuotaConfigSchema.parse({
      teams: [
        { name: 'heavy', namespaces: ['h'], weight: 3 },
        { name: 'light', namespaces: ['l'], weight: 1 },
      ],
    });
    expect(hardOf(planQuotas(bound, facts(24, { h: 10, l: 10 }, { h: 10, l: 10 })))).toEqual({ h: 13, l: 11 });
  });

  it('refuses limits.<extended> and requests.<…> keys in the configuration, naming why', () => {
    expect(() =>
      parseQuotaConfig('teams: [{ name: a, namespaces: [a], max: { limits.nvidia.com/gpu: 4 } }]', 'q.yaml'),
    ).toThrow(
      /q\.yaml is invalid:\n {2}teams\.0\.max\.limits\.nvidia\.com\/gpu: "limits\.nvidia\.com\/gpu": quota on limits of an extended resource is accepted by the API server and never enforced/,
    );
    expect(() =>
      parseQuotaConfig('teams: [{ name: a, namespaces: [a], guarantee: { requests.nvidia.com/gpu: 4 } }]'),
    ).toThrow(/name the resource itself \(nvidia\.com\/gpu\)/);
    expect(() => parseQuotaConfig('teams: [{ name: a, namespaces: [x] }, { name: b, namespaces: [x] }]')).toThrow(
      /teams\.1\.namespaces\.0: namespace x already belongs to team a/,
    );
    expect(() =>
      parseQuotaConfig(
        'teams: [{ name: a, namespaces: [a], guarantee: { nvidia.com/gpu: 9 }, max: { nvidia.com/gpu: 8 } }]',
      ),
    ).toThrow(/teams\.0\.guarantee\.nvidia\.com\/gpu: guarantee 9 is above max 8/);
  });
});

describe('planQuotas properties', () => {
  const input = fc.record({
    capacity: fc.integer({ min: 0, max: 200 }),
    overcommit: fc.constantFrom(1, 1.1, 1.25),
    buffer: fc.integer({ min: 0, max: 16 }),
    teams: fc.array(
      fc.record({
        weight: fc.integer({ min: 1, max: 8 }),
        guarantee: fc.integer({ min: 0, max: 40 }),
        max: fc.option(fc.integer({ min: 40, max: 120 }), { nil: undefined }),
        usage: fc.integer({ min: 0, max: 40 }),
        bound: fc.boolean(),
      }),
      { minLength: 1, maxLength: 6 },
    ),
  });
  type Input = typeof input extends fc.Arbitrary<infer T> ? T : never;
  const build = (x: Input) => {
    const config: QuotaConfig = QuotaConfigSchema.parse({
      overcommit: x.overcommit,
      buffer: { [GPU]: x.buffer },
      teams: x.teams.map((t, i) => ({
        name: `t${i}`,
        namespaces: [`ns${i}`],
        weight: t.weight,
        guarantee: { [GPU]: t.guarantee },
        ...(t.max !== undefined ? { max: { [GPU]: t.max } } : {}),
      })),
    });
    const f = facts(
      x.capacity,
      Object.fromEntries(x.teams.map((t, i) => [`ns${i}`, t.usage])),
      Object.fromEntries(x.teams.map((t, i) => [`ns${i}`, t.bound ? t.usage : t.usage + 5])),
    );
    return { config, f };
  };
  const opts = { seed: 20261125, numRuns: 300 };

  it('never goes below usage; the total stays within capacity × overcommit − buffer unless usage alone exceeds it', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, f } = build(x);
        const plan = planQuotas(config, f);
        const shared = Math.max(0, Math.floor(x.capacity * x.overcommit + 1e-9) - x.buffer);
        const usage = x.teams.reduce((s, t) => s + t.usage, 0);
        x.teams.forEach((t, i) => expect(team(plan, `t${i}`)).toBeGreaterThanOrEqual(t.usage));
        const total = plan.teams.reduce((s, t) => s + t.resources[GPU]!.hard, 0);
        expect(total).toBeLessThanOrEqual(Math.max(shared, usage));
      }),
      opts,
    );
  });

  it('gives each team at least min(guarantee, max) when capacity can back every guarantee', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, f } = build(x);
        const shared = Math.max(0, Math.floor(x.capacity * x.overcommit + 1e-9) - x.buffer);
        fc.pre(x.teams.reduce((s, t) => s + Math.max(t.usage, Math.min(t.guarantee, t.max ?? Infinity)), 0) <= shared);
        const plan = planQuotas(config, f);
        x.teams.forEach((t, i) =>
          expect(team(plan, `t${i}`)).toBeGreaterThanOrEqual(Math.min(t.guarantee, t.max ?? Infinity)),
        );
      }),
      opts,
    );
  });

  it('more weight never means less quota', () => {
    fc.assert(
      fc.property(input, fc.nat(), fc.integer({ min: 1, max: 8 }), (x, pick, add) => {
        const i = pick % x.teams.length;
        const before = planQuotas(build(x).config, build(x).f);
        const heavier = { ...x, teams: x.teams.map((t, j) => (j === i ? { ...t, weight: t.weight + add } : t)) };
        const after = planQuotas(build(heavier).config, build(heavier).f);
        expect(team(after, `t${i}`)).toBeGreaterThanOrEqual(team(before, `t${i}`));
      }),
      opts,
    );
  });

  it('is deterministic: the order teams are configured in changes nothing', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, f } = build(x);
        const a = planQuotas(config, f);
        const b = planQuotas({ ...config, teams: [...config.teams].reverse() }, f);
        expect(b).toEqual(a);
      }),
      opts,
    );
  });
});
