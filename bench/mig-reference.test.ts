import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { afterPlan, planMig, type MigGpu, type MigNode, type PendingMigPod } from '../functions/mig/core/planner.ts';
import { H100, migScenario } from './mig-fleet.ts';
import { exactMig, lexWeight, nosStyleMig, servableWeight } from './mig-reference.ts';

const gpu = (node: string, index: number, profiles: string[], inUse = 0): MigGpu => ({
  node,
  index,
  model: H100,
  instances: profiles.map((profile, i) => ({ profile, inUse: i < inUse })),
});
const node = (name: string, gpus: MigGpu[], labels: Record<string, string> = {}): MigNode => ({
  name,
  labels,
  schedulable: true,
  gpus,
});
const pod = (name: string, requests: Record<string, number>, o: Partial<PendingMigPod> = {}): PendingMigPod => ({
  namespace: 'ml',
  name,
  priority: 0,
  requests,
  nodeSelector: {},
  ...o,
});
const SEVEN_1G = Array<string>(7).fill('1g.10gb');
const names = (ps: readonly PendingMigPod[]) => ps.map((p) => p.name).sort();

describe('lexWeight', () => {
  it('weighs one pod at a priority above every pod below it together', () => {
    const pods = [pod('a', {}), pod('b', {}), pod('c', {}, { priority: 100 })];
    expect(lexWeight(pods, [pods[2]!])).toBeGreaterThan(lexWeight(pods, [pods[0]!, pods[1]!]));
    expect(lexWeight(pods, pods)).toBe(1 + 1 + 3);
  });
});

describe('exactMig (the optimum on small fleets)', () => {
  it.each([
    [
      'two 3g pods on an idle 7×1g H100: one change',
      [node('n', [gpu('n', 0, SEVEN_1G)])],
      [pod('a', { '3g.40gb': 1 }), pod('b', { '3g.40gb': 1 })],
      ['a', 'b'],
      1,
    ],
    [
      'free instances already fit: no change',
      [node('n', [gpu('n', 0, ['4g.40gb', '3g.40gb'], 1)])],
      [pod('a', { '3g.40gb': 1 })],
      ['a'],
      0,
    ],
    [
      'a GPU with an instance in use is never relaid',
      [node('n', [gpu('n', 0, SEVEN_1G, 1)])],
      [pod('a', { '7g.80gb': 1 })],
      [],
      0,
    ],
    [
      'a pod takes instances from several GPUs of one node',
      [node('n', [gpu('n', 0, ['7g.80gb']), gpu('n', 1, ['7g.80gb'])])],
      [pod('a', { '3g.40gb': 3 })],
      ['a'],
      2,
    ],
    [
      'never across nodes',
      [node('m', [gpu('m', 0, ['7g.80gb'])]), node('n', [gpu('n', 0, ['7g.80gb'])])],
      [pod('a', { '3g.40gb': 3 })],
      [],
      0,
    ],
    [
      'the higher priority wins one GPU',
      [node('n', [gpu('n', 0, SEVEN_1G)])],
      [pod('low', { '7g.80gb': 1 }), pod('high', { '4g.40gb': 1 }, { priority: 10 })],
      ['high'],
      1,
    ],
    [
      'the fewest changes among equal demand',
      [node('n', [gpu('n', 0, ['7g.80gb']), gpu('n', 1, SEVEN_1G)])],
      [pod('a', { '1g.10gb': 2 }), pod('b', { '7g.80gb': 1 })],
      ['a', 'b'],
      0,
    ],
  ])('%s', (_, nodes, pods, satisfied, changes) => {
    const exact = exactMig(nodes, pods);
    expect(names(exact.satisfied)).toEqual([...satisfied].sort());
    expect(exact.changes).toBe(changes);
  });

  it('is never below what the planner satisfies, nor needs more changes for as much (random small fleets)', () => {
    let relaid = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
        const { nodes, pods } = migScenario(
          { nodes: 2, gpusPerNode: 2, pods: 6, busy: 0.3, priorities: [0, 0, 100] },
          seed,
        );
        const plan = planMig(nodes, pods);
        const pending = new Set(afterPlan(nodes, pods, plan).pending);
        const planner = lexWeight(
          pods,
          pods.filter((p) => !pending.has(p)),
        );
        const exact = exactMig(nodes, pods);
        expect(exact.weight).toBeGreaterThanOrEqual(planner);
        if (exact.weight === planner) expect(exact.changes).toBeLessThanOrEqual(plan.changes.length);
        if (plan.changes.length > 0) relaid++;
      }),
      { numRuns: 60, seed: 12 },
    );
    expect(relaid).toBeGreaterThan(10);
  });
});

describe('servableWeight (what planned layouts serve, matched at best)', () => {
  it('counts the pods the layouts can serve together, relaying nothing more', () => {
    const pods = [pod('one', { '3g.40gb': 1 }), pod('two', { '3g.40gb': 2 })];
    // Two nodes with two and one free 3g: both pods fit only if "two" takes the node with two.
    const nodes = [node('a', [gpu('a', 0, ['3g.40gb', '3g.40gb'])]), node('b', [gpu('b', 0, ['4g.40gb', '3g.40gb'])])];
    expect(servableWeight(nodes, pods, [])).toBe(lexWeight(pods, pods));
    expect(servableWeight([node('a', [gpu('a', 0, SEVEN_1G)])], pods, [])).toBe(0);
    expect(
      servableWeight([node('a', [gpu('a', 0, SEVEN_1G)])], pods, [{ node: 'a', gpu: 0, to: ['3g.40gb', '3g.40gb'] }]),
    ).toBe(lexWeight(pods, [pods[1]!]));
  });
});

describe('nosStyleMig (the greedy baseline)', () => {
  it('relays an idle GPU to the layout that offers most of what is lacking', () => {
    const changes = nosStyleMig(
      [node('n', [gpu('n', 0, SEVEN_1G)])],
      [pod('a', { '3g.40gb': 1 }), pod('b', { '3g.40gb': 1 })],
    );
    expect(changes).toHaveLength(1);
    expect(changes[0]!.to.filter((p) => p === '3g.40gb')).toHaveLength(2);
  });

  it('takes away a free instance a pending pod could use (it looks only at what is lacking)', () => {
    const changes = nosStyleMig(
      [node('n', [gpu('n', 0, ['4g.40gb', '3g.40gb'])])],
      [pod('fits', { '4g.40gb': 1 }), pod('lacks', { '7g.80gb': 1 })],
    );
    expect(changes).toEqual([{ node: 'n', gpu: 0, to: ['7g.80gb'] }]);
  });

  it('never relays a GPU with an instance in use', () => {
    expect(nosStyleMig([node('n', [gpu('n', 0, SEVEN_1G, 1)])], [pod('a', { '7g.80gb': 1 })])).toEqual([]);
  });

  it('keeps a node as it was when no pod fits it after the relayout', () => {
    const nodes = [
      node('a', [gpu('a', 0, SEVEN_1G)], { pool: 'x' }),
      node('b', [gpu('b', 0, SEVEN_1G)], { pool: 'y' }),
    ];
    expect(nosStyleMig(nodes, [pod('p', { '7g.80gb': 1 }, { nodeSelector: { pool: 'y' } })])).toEqual([
      { node: 'b', gpu: 0, to: ['7g.80gb'] },
    ]);
  });
});
