import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { NodeInfo } from '../../adapters/kube/model.ts';
import { gpuEighths } from '../facts.ts';
import { parseQuotaConfig, QuotaConfigSchema } from './config.ts';
import { planQuotas, type QuotaFacts, type QuotaPlan } from './planner.ts';

const G = 'gpu-reflex.io/mig-gpus';
const P1 = 'nvidia.com/mig-1g.10gb';
const P2 = 'nvidia.com/mig-2g.20gb';
const P3 = 'nvidia.com/mig-3g.40gb';
const hard = (plan: QuotaPlan, team: string, r: string) => plan.teams.find((t) => t.team === team)!.resources[r]!.hard;
const node = (name: string, product: string, allocatable: Record<string, string>): NodeInfo =>
  ({
    name,
    labels: { 'nvidia.com/gpu.product': product },
    allocatable,
    ready: true,
    unschedulable: false,
    taints: [],
  }) as unknown as NodeInfo;

describe('MIG profile quotas from GPU-equivalent shares', () => {
  it('sizes each profile by its memory slices, the largest where models disagree', () => {
    const config = QuotaConfigSchema.parse({
      migGroups: [{ name: G, profiles: [P1, P2, P3] }],
      teams: [{ name: 'a', namespaces: ['a'] }],
    });
    expect(gpuEighths(config, [node('a100', 'NVIDIA-A100-SXM4-80GB', { [P1]: '16', [P2]: '8', [P3]: '8' })])).toEqual({
      [P1]: 1,
      [P2]: 2,
      [P3]: 4,
    });
    // On an A100-40GB, 1g.10gb is the double-memory 1g (2 of 8 slices).
    expect(
      gpuEighths(config, [
        node('a100', 'NVIDIA-A100-SXM4-80GB', { [P1]: '16' }),
        node('a40', 'NVIDIA-A100-SXM4-40GB', { [P1]: '4' }),
      ]),
    ).toEqual({ [P1]: 2 });
    expect(gpuEighths(config, [node('t4', 'Tesla-T4', { [P1]: '4' })])).toEqual({});
  });

  it('turns each team’s share in GPUs into profile quotas: usage kept, the rest split by the free mix, never more GPU-equivalents than the share', () => {
    // The mixed fleet's MIG node: 16 × 1g (1/8), 8 × 2g (2/8), 8 × 3g (4/8) = 8 GPUs. research is
    // guaranteed (and held to) 2 GPUs and runs three 1g; vision is guaranteed 4 and runs one 3g.
    const config = QuotaConfigSchema.parse({
      migGroups: [{ name: G, profiles: [P1, P2, P3] }],
      teams: [
        { name: 'research', namespaces: ['research'], guarantee: { [G]: 2 }, max: { [G]: 2 } },
        { name: 'vision', namespaces: ['vision'], guarantee: { [G]: 4 } },
      ],
    });
    const facts: QuotaFacts = {
      capacity: { [P1]: 16, [P2]: 8, [P3]: 8 },
      usage: { research: { [P1]: 3 }, vision: { [P3]: 1 } },
      current: {},
      gpuEighths: { [P1]: 1, [P2]: 2, [P3]: 4 },
    };
    const plan = planQuotas(config, facts);
    expect(plan.pool[G]).toEqual({ capacity: 64, shared: 64, unit: 'eighths of a GPU' });
    expect(hard(plan, 'research', G)).toBe(16);
    // 13 eighths beyond its three 1g, split by the 57 free eighths (13 1g, 8 2g, 7 3g): 2.96, 1.82, 1.60 → 2, 1, 1 (8 eighths); the 5 left buy +1 1g, +1 2g (3g needs 4).
    expect([P1, P2, P3].map((p) => hard(plan, 'research', p))).toEqual([6, 2, 1]);
    expect([P1, P2, P3].reduce((s, p, k) => s + hard(plan, 'research', p) * [1, 2, 4][k]!, 0)).toBeLessThanOrEqual(16);
    expect(hard(plan, 'vision', P3)).toBeGreaterThanOrEqual(1);
    const ns = plan.namespaces.find((n) => n.namespace === 'research')!;
    expect(ns.hard).toEqual({ [`requests.${P1}`]: 6, [`requests.${P2}`]: 2, [`requests.${P3}`]: 1 });
    expect(ns.reason).toBe(
      `${G} (in GPU-equivalents): team research (weight 1) uses 0.375 GPUs, guaranteed 2 GPUs, wants 0.375 GPUs, fair share 2 GPUs → 2 GPUs of 8 GPUs shared out, as 1g.10gb 6, 2g.20gb 2, 3g.40gb 1`,
    );
  });

  it('refuses a group profile named directly, and names the field', () => {
    expect(() =>
      parseQuotaConfig(
        `migGroups: [{ name: ${G}, profiles: [${P1}] }]\nteams: [{ name: a, namespaces: [a], max: { ${P1}: 4 } }]`,
      ),
    ).toThrow(`teams.0.max.${P1}: ${P1} is derived from group ${G}: state the team's share in GPUs under ${G}`);
    expect(() =>
      parseQuotaConfig(
        `migGroups: [{ name: ${G}, profiles: [nvidia.com/gpu] }]\nteams: [{ name: a, namespaces: [a] }]`,
      ),
    ).toThrow(/migGroups\.0\.profiles\.0: not a MIG profile resource/);
    expect(() =>
      parseQuotaConfig(
        `migGroups: [{ name: ${G}, profiles: [${P1}] }, { name: x.io/g, profiles: [${P1}] }]\nteams: [{ name: a, namespaces: [a] }]`,
      ),
    ).toThrow(`migGroups.1.profiles.0: ${P1} already belongs to group ${G}`);
  });
});

describe('MIG profile quotas: properties', () => {
  const input = fc.record({
    eighths: fc.array(fc.constantFrom(1, 2, 4, 8), { minLength: 3, maxLength: 3 }),
    capacity: fc.array(fc.integer({ min: 0, max: 40 }), { minLength: 3, maxLength: 3 }),
    overcommit: fc.constantFrom(1, 1.1),
    buffer: fc.integer({ min: 0, max: 2 }),
    teams: fc.array(
      fc.record({
        weight: fc.integer({ min: 1, max: 4 }),
        guarantee: fc.integer({ min: 0, max: 6 }),
        max: fc.option(fc.integer({ min: 6, max: 12 }), { nil: undefined }),
        usage: fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 3, maxLength: 3 }),
        bound: fc.boolean(),
      }),
      { minLength: 1, maxLength: 5 },
    ),
  });
  type Input = typeof input extends fc.Arbitrary<infer T> ? T : never;
  const PS = [P1, P2, P3];
  const build = (x: Input) => {
    const config = QuotaConfigSchema.parse({
      overcommit: x.overcommit,
      buffer: { [G]: x.buffer },
      migGroups: [{ name: G, profiles: PS }],
      teams: x.teams.map((t, i) => ({
        name: `t${i}`,
        namespaces: [`ns${i}`],
        weight: t.weight,
        guarantee: { [G]: t.guarantee },
        ...(t.max !== undefined ? { max: { [G]: t.max } } : {}),
      })),
    });
    const per = (f: (t: Input['teams'][number], k: number) => number) =>
      Object.fromEntries(x.teams.map((t, i) => [`ns${i}`, Object.fromEntries(PS.map((p, k) => [p, f(t, k)]))]));
    const facts: QuotaFacts = {
      capacity: Object.fromEntries(PS.map((p, k) => [p, x.capacity[k]!])),
      usage: per((t, k) => t.usage[k]!),
      current: per((t, k) => (t.bound ? t.usage[k]! : t.usage[k]! + 2)),
      gpuEighths: Object.fromEntries(PS.map((p, k) => [p, x.eighths[k]!])),
    };
    return { config, facts };
  };
  const opts = { seed: 20261127, numRuns: 400 };

  it('never below usage; within each profile’s pool; never more GPU-equivalents than the team’s share; the share within its max and guarantee', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        const plan = planQuotas(config, facts);
        PS.forEach((p) => {
          const used = x.teams.reduce((s, t) => s + t.usage[PS.indexOf(p)]!, 0);
          plan.teams.forEach((t, i) =>
            expect(t.resources[p]!.hard).toBeGreaterThanOrEqual(x.teams[i]!.usage[PS.indexOf(p)]!),
          );
          expect(plan.teams.reduce((s, t) => s + t.resources[p]!.hard, 0)).toBeLessThanOrEqual(
            Math.max(plan.pool[p]!.shared, used),
          );
        });
        const sharedG = plan.pool[G]!.shared;
        const usedG = plan.teams.reduce((s, t) => s + t.resources[G]!.usage, 0);
        const baseG = x.teams.reduce(
          (s, t, i) => s + Math.max(plan.teams[i]!.resources[G]!.usage, 8 * Math.min(t.guarantee, t.max ?? Infinity)),
          0,
        );
        plan.teams.forEach((t, i) => {
          const eq = PS.reduce((s, p, k) => s + t.resources[p]!.hard * x.eighths[k]!, 0);
          expect(eq).toBeLessThanOrEqual(Math.max(t.resources[G]!.hard, t.resources[G]!.usage));
          const m = x.teams[i]!.max;
          if (m !== undefined) expect(t.resources[G]!.hard).toBeLessThanOrEqual(Math.max(8 * m, t.resources[G]!.usage));
          if (baseG <= sharedG)
            expect(t.resources[G]!.hard).toBeGreaterThanOrEqual(8 * Math.min(x.teams[i]!.guarantee, m ?? Infinity));
        });
        expect(plan.teams.reduce((s, t) => s + t.resources[G]!.hard, 0)).toBeLessThanOrEqual(Math.max(sharedG, usedG));
      }),
      opts,
    );
  });

  it('is deterministic: the order teams are configured in changes nothing', () => {
    fc.assert(
      fc.property(input, (x) => {
        const { config, facts } = build(x);
        expect(planQuotas({ ...config, teams: [...config.teams].reverse() }, facts)).toEqual(planQuotas(config, facts));
      }),
      opts,
    );
  });
});
