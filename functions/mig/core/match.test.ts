import { describe, expect, it } from 'vitest';
import { assign, matchingOrder, sortFleet } from './match.ts';
import type { MigGpu, MigNode, PendingMigPod } from './planner.ts';
import { migModel } from '../../lib/mig-profiles.ts';

const H100 = migModel('H100-80GB')!;
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

function match(nodes: MigNode[], pending: PendingMigPod[], layouts = new Map<string, string[]>()) {
  const sorted = sortFleet(nodes);
  const { pods, eligible } = matchingOrder(sorted, pending);
  const priorities = [...new Set(pods.map((p) => p.priority))].sort((a, b) => b - a);
  return { order: pods.map((p) => p.name), ...assign(sorted, pods, layouts, priorities, eligible) };
}

describe('matching pending pods to free instances', () => {
  it('serves higher priorities first, then pods that may use fewer nodes, then those asking for more instances, then by name', () => {
    const nodes = [
      node('a', [gpu('a', 0, ['3g.40gb', '3g.40gb'])], { pool: 'x' }),
      node('b', [gpu('b', 0, ['3g.40gb', '4g.40gb'])], { pool: 'y' }),
    ];
    const m = match(nodes, [
      pod('a-one', { '3g.40gb': 1 }),
      pod('b-two', { '3g.40gb': 2 }),
      pod('c-pinned', { '3g.40gb': 1 }, { nodeSelector: { pool: 'y' } }),
      pod('d-urgent', { '4g.40gb': 1 }, { priority: 5 }),
    ]);
    expect(m.order).toEqual(['d-urgent', 'c-pinned', 'b-two', 'a-one']);
    // By name alone, a-one would take one of a's two 3g and b-two would find no node with two.
    expect(Object.fromEntries(m.placed)).toEqual({
      'ml/d-urgent': ['b#0'],
      'ml/c-pinned': ['b#0'],
      'ml/b-two': ['a#0'],
    });
    expect(m.score).toEqual([1, 2]);
  });

  it("takes a pod's instances from one node, GPU by GPU in index order, and only free ones or a relaid GPU's", () => {
    const nodes = [node('n', [gpu('n', 1, ['1g.10gb', '1g.10gb'], 1), gpu('n', 0, ['1g.10gb', '2g.20gb'])])];
    const m = match(nodes, [pod('p', { '1g.10gb': 2 })]);
    expect(m.taken.get('ml/p')).toEqual([
      ['n#0', '1g.10gb'],
      ['n#1', '1g.10gb'],
    ]);
    expect(match(nodes, [pod('p', { '1g.10gb': 3 })]).placed.size).toBe(0);
    expect(
      match(nodes, [pod('p', { '1g.10gb': 3 })], new Map([['n#0', ['1g.10gb', '1g.10gb', '1g.10gb']]])).taken.get(
        'ml/p',
      ),
    ).toEqual([
      // What is free now on GPU 1, left as it is, first: that much the pod gets before any relayout.
      ['n#1', '1g.10gb'],
      ['n#0', '1g.10gb'],
      ['n#0', '1g.10gb'],
    ]);
  });

  it('puts a pod on what is free on GPUs left as they are before a relaid GPU, whatever the node order', () => {
    // Issue #30 (bench fleet smallMigScenarios(100, 11)[83]): `free` (priority 100, any node) would take,
    // by name, the 2g.20gb relaid on `a` for `pinned`, which may use only `a`; but `z` has one free
    // now, where the scheduler puts it long before mig-manager has relaid `a` (cordoned meanwhile).
    const a = node('a', [gpu('a', 0, ['3g.40gb', '1g.10gb'])], { pool: 'a' });
    const z = node('z', [gpu('z', 0, ['2g.20gb'])]);
    const pods = [
      pod('free', { '2g.20gb': 1 }, { priority: 100 }),
      pod('pinned', { '2g.20gb': 1 }, { nodeSelector: { pool: 'a' } }),
    ];
    const relaid = new Map([['a#0', ['3g.40gb', '2g.20gb', '1g.10gb']]]);
    const m = match([a, z], pods, relaid);
    expect(Object.fromEntries(m.taken)).toEqual({ 'ml/free': [['z#0', '2g.20gb']], 'ml/pinned': [['a#0', '2g.20gb']] });
  });
});
