import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLayout, enumerateLayouts } from './layout.ts';
import { afterPlan, planMig, type MigGpu, type MigNode, type PendingMigPod } from './planner.ts';
import { migModel, type MigModel } from '../../lib/mig-profiles.ts';

const H100 = migModel('H100-80GB')!;
const A100 = migModel('A100-80GB')!;
const A30 = migModel('A30-24GB')!;

const gpu = (node: string, index: number, model: MigModel, profiles: string[], inUse = 0): MigGpu => ({
  node,
  index,
  model,
  instances: profiles.map((profile, i) => ({ profile, inUse: i < inUse })),
});
const node = (name: string, gpus: MigGpu[], labels: Record<string, string> = {}, schedulable = true): MigNode => ({
  name,
  labels,
  schedulable,
  gpus,
});
const pending = (name: string, requests: Record<string, number>, o: Partial<PendingMigPod> = {}): PendingMigPod => ({
  namespace: 'ml',
  name,
  priority: 0,
  requests,
  nodeSelector: {},
  ...o,
});
const SEVEN_1G = Array<string>(7).fill('1g.10gb');

describe('planMig', () => {
  it("relays the fewest idle GPUs, never a busy one, for pods waiting on 3g.40gb (the issue's H100 case)", () => {
    const n = node('h100-0', [
      gpu('h100-0', 0, H100, SEVEN_1G, 3),
      gpu('h100-0', 1, H100, SEVEN_1G, 1),
      gpu('h100-0', 2, H100, SEVEN_1G),
      gpu('h100-0', 3, H100, SEVEN_1G),
    ]);
    const plan = planMig([n], [pending('big-0', { '3g.40gb': 1 }), pending('big-1', { '3g.40gb': 1 })]);
    expect(plan.changes).toEqual([
      expect.objectContaining({
        node: 'h100-0',
        gpu: 2,
        from: SEVEN_1G,
        to: ['3g.40gb', '3g.40gb'],
        unblocks: ['ml/big-0', 'ml/big-1'],
        disrupts: [],
      }),
    ]);
    expect(plan.changes[0]!.why).toContain(
      'h100-0 GPU 2 is idle (no instance in use); 7×1g.10gb → 2×3g.40gb gives 2 pending pods the 3g.40gb instances they wait for',
    );
    expect(plan).toMatchObject({ satisfiedBefore: 0, satisfiedAfter: 2, unmet: [] });
  });

  it('keeps as much of the old layout as it can: one 3g from 7×1g keeps four 1g (zero waste)', () => {
    const plan = planMig([node('h', [gpu('h', 0, H100, SEVEN_1G)])], [pending('big', { '3g.40gb': 1 })]);
    expect(plan.changes.map((c) => [...c.to].sort())).toEqual([
      ['1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb', '3g.40gb'],
    ]);
  });

  it('changes nothing when free instances already fit, or nothing idle can help, and says why', () => {
    const n = node('h', [gpu('h', 0, H100, ['4g.40gb', '3g.40gb'], 1)], { pool: 'h100' });
    expect(planMig([n], [pending('fits', { '3g.40gb': 1 })])).toMatchObject({
      changes: [],
      satisfiedBefore: 1,
      satisfiedAfter: 1,
    });
    const busy = planMig([n], [pending('a', { '3g.40gb': 1 }), pending('b', { '1g.10gb': 1 })]);
    expect(busy.changes).toEqual([]);
    expect(busy.unmet.map((u) => u.pod)).toEqual(['ml/b']);
    expect(busy.unmet[0]!.why).toContain('has an instance in use');
    expect(
      planMig([n], [pending('elsewhere', { '1g.10gb': 1 }, { nodeSelector: { pool: 'a100' } })]).unmet[0]!.why,
    ).toBe('no schedulable MIG node matches its nodeSelector (pool=a100)');
    expect(planMig([n], [pending('a30', { '1g.6gb': 1 })]).unmet[0]!.why).toBe(
      'no GPU model on the 1 node(s) it may use has the profile(s) 1g.6gb',
    );
  });

  it('serves the pinned pod the instance relaid for it although a free pod of higher priority could take it', () => {
    // Issue #30: the bench fleet smallMigScenarios(100, 11)[83]. job-0 (priority 100, any node) has a free
    // 2g.20gb on h100-0 now; matched by name it took the one relaid on a100-1 for job-4 (which may use only
    // a100-1), so that relayout served nobody more and 4 pods ran where 5 could (match.ts: what is free on
    // GPUs left as they are goes first).
    const H = { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' };
    const A = { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' };
    const nodes = [
      node(
        'h100-0',
        [
          gpu('h100-0', 0, H100, ['7g.80gb']),
          gpu('h100-0', 1, H100, ['2g.20gb', '1g.20gb', '1g.10gb+me'], 3),
          gpu('h100-0', 2, H100, ['2g.20gb', '1g.20gb', '1g.20gb', '1g.20gb']),
          gpu('h100-0', 3, H100, ['2g.20gb', '2g.20gb', '2g.20gb'], 1),
        ],
        H,
      ),
      node(
        'a100-1',
        [
          gpu('a100-1', 0, A100, ['3g.40gb', '1g.10gb', '1g.10gb+me']),
          gpu('a100-1', 1, A100, ['3g.40gb', '1g.10gb', '1g.10gb', '1g.10gb+me']),
        ],
        A,
      ),
    ];
    const pods = [
      pending('job-0', { '2g.20gb': 1 }, { priority: 100 }),
      pending('job-1', { '7g.80gb': 1 }, { priority: 100, nodeSelector: A }),
      pending('job-2', { '1g.10gb': 1 }, { nodeSelector: A }),
      pending('job-3', { '7g.80gb': 1 }, { priority: 100 }),
      pending('job-4', { '2g.20gb': 1 }, { nodeSelector: A }),
    ];
    const plan = planMig(nodes, pods);
    expect(plan.changes.map((c) => [c.node, c.gpu, c.to, c.unblocks])).toEqual([
      ['a100-1', 0, ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb+me'], ['ml/job-2', 'ml/job-4']],
      ['a100-1', 1, ['7g.80gb'], ['ml/job-1']],
    ]);
    expect(plan).toMatchObject({ satisfiedBefore: 3, satisfiedAfter: 5, unmet: [] });
    expect(afterPlan(nodes, pods, plan).pending).toEqual([]);
  });

  it('serves higher priority first when one idle GPU cannot serve both', () => {
    const n = node('h', [gpu('h', 0, H100, SEVEN_1G)]);
    const plan = planMig(
      [n],
      [pending('low', { '7g.80gb': 1 }, { priority: 0 }), pending('high', { '4g.40gb': 1 }, { priority: 100 })],
    );
    expect(plan.changes[0]!.unblocks).toEqual(['ml/high']);
    expect(plan.unmet.map((u) => u.pod)).toEqual(['ml/low']);
  });

  it('never takes away instances pending pods can already use, even for a higher priority', () => {
    const n = node('h', [gpu('h', 0, H100, ['2g.20gb', '1g.10gb']), gpu('h', 1, H100, SEVEN_1G, 7)]);
    const plan = planMig(
      [n],
      [
        pending('small-2g', { '2g.20gb': 1 }),
        pending('small-1g', { '1g.10gb': 1 }),
        pending('whole', { '7g.80gb': 1 }, { priority: 10 }),
      ],
    );
    expect(plan).toMatchObject({ changes: [], satisfiedBefore: 2, satisfiedAfter: 2 });
    expect(plan.unmet).toEqual([
      { pod: 'ml/whole', why: expect.stringContaining('holds instances other pending pods can use') },
    ]);
  });

  it('honours nodeSelectors and cordons', () => {
    const a = node('a', [gpu('a', 0, H100, SEVEN_1G)], { pool: 'x' });
    const b = node('b', [gpu('b', 0, H100, SEVEN_1G)], { pool: 'y' });
    const c = node('c', [gpu('c', 0, H100, SEVEN_1G)], { pool: 'y' }, false);
    const plan = planMig([a, b, c], [pending('p', { '7g.80gb': 1 }, { nodeSelector: { pool: 'y' } })]);
    expect(plan.changes.map((ch) => ch.node)).toEqual(['b']);
  });

  it('puts a pod asking for several instances on one node', () => {
    const a = node('a', [gpu('a', 0, H100, ['3g.40gb', '4g.40gb'])]);
    const b = node('b', [gpu('b', 0, H100, ['3g.40gb', '4g.40gb']), gpu('b', 1, H100, SEVEN_1G)]);
    const plan = planMig([a, b], [pending('two', { '3g.40gb': 2 })]);
    expect(plan.satisfiedBefore).toBe(0);
    expect(plan.changes.map((c) => `${c.node}/${c.gpu}`)).toEqual(['b/1']);
    expect(plan.satisfiedAfter).toBe(1);
  });

  it('relays an idle GPU a lower pending pod would take when no priority is then served less (it waits, others run)', () => {
    // The 7g instance would go to low-whole; as 3g + 4×1g it serves high-3g and both small pods instead.
    const n = node('h', [gpu('h', 0, H100, ['7g.80gb'])]);
    const pods = [
      pending('high-3g', { '3g.40gb': 1 }, { priority: 100 }),
      pending('low-whole', { '7g.80gb': 1 }),
      pending('low-a', { '1g.10gb': 1 }),
      pending('low-b', { '1g.10gb': 1 }),
    ];
    const plan = planMig([n], pods);
    expect(plan).toMatchObject({ satisfiedBefore: 1, satisfiedAfter: 3 });
    expect(plan.changes).toHaveLength(1);
    expect([...plan.changes[0]!.unblocks].sort()).toEqual(['ml/high-3g', 'ml/low-a', 'ml/low-b']);
    expect(plan.unmet.map((u) => u.pod)).toEqual(['ml/low-whole']);
  });

  it('relays two GPUs of one node together for a pod that needs both', () => {
    const n = node('h', [gpu('h', 0, H100, SEVEN_1G), gpu('h', 1, H100, SEVEN_1G), gpu('h', 2, H100, SEVEN_1G, 7)]);
    const plan = planMig([n], [pending('two-whole', { '7g.80gb': 2 })]);
    expect(plan.changes.map((c) => [c.gpu, c.to])).toEqual([
      [0, ['7g.80gb']],
      [1, ['7g.80gb']],
    ]);
    expect(plan.changes.every((c) => c.unblocks.includes('ml/two-whole'))).toBe(true);
  });

  it('relays one GPU, not two, when one can hold what pods relaid onto two GPUs of its node take', () => {
    // "pair" alone would go to GPU 2 (losing nothing there); "big" then needs GPU 0. GPU 0 alone holds both.
    const n = node('h', [
      gpu('h', 0, H100, ['2g.20gb', '2g.20gb', '2g.20gb']),
      gpu('h', 1, H100, ['2g.20gb', '2g.20gb', '2g.20gb']),
      gpu('h', 2, H100, ['1g.20gb', '1g.10gb+me']),
    ]);
    const pods = [
      pending('pair', { '1g.10gb': 2 }, { priority: 100 }),
      pending('big', { '4g.40gb': 1 }),
      pending('c', { '1g.20gb': 1 }),
      pending('d', { '1g.20gb': 1 }),
    ];
    const plan = planMig([n], pods);
    expect(plan).toMatchObject({ satisfiedBefore: 1, satisfiedAfter: 4, unmet: [] });
    expect(plan.changes.map((c) => c.gpu)).toHaveLength(1);
  });

  it('leaves a node whole for a pod that needs two of its GPUs rather than carving one for a small pod first', () => {
    const a = node('a', [gpu('a', 0, H100, SEVEN_1G), gpu('a', 1, H100, SEVEN_1G)]);
    const b = node('b', [gpu('b', 0, H100, SEVEN_1G)]);
    const plan = planMig([a, b], [pending('small', { '3g.40gb': 1 }), pending('big', { '7g.80gb': 2 })]);
    expect(plan).toMatchObject({ satisfiedAfter: 2, unmet: [] });
    expect(plan.changes.map((c) => `${c.node}/${c.gpu} ${c.unblocks.join()}`)).toEqual([
      'a/0 ml/big',
      'a/1 ml/big',
      'b/0 ml/small',
    ]);
  });

  it('serves three smaller pods of a priority rather than one big one when one GPU cannot hold all', () => {
    const n = node('h', [gpu('h', 0, H100, ['3g.40gb', '1g.20gb', '1g.10gb+me'])]);
    const pods = [
      pending('big', { '4g.40gb': 1 }, { priority: 100 }),
      pending('mid', { '2g.20gb': 1 }, { priority: 100 }),
      pending('tiny', { '1g.10gb': 1 }, { priority: 100 }),
      pending('three', { '3g.40gb': 1 }, { priority: 100 }),
      pending('low', { '1g.10gb': 1 }),
    ];
    const plan = planMig([n], pods);
    expect(plan).toMatchObject({ satisfiedBefore: 1, satisfiedAfter: 4 });
    expect(plan.unmet.map((u) => u.pod)).toEqual(['ml/big']);
  });

  it('moves a pending pod to a spare instance of another GPU of its node to make room on the one relaid', () => {
    // "high" would take GPU 0's 1g; on GPU 1's spare 1g instead, GPU 0 holds 3g + 2×1g.20gb for the other two.
    const n = node('h', [
      gpu('h', 0, H100, ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb']),
      gpu('h', 1, H100, SEVEN_1G, 3),
    ]);
    const pods = [
      pending('high', { '1g.10gb': 1 }, { priority: 100 }),
      pending('low-3g', { '3g.40gb': 1 }),
      pending('pair', { '1g.20gb': 2 }),
    ];
    const plan = planMig([n], pods);
    expect(plan).toMatchObject({ satisfiedBefore: 2, satisfiedAfter: 3, unmet: [] });
    expect(plan.changes.map((c) => [c.gpu, [...c.to].sort()])).toEqual([[0, ['1g.20gb', '1g.20gb', '3g.40gb']]]);
  });

  it('still displaces at the priorities that lose nothing when displacing at another would serve it less', () => {
    // Displacing q0 for p1 leaves q0 nowhere (priority 0 served less): not done. Displacing q10
    // for p2 is: q10 runs on c instead (it may use a and c only: were z open to it, it would take
    // z's free 7g at once, q0's only one, while a and c are relaid).
    const a = node('a', [gpu('a', 0, H100, ['7g.80gb'])], { pool: 'a', tier: 'x' });
    const b = node('z', [gpu('z', 0, H100, ['7g.80gb'])], { pool: 'b' });
    const c = node('c', [gpu('c', 0, H100, SEVEN_1G)], { pool: 'c', tier: 'x' });
    const pods = [
      pending('p1', { '3g.40gb': 1 }, { priority: 100, nodeSelector: { pool: 'b' } }),
      pending('p2', { '3g.40gb': 1 }, { priority: 50, nodeSelector: { pool: 'a' } }),
      pending('q10', { '7g.80gb': 1 }, { priority: 10, nodeSelector: { tier: 'x' } }),
      pending('q0', { '7g.80gb': 1 }, { nodeSelector: { pool: 'b' } }),
    ];
    const plan = planMig([a, b, c], pods);
    expect(plan).toMatchObject({ satisfiedBefore: 2, satisfiedAfter: 3 });
    expect(plan.unmet.map((u) => u.pod)).toEqual(['ml/p1']);
    expect(plan.changes.map((ch) => `${ch.node} ${ch.unblocks.join()}`)).toEqual(['a ml/p2', 'c ml/q10']);
  });

  it('keeps the instance only one node offers for the pod that may use only that node', () => {
    // Matched by name, "any" would take a's 3g and "only-a" would wait although b has one too.
    const a = node('a', [gpu('a', 0, H100, ['4g.40gb', '3g.40gb'], 1)], { pool: 'x' });
    const b = node('b', [gpu('b', 0, H100, ['4g.40gb', '3g.40gb'], 1)], { pool: 'y' });
    const plan = planMig(
      [a, b],
      [pending('any', { '3g.40gb': 1 }), pending('only-a', { '3g.40gb': 1 }, { nodeSelector: { pool: 'x' } })],
    );
    expect(plan).toMatchObject({ changes: [], satisfiedBefore: 2, satisfiedAfter: 2, unmet: [] });
  });
});

/** A random MIG fleet: 1–3 nodes, 1–4 GPUs each, a valid layout per GPU, some instances in use. */
const MODELS = [H100, A100, A30];
const LAYOUTS = new Map(MODELS.map((m) => [m, enumerateLayouts(m)]));
const fleetArb = fc
  .array(
    fc.record({
      model: fc.constantFrom(...MODELS),
      pool: fc.constantFrom('p', 'q'),
      schedulable: fc.integer({ min: 0, max: 9 }).map((x) => x > 0),
      gpus: fc.array(fc.record({ layout: fc.nat(), used: fc.nat({ max: 8 }), busy: fc.boolean() }), {
        minLength: 1,
        maxLength: 4,
      }),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map((specs) =>
    specs.map((s, ni): MigNode => {
      const name = `n${ni}`;
      const layouts = LAYOUTS.get(s.model)!;
      return node(
        name,
        s.gpus.map((g, gi) => {
          const l = layouts[g.layout % layouts.length]!;
          return gpu(name, gi, s.model, l, g.busy ? Math.min(g.used, l.length) : 0);
        }),
        { pool: s.pool },
        s.schedulable,
      );
    }),
  );
const podsArb = (profiles: string[]) =>
  fc
    .array(
      fc.record({
        profile: fc.constantFrom(...profiles),
        n: fc.integer({ min: 1, max: 2 }),
        priority: fc.constantFrom(0, 0, 10),
        pool: fc.constantFrom(undefined, 'p', 'q'),
      }),
      { maxLength: 10 },
    )
    .map((xs) =>
      xs.map((x, i) =>
        pending(`p${i}`, { [x.profile]: x.n }, { priority: x.priority, nodeSelector: x.pool ? { pool: x.pool } : {} }),
      ),
    );
const ALL_PROFILES = [...new Set(MODELS.flatMap((m) => m.profiles.map((p) => p.name)))];
const scenarioArb = fc.tuple(fleetArb, podsArb(ALL_PROFILES));

/** Valid layouts on idle GPUs only, each serving a pod; never fewer satisfied; the applied state replans to nothing. */
function holdsThePromises(nodes: MigNode[], pods: PendingMigPod[], plan: ReturnType<typeof planMig>) {
  const byKey = new Map(nodes.flatMap((n) => n.gpus.map((g) => [`${g.node}#${g.index}`, g] as const)));
  for (const c of plan.changes) {
    const g = byKey.get(`${c.node}#${c.gpu}`)!;
    expect(checkLayout(g.model, c.to).valid).toBe(true);
    expect(g.instances.some((i) => i.inUse)).toBe(false);
    expect(c.unblocks.length).toBeGreaterThan(0);
  }
  expect(plan.satisfiedAfter).toBeGreaterThanOrEqual(plan.satisfiedBefore);
  const applied = afterPlan(nodes, pods, plan);
  expect(applied.pending.length).toBe(pods.length - plan.satisfiedAfter);
  expect(planMig(applied.nodes, applied.pending).changes).toEqual([]);
}

describe('planMig properties', () => {
  it('emits only valid layouts, touches only idle GPUs, never satisfies less, and its applied state replans to nothing', () => {
    let planned = 0;
    fc.assert(
      fc.property(scenarioArb, ([nodes, pods]) => {
        const plan = planMig(nodes, pods);
        if (plan.changes.length > 0) planned++;
        holdsThePromises(nodes, pods, plan);
        if (plan.changes.length === 0) expect(plan.satisfiedAfter).toBe(plan.satisfiedBefore);
      }),
      { numRuns: 300, seed: 12 },
    );
    // The properties mean something only if many fleets do get relaid.
    expect(planned).toBeGreaterThan(60);
  });

  it('on a fleet of 40 nodes × 8 GPUs with 400 pending pods: valid layouts, idle GPUs only, and the applied state replans to nothing', () => {
    for (const seed of [1, 2, 3]) {
      const r = fc.sample(
        fc.tuple(
          fc.array(fc.nat(), { minLength: 320, maxLength: 320 }),
          fc.array(fc.tuple(fc.nat(), fc.nat({ max: 9 }), fc.nat({ max: 2 })), { minLength: 400, maxLength: 400 }),
        ),
        { numRuns: 1, seed },
      )[0]!;
      const [layoutPicks, podPicks] = r;
      const nodes = Array.from({ length: 40 }, (_, i) => {
        const model = i % 2 ? A100 : H100;
        const layouts = LAYOUTS.get(model)!;
        return node(
          `n${String(i).padStart(2, '0')}`,
          Array.from({ length: 8 }, (_, g) => {
            const pick = layoutPicks[i * 8 + g]!;
            const l = layouts[pick % layouts.length]!;
            return gpu(`n${String(i).padStart(2, '0')}`, g, model, l, pick % 5 === 0 ? 1 : 0);
          }),
          { pool: i % 3 ? 'p' : 'q' },
        );
      });
      const profiles = ['1g.10gb', '1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'];
      const pods = podPicks.map(([p, sel, pr], i) =>
        pending(
          `p${i}`,
          { [profiles[p % profiles.length]!]: p % 7 === 0 ? 2 : 1 },
          { priority: [0, 0, 100][pr]!, nodeSelector: sel < 2 ? { pool: sel ? 'p' : 'q' } : {} },
        ),
      );
      const plan = planMig(nodes, pods);
      expect(plan.changes.length).toBeGreaterThan(10);
      expect(plan.satisfiedAfter).toBeGreaterThan(plan.satisfiedBefore);
      holdsThePromises(nodes, pods, plan);
    }
  });

  it('is deterministic: the same fleet in any order gives the same plan', () => {
    fc.assert(
      fc.property(scenarioArb, ([nodes, pods]) => {
        const a = planMig(nodes, pods);
        const b = planMig(
          [...nodes].reverse().map((n) => ({ ...n, gpus: [...n.gpus].reverse() })),
          [...pods].reverse(),
        );
        expect(b).toEqual(a);
      }),
      { numRuns: 100, seed: 13 },
    );
  });
});
