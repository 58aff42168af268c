import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { inventory } from '../testing.ts';
import { DEFAULT_LABELER_CONFIG as D, LabelerConfigSchema, parseLabelerConfig } from './config.ts';
import { acceleratorValue } from './facts.ts';
import { encodeLabelerRecord, LABELER_ANNOTATION, planLabels, type LabelPlan, type NodeLabelFacts } from './planner.ts';

const node = (
  labels: Record<string, string> = {},
  owned?: Record<string, string>,
  allocatable: Record<string, string> = { 'nvidia.com/gpu': '8' },
  observedAt = '2025-12-31T00:00:00.000Z',
): NodeLabelFacts => ({
  name: 'gpu-1',
  labels,
  annotations: owned ? (encodeLabelerRecord({ labels: owned, observedAt }).annotations as Record<string, string>) : {},
  allocatable,
});
const sets = (p: LabelPlan) => (p.kind === 'relabel' ? Object.fromEntries(p.changes.map((c) => [c.key, c.to])) : {});

describe('acceleratorValue: nvidia-<model>, the field notes’ values', () => {
  it.each([
    ['Tesla T4', 'nvidia-t4'],
    ['NVIDIA A100-SXM4-80GB', 'nvidia-a100'],
    ['NVIDIA A100 80GB PCIe', 'nvidia-a100'],
    ['NVIDIA H100 80GB HBM3', 'nvidia-h100'],
    ['NVIDIA L4', 'nvidia-l4'],
    // The field notes' `*"L4"*` would have said nvidia-l4 here.
    ['NVIDIA L40S', 'nvidia-l40s'],
    ['NVIDIA A10', 'nvidia-a10'],
    ['NVIDIA GeForce RTX 4090', 'nvidia-rtx-4090'],
    ['NVIDIA RTX A6000', 'nvidia-rtx-a6000'],
  ])('%s → %s', (name, value) => expect(acceleratorValue(name, [])).toBe(value));

  it('takes a configured model first (the GKE spelling a fleet’s selectors use)', () => {
    expect(acceleratorValue('Tesla V100-SXM2-16GB', [{ match: 'v100', value: 'nvidia-tesla-v100' }])).toBe(
      'nvidia-tesla-v100',
    );
  });
});

describe('planLabels', () => {
  it('labels a bare A100 node with every default key and records them as its own', () => {
    const p = planLabels(node(), inventory(), D);
    expect(sets(p)).toEqual({
      accelerator: 'nvidia-a100',
      'gpu-reflex.io/gpu.count': '8',
      'gpu-reflex.io/mig.capable': 'true',
      'gpu-reflex.io/mig.enabled': 'false',
      'gpu-reflex.io/mig.strategy': 'none',
      'gpu-reflex.io/driver.version': '550.54.14',
      'gpu-reflex.io/cuda.version': '12.4',
    });
    expect(p.kind === 'relabel' && p.record.labels).toEqual(sets(p));
  });

  it('says not MIG capable for a T4', () => {
    expect(sets(planLabels(node(), inventory({ gpus: [{ name: 'Tesla T4', mig: 'unsupported' }] }), D))).toMatchObject({
      accelerator: 'nvidia-t4',
      'gpu-reflex.io/mig.capable': 'false',
    });
  });

  it.each([
    ['mixed', { 'nvidia.com/mig-3g.40gb': '2', 'nvidia.com/gpu': '0' }],
    ['single', { 'nvidia.com/gpu': '14' }],
  ])('reads the MIG strategy %s from what the node advertises', (strategy, allocatable) => {
    const p = planLabels(
      node({}, undefined, allocatable),
      inventory({ gpus: [{ name: 'NVIDIA H100 80GB HBM3', mig: 'enabled' }] }),
      D,
    );
    expect(sets(p)).toMatchObject({ 'gpu-reflex.io/mig.enabled': 'true', 'gpu-reflex.io/mig.strategy': strategy });
  });

  it('leaves the MIG strategy as it is while the device plugin advertises no MIG device yet', () => {
    const owned = { 'gpu-reflex.io/mig.strategy': 'none' };
    const p = planLabels(
      node(owned, owned, {}),
      inventory({ gpus: [{ name: 'NVIDIA H100 80GB HBM3', mig: 'enabled' }] }),
      D,
    );
    expect(sets(p)).not.toHaveProperty('gpu-reflex.io/mig.strategy');
  });

  it('never says single for a node whose GPUs are not all MIG-enabled: its nvidia.com/gpu are the others', () => {
    // MIG switched on for one GPU of two under the mixed strategy, its instances not made yet: the node advertises
    // only the MIG-off GPU as nvidia.com/gpu. NVIDIA's single strategy refuses a mix of MIG on and off GPUs, so
    // that is no evidence of single: the strategy is not told yet.
    const owned = { 'gpu-reflex.io/mig.strategy': 'mixed' };
    const p = planLabels(
      node(owned, owned, { 'nvidia.com/gpu': '1' }),
      inventory({
        gpus: [
          { name: 'NVIDIA H100 80GB HBM3', mig: 'enabled' },
          { name: 'NVIDIA H100 80GB HBM3', mig: 'disabled' },
        ],
      }),
      D,
    );
    expect(sets(p)).not.toHaveProperty('gpu-reflex.io/mig.strategy');
  });

  it('leaves a label someone else set to another value alone, and reports it', () => {
    const p = planLabels(node({ accelerator: 'nvidia-tesla-a100' }), inventory(), D);
    expect(sets(p)).not.toHaveProperty('accelerator');
    expect(p.left).toEqual([
      expect.objectContaining({
        key: 'accelerator',
        value: 'nvidia-tesla-a100',
        wanted: 'nvidia-a100',
        why: 'set-by-someone-else',
      }),
    ]);
    expect(p.kind === 'relabel' && p.record.labels).not.toHaveProperty('accelerator');
  });

  it('does not take over a label someone else set to the same value (it never becomes ours to change)', () => {
    const p = planLabels(node({ accelerator: 'nvidia-a100' }), inventory(), D);
    expect(p.kind === 'relabel' && p.record.labels).not.toHaveProperty('accelerator');
    const later = planLabels(node({ accelerator: 'nvidia-a100' }), inventory({ gpus: ['NVIDIA H100 80GB HBM3'] }), D);
    expect(sets(later)).not.toHaveProperty('accelerator');
  });

  it('gives up a label of its own that a person changed since', () => {
    const p = planLabels(
      node({ 'gpu-reflex.io/gpu.count': '4' }, { 'gpu-reflex.io/gpu.count': '8' }),
      inventory({ gpus: ['Tesla T4'] }),
      D,
    );
    expect(sets(p)).not.toHaveProperty('gpu-reflex.io/gpu.count');
    expect(p.left).toContainEqual(
      expect.objectContaining({ key: 'gpu-reflex.io/gpu.count', why: 'changed-by-someone-else' }),
    );
    expect(p.kind === 'relabel' && p.record.labels).not.toHaveProperty('gpu-reflex.io/gpu.count');
  });

  it('puts back a label of its own that was removed, and touches no label it does not own', () => {
    // Everything labelled and recorded as its own; then someone removes gpu.count (a `kubectl label node N key-`,
    // a node image that drops labels) and a person adds a label of theirs.
    const first = planLabels(node(), inventory(), D);
    const owned = first.kind === 'relabel' ? first.record.labels : {};
    const { 'gpu-reflex.io/gpu.count': _removed, ...rest } = owned;
    const p = planLabels(node({ ...rest, team: 'ml', 'nvidia.com/gpu.product': 'x' }, owned), inventory(), D);
    expect(p.kind === 'relabel' && p.changes).toEqual([
      expect.objectContaining({ key: 'gpu-reflex.io/gpu.count', from: null, to: '8' }),
    ]);
    expect(p.kind === 'relabel' && p.record.labels).toEqual(owned);
  });

  it('follows a driver upgrade, MIG switched on and a GPU lost, on the labels it owns', () => {
    const before = planLabels(node(), inventory(), D);
    const owned = before.kind === 'relabel' ? before.record.labels : {};
    const after = planLabels(
      node({ ...owned }, owned),
      inventory({
        at: '2026-01-01T01:00:00.000Z',
        driver: '570.86.15',
        cuda: '12.8',
        gpus: [
          { name: 'NVIDIA A100-SXM4-80GB', mig: 'enabled' },
          ...Array.from({ length: 6 }, () => 'NVIDIA A100-SXM4-80GB'),
        ],
      }),
      D,
    );
    expect(after.kind === 'relabel' && after.changes.map((c) => [c.key, c.from, c.to])).toEqual([
      ['gpu-reflex.io/cuda.version', '12.4', '12.8'],
      ['gpu-reflex.io/driver.version', '550.54.14', '570.86.15'],
      ['gpu-reflex.io/gpu.count', '8', '7'],
      ['gpu-reflex.io/mig.enabled', 'false', 'true'],
    ]);
  });

  it('removes its own label when the inventory can no longer vouch for it, and when its key leaves the configuration', () => {
    const owned = { 'gpu-reflex.io/cuda.version': '12.4', 'gpu-reflex.io/gpu.count': '8' };
    const cfg = LabelerConfigSchema.parse({ keys: { gpuCount: 'gpu-count' } });
    const p = planLabels(node({ ...owned }, owned), inventory({ cuda: null }), cfg);
    expect(sets(p)).toMatchObject({
      'gpu-reflex.io/cuda.version': null,
      'gpu-reflex.io/gpu.count': null,
      'gpu-count': '8',
    });
  });

  describe('GPU Feature Discovery', () => {
    const cfg = LabelerConfigSchema.parse({ prefix: 'nvidia.com/', keys: { accelerator: false } });
    it('writes under nvidia.com/ where GFD does not run', () => {
      expect(sets(planLabels(node(), inventory(), cfg))).toHaveProperty('nvidia.com/gpu.count', '8');
    });
    it('writes nothing under nvidia.com/ where GFD runs, and hands over what it wrote before GFD came', () => {
      const owned = { 'nvidia.com/gpu.count': '8' };
      const p = planLabels(
        node({ ...owned, 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }, owned),
        inventory({ gpus: ['NVIDIA A100-SXM4-80GB'] }),
        cfg,
      );
      expect(p.kind === 'relabel' && p.changes).toEqual([]);
      expect(p.kind === 'relabel' && p.record.labels).toEqual({});
      expect(p.left.every((l) => l.why === 'gfd-runs-here')).toBe(true);
    });
  });

  it('does nothing with an inventory older than the one applied', () => {
    const p = planLabels(
      node({}, {}, undefined, '2026-01-01T02:00:00.000Z'),
      inventory({ at: '2026-01-01T01:00:00.000Z' }),
      D,
    );
    expect(p).toMatchObject({ kind: 'noop', reason: expect.stringContaining('older than the one applied') });
  });

  it('reads a corrupt record as owning nothing: removes nothing, and writes a good record', () => {
    const n = { ...node({ 'gpu-reflex.io/gpu.count': '4' }), annotations: { [LABELER_ANNOTATION]: '{oops' } };
    const p = planLabels(n, inventory(), D);
    expect(sets(p)).not.toHaveProperty('gpu-reflex.io/gpu.count');
    expect(p.warnings[0]).toMatch(/not a labeler record/);
  });
});

describe('the labeler configuration', () => {
  it.each([
    ['keys:\n  gpuCount: "bad key!"\n', /keys\.gpuCount/],
    ['keys:\n  gpuCount: accelerator\n', /keys\.gpuCount.*already the key of accelerator/],
    ['prefix: gpu-reflex.io\n', /prefix.*followed by "\/"/],
    ['models:\n  - { match: V100, value: "nvidia tesla" }\n', /models\.0\.value/],
    ['keyz: {}\n', /keyz/],
  ])('names the field of a mistake: %j', (text, message) => {
    expect(() => parseLabelerConfig(text, 'labels.yaml')).toThrow(message);
  });
});

// ---- properties: any node, any record, any inventory, any configuration

const keyPool = [
  'accelerator',
  'gpu-count',
  'gpu-reflex.io/gpu.count',
  'gpu-reflex.io/mig.enabled',
  'gpu-reflex.io/driver.version',
  'nvidia.com/gpu.count',
  'nvidia.com/gpu.product',
  'nvidia.com/mig.strategy',
  'team',
];
const valuePool = ['8', '7', 'true', 'false', 'none', 'nvidia-a100', 'nvidia-t4', '550.54.14', 'x'];
const labelsArb = fc.dictionary(fc.constantFrom(...keyPool), fc.constantFrom(...valuePool), { maxKeys: 6 });
const gpuArb = fc.record({
  name: fc.constantFrom('Tesla T4', 'NVIDIA A100-SXM4-80GB', 'NVIDIA H100 80GB HBM3', 'NVIDIA L4'),
  mig: fc.constantFrom<'enabled' | 'disabled' | 'unsupported'>('enabled', 'disabled', 'unsupported'),
});
const invArb = fc.record({
  gpus: fc.array(gpuArb, { maxLength: 4 }),
  driver: fc.constantFrom('550.54.14', '570.86.15'),
  cuda: fc.constantFrom('12.4', '12.8', null),
  hour: fc.integer({ min: 0, max: 3 }),
});
const configArb = fc.record({
  prefix: fc.constantFrom('gpu-reflex.io/', 'nvidia.com/', ''),
  gpuCount: fc.constantFrom(undefined, 'gpu-count', 'nvidia.com/gpu.count', false as const),
  accelerator: fc.constantFrom(undefined, false as const),
});
const allocArb = fc.constantFrom<Record<string, string>>(
  {},
  { 'nvidia.com/gpu': '8' },
  { 'nvidia.com/mig-1g.10gb': '7' },
);

const at = (h: number) => `2026-01-01T0${h}:00:00.000Z`;
type Arb<A> = A extends fc.Arbitrary<infer T> ? T : never;
const cfgOf = (c: Arb<typeof configArb>) =>
  LabelerConfigSchema.parse({
    prefix: c.prefix,
    keys: {
      ...(c.gpuCount !== undefined ? { gpuCount: c.gpuCount } : {}),
      ...(c.accelerator !== undefined ? { accelerator: c.accelerator } : {}),
    },
  });
const invOf = (i: Arb<typeof invArb>) => inventory({ at: at(i.hour), driver: i.driver, cuda: i.cuda, gpus: i.gpus });
/** The plan, carried out on plain data exactly as its node edit says. */
function applied(n: NodeLabelFacts, p: LabelPlan): NodeLabelFacts {
  if (p.kind === 'noop') return n;
  const labels = { ...n.labels };
  for (const c of p.changes)
    if (c.to === null) delete labels[c.key];
    else labels[c.key] = c.to;
  return {
    ...n,
    labels,
    annotations: { ...n.annotations, ...(encodeLabelerRecord(p.record).annotations as Record<string, string>) },
  };
}

describe('planLabels, for any node, record, inventory and configuration', () => {
  const arbs = [
    labelsArb,
    fc.option(labelsArb, { nil: undefined }),
    invArb,
    configArb,
    allocArb,
    fc.integer({ min: 0, max: 3 }),
  ] as const;

  it('never changes or removes a label it does not own with the value it set (absent labels aside)', () => {
    fc.assert(
      fc.property(...arbs, (labels, owned, inv, c, alloc, h) => {
        const n = node(labels, owned, alloc, at(h));
        const p = planLabels(n, invOf(inv), cfgOf(c));
        for (const ch of p.kind === 'relabel' ? p.changes : []) {
          const cur = labels[ch.key];
          // A change touches an absent label, or one whose value is the one gpu-reflex wrote.
          expect(cur === undefined || owned?.[ch.key] === cur).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('is idempotent: planning on the state its plan leaves is a no-op', () => {
    fc.assert(
      fc.property(...arbs, (labels, owned, inv, c, alloc, h) => {
        const cfg = cfgOf(c);
        const n = node(labels, owned, alloc, at(h));
        const once = applied(n, planLabels(n, invOf(inv), cfg));
        expect(planLabels(once, invOf(inv), cfg).kind).toBe('noop');
      }),
      { numRuns: 500 },
    );
  });

  it('writes nothing under GFD’s prefix where GFD runs', () => {
    fc.assert(
      fc.property(
        labelsArb,
        fc.option(labelsArb, { nil: undefined }),
        invArb,
        configArb,
        allocArb,
        (labels, owned, inv, c, alloc) => {
          const withGfd = { ...labels, 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' };
          const mine = owned
            ? Object.fromEntries(Object.entries(owned).filter(([k]) => k !== 'nvidia.com/gpu.product'))
            : undefined;
          const p = planLabels(node(withGfd, mine, alloc, at(0)), invOf(inv), cfgOf(c));
          expect(p.kind === 'relabel' ? p.changes.filter((ch) => ch.key.startsWith('nvidia.com/')) : []).toEqual([]);
          expect(
            p.kind === 'relabel' ? Object.keys(p.record.labels).filter((k) => k.startsWith('nvidia.com/')) : [],
          ).toEqual([]);
        },
      ),
      { numRuns: 500 },
    );
  });
});
