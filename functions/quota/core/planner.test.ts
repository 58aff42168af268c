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
  it('gives every team its guarantee, and shares what is free by weight on top of it', () => {
    // 80 GPUs, 50 in use: 30 free, shared 4:3:2 over the guarantees' floors (ml 8, nlp 14 short
    // of their guarantees): ml 24 + 10.7, nlp 10 + 14 (its guarantee is more than its share), vision 16 + 5.3.
    const plan = planQuotas(FIELD_NOTES, facts(80, { 'ml-train': 20, 'ml-infer': 4, nlp: 10, vision: 16 }));
    expect(plan.pool[GPU]).toEqual({ capacity: 80, shared: 80 });
    expect([team(plan, 'ml'), team(plan, 'nlp'), team(plan, 'vision')]).toEqual([35, 24, 21]);
    // ml's two namespaces: each keeps its usage, the rest goes by usage (20:4).
    expect(hardOf(plan)).toMatchObject({ 'ml-train': 29, 'ml-infer': 6 });
    expect(plan.namespaces.find((n) => n.namespace === 'nlp')!.reason).toBe(
      'nvidia.com/gpu: team nlp (weight 3) uses 10, guaranteed 24, wants 10, fair share 24 → 24 of 80 shared out',
    );
  });

  it('never strands an idle team: two idle teams of equal weight on an empty 16-GPU pool get 8 each', () => {
    const cfg = QuotaConfigSchema.parse({
      teams: [
        { name: 'a', namespaces: ['a'] },
        { name: 'b', namespaces: ['b'] },
      ],
    });
    expect(hardOf(planQuotas(cfg, facts(16, { a: 0, b: 0 }, { a: 8, b: 8 })))).toEqual({ a: 8, b: 8 });
    // A team using 4 keeps its 4 and half of the 12 free; the idle one the other half.
    expect(hardOf(planQuotas(cfg, facts(16, { a: 4, b: 0 }, { a: 8, b: 8 })))).toEqual({ a: 10, b: 6 });
  });

  it('lends an idle share to a quota-bound team only down to the lender’s headroom, and gives it back as its usage returns', () => {
    const cfg = QuotaConfigSchema.parse({
      headroom: { [GPU]: 1 },
      teams: [
        { name: 'a', namespaces: ['a'] },
        { name: 'b', namespaces: ['b'] },
      ],
    });
    // b runs 12 of its 12 (its next pod would be refused) and wants 3 more; a is idle: its fair
    // share of the 4 free is 2, of which it lends 1 and keeps 1 (its headroom).
    const lend = planQuotas(cfg, facts(16, { a: 0, b: 12 }, { a: 2, b: 12 }));
    expect(hardOf(lend)).toEqual({ a: 1, b: 15 });
    expect(lend.namespaces.find((n) => n.namespace === 'a')!.reason).toContain('fair share 2, lends 1 → 1');
    // a's next pod was admitted (headroom 1); the next round a is entitled to half of what is
    // free again, and b (not bound any more) falls to its share.
    const back = planQuotas(cfg, facts(16, { a: 1, b: 12 }, { a: 1, b: 15 }));
    expect(hardOf(back)).toEqual({ a: 3, b: 13 });
    // A larger headroom lends less.
    const wide = QuotaConfigSchema.parse({ ...cfg, teams: cfg.teams.map((t) => ({ ...t, headroom: { [GPU]: 2 } })) });
    expect(hardOf(planQuotas(wide, facts(16, { a: 0, b: 12 }, { a: 2, b: 12 })))).toEqual({ a: 2, b: 14 });
  });

  it('lets a quota fall at most maxDecreasePerRound a round, and a rise beyond the floor wait for the room', () => {
    const cfg = QuotaConfigSchema.parse({
      maxDecreasePerRound: { [GPU]: 2 },
      teams: [
        { name: 'a', namespaces: ['a'] },
        { name: 'b', namespaces: ['b'] },
      ],
    });
    // b started 8 pods (a idle): the plan is a 4, b 12 (bound: it wants 10 → 12 is its share);
    // a may fall 8 → 6 this round, so b rises only into the 2 that freed.
    const first = planQuotas(cfg, facts(16, { a: 0, b: 8 }, { a: 8, b: 8 }));
    expect(hardOf(first)).toEqual({ a: 6, b: 10 });
    expect(hardOf(planQuotas(cfg, facts(16, { a: 0, b: 8 }, { a: 6, b: 10 })))).toEqual({ a: 4, b: 12 });
    // A capacity loss is followed at the same pace, and the plan says the total is above the pool.
    const loss = planQuotas(cfg, facts(8, { a: 0, b: 0 }, { a: 8, b: 8 }));
    expect(hardOf(loss)).toEqual({ a: 6, b: 6 });
    expect(loss.warnings).toEqual([
      'nvidia.com/gpu: quotas fall at most 2 per round (maxDecreasePerRound): together 12, above the 8 shared ' +
        'out, until later rounds',
    ]);
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
        /** Quota now above usage, when not bound. */
        slack: fc.integer({ min: 1, max: 40 }),
        headroom: fc.integer({ min: 0, max: 4 }),
      }),
      { minLength: 1, maxLength: 6 },
    ),
    maxDecrease: fc.option(fc.integer({ min: 1, max: 8 }), { nil: undefined }),
  });
  type Input = typeof input extends fc.Arbitrary<infer T> ? T : never;
  const build = (x: Input) => {
    const config: QuotaConfig = QuotaConfigSchema.parse({
      overcommit: x.overcommit,
      buffer: { [GPU]: x.buffer },
      ...(x.maxDecrease !== undefined ? { maxDecreasePerRound: { [GPU]: x.maxDecrease } } : {}),
      teams: x.teams.map((t, i) => ({
        name: `t${i}`,
        namespaces: [`ns${i}`],
        weight: t.weight,
        headroom: { [GPU]: t.headroom },
        guarantee: { [GPU]: t.guarantee },
        ...(t.max !== undefined ? { max: { [GPU]: t.max } } : {}),
      })),
    });
    const f = facts(
      x.capacity,
      Object.fromEntries(x.teams.map((t, i) => [`ns${i}`, t.usage])),
      Object.fromEntries(x.teams.map((t, i) => [`ns${i}`, t.bound ? t.usage : t.usage + t.slack])),
    );
    return { config, f };
  };
  const opts = { seed: 20261125, numRuns: 300 };
  const sharedOf = (x: Input) => Math.max(0, Math.floor(x.capacity * x.overcommit + 1e-9) - x.buffer);
  /** No guarantees, no maxima, no rate limit: every team shares what is free by weight only. */
  const plainTeams = input.map((x) => ({
    ...x,
    maxDecrease: undefined,
    teams: x.teams.map((t) => ({ ...t, guarantee: 0, max: undefined })),
  }));
  /** ⌊what is free × w / Σw⌋: a team's weighted share of the pool less what every team uses. */
  const shareOfFree = (x: Input, i: number) => {
    const free = Math.max(0, sharedOf(x) - x.teams.reduce((s, t) => s + t.usage, 0));
    return Math.floor((free * x.teams[i]!.weight) / x.teams.reduce((s, t) => s + t.weight, 0) + 1e-9);
  };

  it('never strands a team: it keeps its usage plus min(headroom, its weighted share of what is free)', () => {
    fc.assert(
      fc.property(plainTeams, (x) => {
        const { config, f } = build(x);
        const plan = planQuotas(config, f);
        x.teams.forEach((t, i) =>
          expect(team(plan, `t${i}`)).toBeGreaterThanOrEqual(t.usage + Math.min(t.headroom, shareOfFree(x, i))),
        );
      }),
      opts,
    );
  });

  it('lends nothing when no team is quota-bound: each keeps its usage plus its weighted share of what is free', () => {
    fc.assert(
      fc.property(plainTeams, (x) => {
        const idle = { ...x, teams: x.teams.map((t) => ({ ...t, bound: false })) };
        const { config, f } = build(idle);
        const plan = planQuotas(config, f);
        idle.teams.forEach((t, i) =>
          expect(team(plan, `t${i}`)).toBeGreaterThanOrEqual(t.usage + shareOfFree(idle, i)),
        );
      }),
      opts,
    );
  });

  it('lends only above the lender’s floor: every team keeps min(its entitlement, max(guarantee, usage + headroom))', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, f } = build(x);
        const plan = planQuotas(config, f);
        x.teams.forEach((t, i) => {
          const s = plan.teams.find((p) => p.team === `t${i}`)!.resources[GPU]!;
          const floor = Math.min(t.guarantee, t.max ?? Infinity);
          expect(s.keep).toBe(Math.min(s.base, Math.max(t.usage, floor, t.usage + t.headroom)));
          expect(s.hard).toBeGreaterThanOrEqual(s.keep);
        });
      }),
      opts,
    );
  });

  it('lets no quota fall more than maxDecreasePerRound, and rises beyond a team’s floor only into room the pool has', () => {
    fc.assert(
      fc.property(input, fc.integer({ min: 1, max: 8 }), (x0, d) => {
        const x = { ...x0, maxDecrease: d };
        const { config, f } = build(x);
        const plan = planQuotas(config, f);
        const shared = sharedOf(x);
        const total = plan.teams.reduce((s, t) => s + t.resources[GPU]!.hard, 0);
        x.teams.forEach((t, i) => {
          const now = t.bound ? t.usage : t.usage + t.slack;
          const s = plan.teams.find((p) => p.team === `t${i}`)!.resources[GPU]!;
          expect(s.hard).toBeGreaterThanOrEqual(Math.max(t.usage, now - d));
          // Over the pool only while decreases are held: then no team rose beyond its floor.
          if (
            total >
              Math.max(
                shared,
                x.teams.reduce((a, u) => a + u.usage, 0),
              ) &&
            s.hard > now
          )
            expect(s.hard).toBeLessThanOrEqual(Math.max(now, s.keep));
        });
      }),
      opts,
    );
  });

  it('never goes below usage; the total stays within capacity × overcommit − buffer unless usage alone exceeds it', () => {
    fc.assert(
      fc.property(
        input.map((x) => ({ ...x, maxDecrease: undefined })),
        (x) => {
          const { config, f } = build(x);
          const plan = planQuotas(config, f);
          const shared = Math.max(0, Math.floor(x.capacity * x.overcommit + 1e-9) - x.buffer);
          const usage = x.teams.reduce((s, t) => s + t.usage, 0);
          x.teams.forEach((t, i) => expect(team(plan, `t${i}`)).toBeGreaterThanOrEqual(t.usage));
          const total = plan.teams.reduce((s, t) => s + t.resources[GPU]!.hard, 0);
          expect(total).toBeLessThanOrEqual(Math.max(shared, usage));
        },
      ),
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
