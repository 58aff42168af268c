import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type * as selectors from './selectors.ts';
import { matchesFields, matchesRequirements, type FieldRequirement, type Requirement } from './selectors.ts';
import { ManualClock } from './clock.ts';
import { Cluster } from './cluster.ts';
import { resource } from './resources.ts';
import { Store, type Selection } from './store.ts';
import type { KubeObject } from './types.ts';

/**
 * The indexed list (Store.select) against the plain scan (every object of the resource through the
 * same selector), over random objects, random writes, deletes and label changes, and random label
 * and field selectors. Small alphabets on purpose: collisions (same name in two namespaces, a label
 * moving between values, a pod moving off its node) are what an index gets wrong.
 */
/** How many objects a selection examined: every candidate goes through matchesRequirements once. */
const matched = vi.hoisted(() => ({ calls: 0 }));
vi.mock('./selectors.ts', async (importOriginal) => {
  const real = await importOriginal<typeof selectors>();
  return {
    ...real,
    matchesRequirements: (...args: Parameters<typeof real.matchesRequirements>) => (
      matched.calls++,
      real.matchesRequirements(...args)
    ),
  };
});

const RESOURCES = ['pods', 'nodes', 'events'] as const;
const NAMES = ['a', 'b', 'c', 'd'];
const NAMESPACES = ['ns1', 'ns2'];
const KEYS = ['pool', 'zone', 'gpu-reflex.io/state', 'n'];
const VALUES = ['p1', 'p2', 'p3', '', '1', '2'];
const NODES = ['n1', 'n2', 'n3'];

const labelsArb = fc.dictionary(fc.constantFrom(...KEYS), fc.constantFrom(...VALUES), { maxKeys: 4 });

type Op =
  | {
      kind: 'put';
      resource: (typeof RESOURCES)[number];
      ns: string;
      name: string;
      labels: Record<string, string>;
      node?: string;
      involved?: string;
    }
  | { kind: 'relabel'; resource: (typeof RESOURCES)[number]; ns: string; name: string; key: string; value?: string }
  | { kind: 'remove'; resource: (typeof RESOURCES)[number]; ns: string; name: string };

const target = {
  resource: fc.constantFrom(...RESOURCES),
  ns: fc.constantFrom(...NAMESPACES),
  name: fc.constantFrom(...NAMES),
};
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record(
      {
        kind: fc.constant('put' as const),
        ...target,
        labels: labelsArb,
        node: fc.option(fc.constantFrom(...NODES), { nil: undefined }),
        involved: fc.option(fc.constantFrom(...NAMES), { nil: undefined }),
      },
      { requiredKeys: ['kind', 'resource', 'ns', 'name', 'labels'] },
    ),
  },
  {
    weight: 3,
    arbitrary: fc.record(
      {
        kind: fc.constant('relabel' as const),
        ...target,
        key: fc.constantFrom(...KEYS),
        value: fc.option(fc.constantFrom(...VALUES), { nil: undefined }),
      },
      { requiredKeys: ['kind', 'resource', 'ns', 'name', 'key'] },
    ),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), ...target }) },
);

const requirementArb: fc.Arbitrary<Requirement> = fc.record({
  key: fc.constantFrom(...KEYS, 'missing'),
  op: fc.constantFrom('in', 'notin', 'exists', '!exists', 'gt', 'lt') as fc.Arbitrary<Requirement['op']>,
  values: fc.uniqueArray(fc.constantFrom(...VALUES, 'other'), { minLength: 1, maxLength: 3 }),
});
const fieldArb: fc.Arbitrary<FieldRequirement> = fc.record({
  field: fc.constantFrom('metadata.name', 'metadata.namespace', 'spec.nodeName', 'involvedObject.name', 'status.phase'),
  equal: fc.boolean(),
  value: fc.constantFrom(...NAMES, ...NAMESPACES, ...NODES, '', 'Running'),
});
const selectionArb = fc.record(
  {
    namespace: fc.option(fc.constantFrom(...NAMESPACES, 'none'), { nil: undefined }),
    labels: fc.array(requirementArb, { maxLength: 3 }),
    fields: fc.array(fieldArb, { maxLength: 2 }),
  },
  { requiredKeys: ['labels', 'fields'] },
);

/** Cluster-scoped resources (nodes) live in namespace ''. */
const nsOf = (resource: string, ns: string) => (resource === 'nodes' ? '' : ns);

function apply(store: Store, op: Op): void {
  const ns = nsOf(op.resource, op.ns);
  if (op.kind === 'remove') return void store.remove(op.resource, ns, op.name);
  if (op.kind === 'relabel') {
    const cur = store.get(op.resource, ns, op.name);
    if (!cur) return;
    const labels = { ...cur.metadata.labels };
    if (op.value === undefined) delete labels[op.key];
    else labels[op.key] = op.value;
    return void store.put(op.resource, { ...cur, metadata: { ...cur.metadata, labels } });
  }
  const obj: KubeObject = {
    apiVersion: 'v1',
    kind: op.resource,
    metadata: {
      name: op.name,
      ...(ns ? { namespace: ns } : {}),
      labels: op.labels,
      uid: `${ns}/${op.name}`,
      resourceVersion: '',
      creationTimestamp: '',
    },
    spec: op.node !== undefined ? { nodeName: op.node } : {},
    ...(op.involved !== undefined ? { involvedObject: { name: op.involved, kind: 'Node' } } : {}),
  };
  store.put(op.resource, obj);
}

/** The answer without any index: every object of the resource, filtered. */
function scan(store: Store, resource: string, sel: Selection): KubeObject[] {
  return store
    .list(resource)
    .filter(
      (o) =>
        (sel.namespace === undefined || (o.metadata.namespace ?? '') === sel.namespace) &&
        matchesRequirements(o.metadata.labels, sel.labels ?? []) &&
        matchesFields(o, sel.fields ?? []),
    );
}

const sorted = (objs: KubeObject[]) =>
  [...objs].sort((a, b) =>
    (a.metadata.namespace ?? '') + '/' + a.metadata.name < (b.metadata.namespace ?? '') + '/' + b.metadata.name
      ? -1
      : 1,
  );

describe('Store.select (indexed list)', () => {
  it('answers every selection exactly as the plain scan does, after any writes, deletes and label changes', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 80 }),
        fc.array(fc.tuple(fc.constantFrom(...RESOURCES), selectionArb), { minLength: 1, maxLength: 8 }),
        (ops, selections) => {
          const store = new Store();
          for (const op of ops) apply(store, op);
          for (const [resource, sel] of selections) {
            const s = resource === 'nodes' && sel.namespace !== undefined ? { ...sel, namespace: '' } : sel;
            // Same objects at the same resourceVersion: an index holding a stale copy would differ here.
            expect(sorted(store.select(resource, s))).toEqual(sorted(scan(store, resource, s)));
          }
          // And every single label value and key, so no stale bucket goes unlooked-at.
          for (const resource of RESOURCES) {
            for (const key of KEYS) {
              const each: Selection[] = [
                { labels: [{ key, op: 'exists', values: [] }] },
                ...VALUES.map((v): Selection => ({ labels: [{ key, op: 'in', values: [v] }] })),
              ];
              for (const sel of each)
                expect(sorted(store.select(resource, sel))).toEqual(sorted(scan(store, resource, sel)));
            }
            for (const name of NAMES)
              expect(
                store.select(resource, { fields: [{ field: 'metadata.name', equal: true, value: name }] }),
              ).toHaveLength(
                scan(store, resource, { fields: [{ field: 'metadata.name', equal: true, value: name }] }).length,
              );
          }
          for (const node of [...NODES, ''])
            expect(sorted(store.podsOnNode(node))).toEqual(
              node === ''
                ? []
                : sorted(scan(store, 'pods', { fields: [{ field: 'spec.nodeName', equal: true, value: node }] })),
            );
        },
      ),
      { numRuns: 300 },
    );
  });

  it.each([
    ['a label value', { labels: [{ key: 'pool', op: 'in', values: ['p7'] }] }, 10],
    [
      'a set of label values',
      {
        labels: [
          { key: 'pool', op: 'in', values: ['p7', 'p8'] },
          { key: 'zone', op: 'notin', values: ['z1'] },
        ],
      },
      20,
    ],
    ['an existing label key', { labels: [{ key: 'gpu-reflex.io/state', op: 'exists', values: [] }] }, 5],
    ['a pinned field', { fields: [{ field: 'metadata.name', equal: true, value: 'n42' }] }, 1],
  ] as [string, Selection, number][])(
    'looks only at the objects under %s, not the whole resource',
    (_, sel, examined) => {
      const store = new Store();
      for (let i = 0; i < 1000; i++)
        store.put('nodes', {
          apiVersion: 'v1',
          kind: 'Node',
          metadata: {
            name: `n${i}`,
            uid: `n${i}`,
            resourceVersion: '',
            creationTimestamp: '',
            labels: { pool: `p${i % 100}`, ...(i % 200 === 0 ? { 'gpu-reflex.io/state': 'draining' } : {}) },
          },
        });
      matched.calls = 0;
      const out = store.select('nodes', sel);
      expect(out.length).toBeGreaterThan(0);
      expect(sorted(out)).toEqual(sorted(scan(store, 'nodes', sel)));
      // Counted after the scan above ran too: subtract its 1,000.
      expect(matched.calls - 1000).toBe(examined);
    },
  );
});

describe('Cluster.list over the indexes', () => {
  it('pages a label-selected list in name order, with the remaining count, exactly as the unpaged list', () => {
    const cluster = new Cluster(new ManualClock());
    const NODES = resource('nodes');
    for (let i = 0; i < 40; i++)
      cluster.create(NODES, '', {
        metadata: { name: `n${String(i).padStart(2, '0')}`, labels: { pool: `p${i % 4}` } },
      });
    const selector = 'pool in (p1, p3),pool!=p3';
    const all = cluster.list(NODES, undefined, { labelSelector: selector }).items.map((n) => n.metadata.name);
    expect(all).toEqual(Array.from({ length: 10 }, (_, k) => `n${String(4 * k + 1).padStart(2, '0')}`));
    const paged: string[] = [];
    const remaining: (number | undefined)[] = [];
    let cont: string | undefined;
    do {
      const page = cluster.list(NODES, undefined, {
        labelSelector: selector,
        limit: 3,
        ...(cont ? { continue: cont } : {}),
      });
      paged.push(...page.items.map((n) => n.metadata.name));
      remaining.push(page.remainingItemCount);
      cont = page.continue;
    } while (cont);
    expect(paged).toEqual(all);
    expect(remaining).toEqual([7, 4, 1, undefined]);
  });
});
