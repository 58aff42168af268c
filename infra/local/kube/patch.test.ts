import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyJsonPatch, applyMergePatch, applyStrategicMergePatch, PatchError } from './patch.ts';

const node = {
  metadata: { name: 'n', labels: { a: '1', b: '2' }, finalizers: ['x'] },
  spec: { taints: [{ key: 'k1', effect: 'NoSchedule' }], unschedulable: true },
  status: {
    conditions: [
      { type: 'Ready', status: 'True' },
      { type: 'DiskPressure', status: 'False' },
    ],
  },
};

describe('JSON patch (RFC 6902)', () => {
  it.each([
    [
      'add a label',
      [{ op: 'add', path: '/metadata/labels/c', value: '3' }],
      (o: typeof node) => o.metadata.labels,
      { a: '1', b: '2', c: '3' },
    ],
    [
      'remove a label',
      [{ op: 'remove', path: '/metadata/labels/a' }],
      (o: typeof node) => o.metadata.labels,
      { b: '2' },
    ],
    [
      'replace a field',
      [{ op: 'replace', path: '/spec/unschedulable', value: false }],
      (o: typeof node) => o.spec.unschedulable,
      false,
    ],
    [
      'append to a list',
      [{ op: 'add', path: '/spec/taints/-', value: { key: 'k2', effect: 'NoExecute' } }],
      (o: typeof node) => o.spec.taints.map((t) => t.key),
      ['k1', 'k2'],
    ],
    [
      'escape ~1 in keys',
      [{ op: 'add', path: '/metadata/labels/nvidia.com~1gpu', value: 'x' }],
      (o: typeof node) => (o.metadata.labels as Record<string, string>)['nvidia.com/gpu'],
      'x',
    ],
    [
      'move a value',
      [{ op: 'move', from: '/metadata/labels/a', path: '/metadata/labels/z' }],
      (o: typeof node) => o.metadata.labels,
      { b: '2', z: '1' },
    ],
    [
      'copy a value',
      [{ op: 'copy', from: '/metadata/labels/a', path: '/metadata/labels/z' }],
      (o: typeof node) => o.metadata.labels,
      { a: '1', b: '2', z: '1' },
    ],
  ])('can %s', (_what, ops, pick, expected) => {
    expect(pick(applyJsonPatch(node, ops) as typeof node)).toEqual(expected);
  });

  it.each([
    ['a failing test op', [{ op: 'test', path: '/spec/unschedulable', value: false }]],
    ['removing a missing key', [{ op: 'remove', path: '/metadata/labels/none' }]],
    ['a path through a missing parent', [{ op: 'add', path: '/metadata/annotations/x', value: '1' }]],
    ['an unknown op', [{ op: 'frobnicate', path: '/x' }]],
    ['a body that is not a list', { op: 'add' }],
  ])('refuses %s without touching the input', (_what, ops) => {
    const before = JSON.stringify(node);
    expect(() => applyJsonPatch(node, ops)).toThrow(PatchError);
    expect(JSON.stringify(node)).toBe(before);
  });
});

describe('JSON merge patch (RFC 7386)', () => {
  it('merges maps, deletes nulls and replaces lists whole', () => {
    const out = applyMergePatch(node, {
      metadata: { labels: { a: null, c: '3' } },
      spec: { taints: [] },
    }) as typeof node;
    expect(out.metadata.labels).toEqual({ b: '2', c: '3' });
    expect(out.spec.taints).toEqual([]);
    expect(out.status).toEqual(node.status);
  });
});

describe('strategic merge patch', () => {
  it('replaces node taints whole, as NodeSpec.Taints has no patch strategy', () => {
    const out = applyStrategicMergePatch(node, {
      spec: { taints: [{ key: 'k2', effect: 'NoSchedule' }] },
    }) as typeof node;
    expect(out.spec.taints).toEqual([{ key: 'k2', effect: 'NoSchedule' }]);
  });

  it('merges conditions by type and keeps the others', () => {
    const out = applyStrategicMergePatch(node, {
      status: { conditions: [{ type: 'Ready', status: 'False' }] },
    }) as typeof node;
    expect(out.status.conditions).toEqual([
      { type: 'Ready', status: 'False' },
      { type: 'DiskPressure', status: 'False' },
    ]);
  });

  it('honours $patch: delete in a merge list and $deleteFromPrimitiveList', () => {
    const out = applyStrategicMergePatch(node, {
      status: { conditions: [{ type: 'DiskPressure', $patch: 'delete' }] },
      metadata: { '$deleteFromPrimitiveList/finalizers': ['x'] },
    }) as typeof node;
    expect(out.status.conditions.map((c) => c.type)).toEqual(['Ready']);
    expect(out.metadata.finalizers).toEqual([]);
  });

  it('merges containers by name', () => {
    const pod = {
      spec: {
        containers: [
          { name: 'a', image: 'a:1' },
          { name: 'b', image: 'b:1' },
        ],
      },
    };
    const out = applyStrategicMergePatch(pod, { spec: { containers: [{ name: 'b', image: 'b:2' }] } }) as typeof pod;
    expect(out.spec.containers).toEqual([
      { name: 'a', image: 'a:1' },
      { name: 'b', image: 'b:2' },
    ]);
  });

  it('ignores $setElementOrder directives kubectl sends', () => {
    const out = applyStrategicMergePatch(node, {
      metadata: { labels: { c: '3' } },
      spec: { '$setElementOrder/taints': [{ key: 'k1' }] },
    }) as typeof node;
    expect(out.spec.taints).toEqual(node.spec.taints);
    expect(out.metadata.labels).toEqual({ a: '1', b: '2', c: '3' });
  });

  it('never throws on arbitrary JSON and never mutates its input', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (doc, patch) => {
        const before = JSON.stringify(doc);
        applyStrategicMergePatch(doc, patch);
        applyMergePatch(doc, patch);
        expect(JSON.stringify(doc)).toBe(before);
      }),
    );
  });
});

describe('patch work stays linear in the input', () => {
  it('merges 30,000 keyed list items by a map, not a scan per item', () => {
    const ownerReferences = Array.from({ length: 30_000 }, (_, i) => ({ kind: 'Node', name: `n${i}`, uid: `u${i}` }));
    const started = performance.now();
    const out = applyStrategicMergePatch(
      { metadata: { ownerReferences: [{ kind: 'Node', name: 'n1', uid: 'u1', controller: true }] } },
      { metadata: { ownerReferences } },
    ) as { metadata: { ownerReferences: { uid: string; controller?: boolean }[] } };
    expect(performance.now() - started).toBeLessThan(1000);
    expect(out.metadata.ownerReferences).toHaveLength(30_000);
    expect(out.metadata.ownerReferences[0]).toEqual({ kind: 'Node', name: 'n1', uid: 'u1', controller: true });
    expect(out.metadata.ownerReferences[1]?.uid).toBe('u0');
  });

  it('deletes keyed items ($patch: delete) and keeps the order of the rest', () => {
    const base = { spec: { containers: [{ name: 'a' }, { name: 'b', image: 'x' }, { name: 'c' }] } };
    const out = applyStrategicMergePatch(base, {
      spec: { containers: [{ name: 'a', $patch: 'delete' }, { name: 'b', image: 'y' }, { name: 'd' }] },
    });
    expect(out).toEqual({ spec: { containers: [{ name: 'b', image: 'y' }, { name: 'c' }, { name: 'd' }] } });
    expect(base.spec.containers).toHaveLength(3);
  });

  it('test compares structurally without serializing, and stops at the first difference', () => {
    expect(() =>
      applyJsonPatch(node, [{ op: 'test', path: '/metadata/labels', value: { b: '2', a: '1' } }]),
    ).not.toThrow();
    expect(() => applyJsonPatch(node, [{ op: 'test', path: '/metadata/labels', value: { a: '1' } }])).toThrow(
      PatchError,
    );
  });
});

describe('a __proto__ key is an ordinary field', () => {
  it.each([
    ['JSON patch', () => applyJsonPatch({ spec: {} }, [{ op: 'add', path: '/__proto__/polluted', value: 1 }])],
    [
      'JSON patch into an existing object',
      () => applyJsonPatch({ spec: {} }, [{ op: 'add', path: '/spec/__proto__', value: { polluted: 1 } }]),
    ],
    [
      'merge patch',
      () =>
        applyMergePatch({ spec: {} }, JSON.parse('{"__proto__":{"polluted":1},"spec":{"__proto__":{"polluted":1}}}')),
    ],
    [
      'strategic merge patch',
      () =>
        applyStrategicMergePatch(
          { spec: {} },
          JSON.parse('{"__proto__":{"polluted":1},"spec":{"__proto__":{"polluted":1}}}'),
        ),
    ],
  ])('%s never reaches Object.prototype', (_what, run) => {
    let out: unknown;
    try {
      out = run();
    } catch (err) {
      expect(err).toBeInstanceOf(PatchError);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.keys(Object.prototype)).toEqual([]);
    if (out !== undefined) expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });

  it('a merge patch keeps it as data that round-trips through JSON', () => {
    const out = applyMergePatch({}, JSON.parse('{"spec":{"__proto__":{"a":1}}}')) as { spec: object };
    expect(JSON.stringify(out)).toBe('{"spec":{"__proto__":{"a":1}}}');
    expect(Object.getPrototypeOf(out.spec)).toBe(Object.prototype);
  });
});
