import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLayout, enumerateLayouts } from './layout.ts';
import { afterPlan, planMig, type MigGpu, type MigHolder, type MigNode, type PendingMigPod } from './planner.ts';
import { PreemptionPolicySchema, protectedBy, type PreemptionPolicy } from './policy.ts';
import { weigh } from './preemption.ts';
import { migModel, type MigModel } from '../../lib/mig-profiles.ts';

const H100 = migModel('H100-80GB')!;
const A100 = migModel('A100-80GB')!;
const A30 = migModel('A30-24GB')!;

const holder = (name: string, priority: number, o: Partial<MigHolder> = {}): MigHolder => ({
  namespace: 'research',
  name,
  priority,
  ...o,
});
/** A GPU whose first `holders.length` instances are in use, one per holder. */
const busy = (
  node: string,
  index: number,
  model: MigModel,
  profiles: string[],
  holders: MigHolder[] | undefined,
  inUse = holders?.length ?? 0,
): MigGpu => ({
  node,
  index,
  model,
  instances: profiles.map((profile, i) => ({ profile, inUse: i < inUse })),
  ...(holders ? { holders } : {}),
});
const node = (name: string, gpus: MigGpu[]): MigNode => ({ name, labels: {}, schedulable: true, gpus });
const pending = (
  name: string,
  requests: Record<string, number>,
  priority: number,
  o: Partial<PendingMigPod> = {},
): PendingMigPod => ({ namespace: 'serve', name, priority, requests, nodeSelector: {}, ...o });
const policy = (o: Partial<PreemptionPolicy> = {}): PreemptionPolicy =>
  PreemptionPolicySchema.parse({ enabled: true, ...o });

/** The default scenario's situation: every GPU runs low-priority notebooks; high priority waits for 1g.10gb. */
const notebooks = () =>
  node('h100', [
    busy('h100', 0, H100, ['4g.40gb', '3g.40gb'], [holder('notebook-0', 0), holder('notebook-1', 0)]),
    busy('h100', 1, H100, ['7g.80gb'], [holder('notebook-2', 0)]),
  ]);
const waiting = [0, 1, 2, 3].map((i) => pending(`infer-${i}`, { '1g.10gb': 1 }, 1000));

describe('planMig with preemption', () => {
  it('relays nothing in use when preemption is off (the default policy)', () => {
    const plan = planMig([notebooks()], waiting, { preemption: PreemptionPolicySchema.parse({}) });
    expect(plan.changes).toEqual([]);
    expect(plan).toEqual(planMig([notebooks()], waiting));
  });

  it('preempts the GPU that destroys the least for higher-priority pods, and says whom and why', () => {
    const plan = planMig([notebooks()], waiting, { preemption: policy() });
    expect(plan.changes).toEqual([
      expect.objectContaining({
        node: 'h100',
        gpu: 1,
        from: ['7g.80gb'],
        disrupts: ['research/notebook-2'],
        preempts: [holder('notebook-2', 0)],
        unblocks: waiting.map((p) => `serve/${p.name}`),
      }),
    ]);
    // Zero waste among the layouts that serve all four (the first in enumeration order).
    expect([...plan.changes[0]!.to].sort()).toEqual([
      '1g.10gb',
      '1g.10gb',
      '1g.10gb',
      '1g.10gb',
      '1g.10gb',
      '1g.10gb+me',
      '1g.20gb',
    ]);
    expect(plan.changes[0]!.why).toContain(
      'h100 GPU 1 runs only pods of priority 0 or lower (research/notebook-2 at 0), at least 1000 below the pending pods of priority 1000 it serves; preempting it',
    );
    expect(plan).toMatchObject({ satisfiedBefore: 0, satisfiedAfter: 4 });
  });

  it('prefers an idle GPU to preempting one', () => {
    const n = notebooks();
    n.gpus.push(busy('h100', 2, H100, ['7g.80gb'], []));
    const plan = planMig([n], waiting, { preemption: policy() });
    expect(plan.changes.map((c) => [c.gpu, c.disrupts])).toEqual([[2, []]]);
  });

  it('never preempts within the priority gap, a protected pod, or a GPU whose holders are unknown', () => {
    expect(planMig([notebooks()], waiting, { preemption: policy({ minPriorityGap: 1001 }) }).changes).toEqual([]);
    const guarded = (h: Partial<MigHolder>) => node('h100', [busy('h100', 0, H100, ['7g.80gb'], [holder('nb', 0, h)])]);
    expect(
      planMig([guarded({ namespace: 'kube-system' })], waiting, {
        preemption: policy({ protect: [{ namespace: 'kube-system' }] }),
      }).changes,
    ).toEqual([]);
    expect(
      planMig([guarded({ priorityClassName: 'interactive' })], waiting, {
        preemption: policy({ protect: [{ priorityClassName: 'interactive' }] }),
      }).changes,
    ).toEqual([]);
    expect(
      planMig([guarded({})], waiting, { preemption: policy({ protect: [{ priorityClassName: 'interactive' }] }) })
        .changes,
    ).toHaveLength(1);
    const unknown = node('h100', [busy('h100', 0, H100, ['7g.80gb'], undefined, 1)]);
    expect(planMig([unknown], waiting, { preemption: policy() }).changes).toEqual([]);
    const locked = node('h100', [
      { ...busy('h100', 0, H100, ['7g.80gb'], [holder('nb', 0)]), locked: 'a relayout is under way' },
    ]);
    expect(planMig([locked], waiting, { preemption: policy() }).changes).toEqual([]);
  });

  it('preempts no more GPUs per round than allowed', () => {
    const many = [0, 1, 2].map((i) => busy('h100', i, H100, ['7g.80gb'], [holder(`nb-${i}`, 0)]));
    const pods = Array.from({ length: 20 }, (_, i) =>
      pending(`p-${String(i).padStart(2, '0')}`, { '1g.10gb': 1 }, 1000),
    );
    expect(planMig([node('h100', many)], pods, { preemption: policy() }).changes).toHaveLength(1);
    expect(planMig([node('h100', many)], pods, { preemption: policy({ maxGpusPerRound: 2 }) }).changes).toHaveLength(2);
  });
});

/** Random fleets whose busy GPUs have holders (or not: unknown), of random priority, namespace and class. */
const MODELS = [H100, A100, A30];
const LAYOUTS = new Map(MODELS.map((m) => [m, enumerateLayouts(m)]));
const holderArb = fc.record({
  priority: fc.constantFrom(0, 0, 10, 1000),
  ns: fc.constantFrom('research', 'research', 'kube-system'),
  cls: fc.constantFrom(undefined, undefined, 'interactive'),
});
const fleetArb = fc
  .array(
    fc.record({
      model: fc.constantFrom(...MODELS),
      pool: fc.constantFrom('p', 'q'),
      gpus: fc.array(
        fc.record({
          layout: fc.nat(),
          used: fc.nat({ max: 8 }),
          known: fc.integer({ min: 0, max: 5 }).map((x) => x > 0),
          holders: fc.array(holderArb, { minLength: 7, maxLength: 7 }),
        }),
        { minLength: 1, maxLength: 4 },
      ),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map((specs) =>
    specs.map((s, ni): MigNode => {
      const name = `n${ni}`;
      const layouts = LAYOUTS.get(s.model)!;
      const gpus = s.gpus.map((g, gi) => {
        const l = layouts[g.layout % layouts.length]!;
        const used = Math.min(g.used, l.length);
        // One holder per instance in use (pods on several instances are covered by the unit tests).
        const hs = g.holders.slice(0, used).map((h, i) =>
          holder(`${name}-${gi}-${i}`, h.priority, {
            namespace: h.ns,
            ...(h.cls ? { priorityClassName: h.cls } : {}),
          }),
        );
        return busy(name, gi, s.model, l, g.known ? hs : undefined, used);
      });
      return { name, labels: { pool: s.pool }, schedulable: true, gpus };
    }),
  );
const ALL_PROFILES = [...new Set(MODELS.flatMap((m) => m.profiles.map((p) => p.name)))];
const podsArb = fc
  .array(
    fc.record({
      profile: fc.constantFrom(...ALL_PROFILES),
      n: fc.integer({ min: 1, max: 2 }),
      priority: fc.constantFrom(0, 10, 1000, 2000),
      pool: fc.constantFrom(undefined, 'p', 'q'),
    }),
    { maxLength: 10 },
  )
  .map((xs) =>
    xs.map((x, i) =>
      pending(`p${i}`, { [x.profile]: x.n }, x.priority, x.pool ? { nodeSelector: { pool: x.pool } } : {}),
    ),
  );
const policyArb = fc
  .record({ minPriorityGap: fc.constantFrom(1, 10, 500), maxGpusPerRound: fc.constantFrom(1, 2, 16) })
  .map((p) => policy({ ...p, protect: [{ namespace: 'kube-system' }, { priorityClassName: 'interactive' }] }));
const scenarioArb = fc.tuple(fleetArb, podsArb, policyArb);

const inUse = (g: MigGpu) => g.instances.some((i) => i.inUse);

describe('planMig with preemption: properties', () => {
  it('with preemption off, plans exactly as without a policy and relays no GPU in use', () => {
    fc.assert(
      fc.property(scenarioArb, ([nodes, pods, p]) => {
        const plan = planMig(nodes, pods, { preemption: { ...p, enabled: false } });
        expect(plan).toEqual(planMig(nodes, pods));
        const byKey = new Map(nodes.flatMap((n) => n.gpus.map((g) => [`${g.node}#${g.index}`, g] as const)));
        for (const c of plan.changes) expect(inUse(byKey.get(`${c.node}#${c.gpu}`)!)).toBe(false);
      }),
      { numRuns: 150, seed: 21 },
    );
  });

  it('preempts only known, unprotected pods at least the gap below the pods it serves, no more GPUs than allowed, serving more than it destroys', () => {
    let preempting = 0;
    fc.assert(
      fc.property(scenarioArb, ([nodes, pods, p]) => {
        const plan = planMig(nodes, pods, { preemption: p });
        const byKey = new Map(nodes.flatMap((n) => n.gpus.map((g) => [`${g.node}#${g.index}`, g] as const)));
        const podOf = new Map(pods.map((x) => [`${x.namespace}/${x.name}`, x]));
        let busyChanged = 0;
        for (const c of plan.changes) {
          const g = byKey.get(`${c.node}#${c.gpu}`)!;
          expect(checkLayout(g.model, c.to).valid).toBe(true);
          expect(c.unblocks.length).toBeGreaterThan(0);
          if (!inUse(g)) {
            expect(c.preempts).toEqual([]);
            continue;
          }
          busyChanged++;
          // Every pod holding the GPU is preempted (mig-manager recreates all its instances), and
          // only where the holders are known.
          expect(g.holders).toBeDefined();
          expect(c.preempts.map((h) => `${h.namespace}/${h.name}`).sort()).toEqual(
            g.holders!.map((h) => `${h.namespace}/${h.name}`).sort(),
          );
          expect(c.disrupts.sort()).toEqual(c.preempts.map((h) => `${h.namespace}/${h.name}`).sort());
          const served = c.unblocks.map((u) => podOf.get(u)!.priority);
          for (const h of c.preempts) {
            expect(protectedBy(h, p.protect)).toBeUndefined();
            expect(h.priority + p.minPriorityGap).toBeLessThanOrEqual(Math.max(...served));
          }
          expect(
            weigh(
              served,
              c.preempts.map((h) => h.priority),
            ),
          ).toBeGreaterThan(0);
        }
        if (busyChanged > 0) preempting++;
        expect(busyChanged).toBeLessThanOrEqual(p.maxGpusPerRound);
        // A pending pod may lose a free instance to pods far enough above it, but the served weight
        // only grows, and strictly with every plan that changes something.
        const applied = afterPlan(nodes, pods, plan);
        const placed = (left: PendingMigPod[]) => pods.filter((x) => !left.includes(x)).map((x) => x.priority);
        const gain = weigh(placed(applied.pending), placed(afterPlan(nodes, pods, { changes: [] }).pending));
        if (plan.changes.length > 0) expect(gain).toBeGreaterThan(0);
        else expect(gain).toBe(0);
        // The applied state (preempted pods gone, pods placed) replans to nothing, unless the
        // round's limit held preemptions back: then the next round relays none of these GPUs again.
        expect(applied.pending.length).toBe(pods.length - plan.satisfiedAfter);
        const again = planMig(applied.nodes, applied.pending, { preemption: p });
        if (busyChanged < p.maxGpusPerRound) expect(again.changes).toEqual([]);
        else
          for (const c of again.changes)
            expect(plan.changes.some((d) => d.node === c.node && d.gpu === c.gpu)).toBe(false);
      }),
      { numRuns: 300, seed: 22 },
    );
    // The properties mean something only if many fleets do get preempted.
    expect(preempting).toBeGreaterThan(40);
  });

  it('is deterministic: the same fleet in any order, holders included, gives the same plan', () => {
    fc.assert(
      fc.property(scenarioArb, ([nodes, pods, p]) => {
        const a = planMig(nodes, pods, { preemption: p });
        const shuffled = [...nodes].reverse().map((n) => ({
          ...n,
          gpus: [...n.gpus]
            .reverse()
            .map((g) => ({ ...g, ...(g.holders ? { holders: [...g.holders].reverse() } : {}) })),
        }));
        expect(planMig(shuffled, [...pods].reverse(), { preemption: p })).toEqual(a);
      }),
      { numRuns: 100, seed: 23 },
    );
  });
});
