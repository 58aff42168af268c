import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkLayout, enumerateLayouts, layoutWords, place } from './layout.ts';
import { fromReported, MIG_MODELS, migModel, migResourceName, type MigModel } from '../../lib/mig-profiles.ts';

const A100_80 = migModel('A100-80GB')!;
const canon = (layout: readonly string[]) => [...layout].sort().join(',');

/**
 * An independent oracle: every assignment of allowed starts to the instances (no search order, no
 * pruning), valid when no memory slice is used twice and the budgets and maxima hold.
 */
function bruteForceValid(model: MigModel, layout: readonly string[]): boolean {
  const ps = layout.map((n) => model.profiles.find((p) => p.name === n));
  if (ps.some((p) => !p) || layout.length === 0) return false;
  const profiles = ps.map((p) => p!);
  if (profiles.reduce((s, p) => s + p.slices, 0) > model.computeSlices) return false;
  if (profiles.filter((p) => p.mediaExtensions).length > 1) return false;
  for (const p of new Set(profiles)) if (profiles.filter((q) => q === p).length > p.max) return false;
  const tryFrom = (i: number, used: number): boolean => {
    if (i === profiles.length) return true;
    const p = profiles[i]!;
    return p.starts.some((s) => {
      if (s + p.size > model.memorySlices) return false;
      const mask = ((1 << p.size) - 1) << s;
      return (used & mask) === 0 && tryFrom(i + 1, used | mask);
    });
  };
  return tryFrom(0, 0);
}

/** Every count vector within the per-profile maxima, as profile lists. */
function allCountVectors(model: MigModel): string[][] {
  let out: string[][] = [[]];
  for (const p of model.profiles) {
    const next: string[][] = [];
    for (const base of out) for (let n = 0; n <= p.max; n++) next.push([...base, ...Array<string>(n).fill(p.name)]);
    out = next;
  }
  return out.filter((l) => l.length > 0);
}

describe('MIG models', () => {
  it.each([
    ['A100-80GB', 'A100-80GB'],
    ['a100-80gb', 'A100-80GB'],
    ['NVIDIA A100-SXM4-80GB', 'A100-80GB'],
    ['NVIDIA-A100-SXM4-80GB', 'A100-80GB'],
    ['NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'A100-40GB'],
    ['NVIDIA H100 80GB HBM3', 'H100-80GB'],
    ['NVIDIA-H100-80GB-HBM3-SHARED', 'H100-80GB'],
    ['NVIDIA H100 NVL', 'H100-NVL'],
    ['H200-141GB', 'H200-141GB'],
    ['NVIDIA A30', 'A30-24GB'],
  ])('%s is %s', (name, model) => {
    expect(migModel(name)?.name).toBe(model);
  });

  it('knows no MIG on GPUs without it', () => {
    for (const n of ['Tesla T4', 'NVIDIA-A10', 'V100', 'A100']) expect(migModel(n)).toBeUndefined();
  });

  it('names the profiles as NVIDIA does, not ceil(MiB/1024)', () => {
    expect(migModel('H200-141GB')!.profiles.map((p) => p.name)).toEqual([
      '1g.18gb',
      '1g.18gb+me',
      '1g.35gb',
      '2g.35gb',
      '3g.71gb',
      '4g.71gb',
      '7g.141gb',
    ]);
    expect(migModel('A100-40GB')!.profiles.map((p) => p.name)).toContain('3g.20gb');
    expect(A100_80.profiles.map((p) => p.name)).not.toContain('3g.20gb'); // nos ships this error
  });

  it('spells device-plugin resources with + as .', () => {
    expect(migResourceName('1g.10gb+me')).toBe('nvidia.com/mig-1g.10gb.me');
    expect(migResourceName('3g.40gb')).toBe('nvidia.com/mig-3g.40gb');
  });

  it('lets what NVML reports win over the table', () => {
    const reported = fromReported(A100_80, [
      {
        name: '1g.10gb',
        id: 19,
        sliceCount: 1,
        instanceCount: 7,
        placements: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ start, size: 1 })),
      },
      {
        name: '3g.40gb',
        id: 9,
        sliceCount: 3,
        instanceCount: 2,
        placements: [
          { start: 4, size: 4 },
          { start: 0, size: 4 },
        ],
      },
      { name: '7g.80gb', id: 0, sliceCount: 7, instanceCount: 0, placements: [] },
    ]);
    expect(reported.profiles.map((p) => [p.name, p.starts, p.max])).toEqual([
      ['1g.10gb', [0, 1, 2, 3, 4, 5, 6], 7],
      ['3g.40gb', [0, 4], 2],
    ]);
    expect(checkLayout(reported, ['4g.40gb']).valid).toBe(false);
    expect(fromReported(A100_80, [])).toBe(A100_80);
  });
});

describe('checkLayout', () => {
  it.each([
    ['7g.80gb'],
    ['4g.40gb', '3g.40gb'],
    ['3g.40gb', '2g.20gb', '2g.20gb'],
    ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
  ])('%s… is a zero-waste layout (docs/mig.md)', (...layout) => {
    const c = checkLayout(A100_80, layout);
    expect(c).toMatchObject({ valid: true, computeSlices: 7, memorySlices: 8 });
  });

  it('places instances only at allowed starts, without overlap', () => {
    const c = checkLayout(A100_80, ['1g.10gb', '1g.10gb', '3g.40gb', '2g.20gb']);
    // A 3g fits only at 0 or 4; with a 2g and two 1g it must go to 4 (a 1g cannot start at 7).
    expect(c.valid && c.placement).toEqual([
      { profile: '2g.20gb', start: 0, size: 2 },
      { profile: '1g.10gb', start: 2, size: 1 },
      { profile: '1g.10gb', start: 3, size: 1 },
      { profile: '3g.40gb', start: 4, size: 4 },
    ]);
  });

  it('says every reason a layout is not possible', () => {
    expect(checkLayout(A100_80, ['4g.40gb', '4g.40gb'])).toEqual({
      valid: false,
      problems: ['2 × 4g.40gb: an A100-80GB GPU holds at most 1', 'compute slices 4+4 = 8: an A100-80GB GPU has 7'],
    });
    expect(checkLayout(A100_80, ['1g.5gb'])).toEqual({
      valid: false,
      problems: [
        '1g.5gb is not a MIG profile of A100-80GB (its profiles: 7g.80gb, 4g.40gb, 3g.40gb, 2g.20gb, 1g.20gb, 1g.10gb, 1g.10gb+me)',
      ],
    });
    expect(checkLayout(A100_80, ['1g.10gb+me', '1g.10gb+me'])).toMatchObject({
      valid: false,
      problems: expect.arrayContaining(['2 instances with the media engines (+me): at most one per GPU']),
    });
    expect(checkLayout(A100_80, [])).toMatchObject({
      valid: false,
      problems: [expect.stringContaining('no instances')],
    });
    expect(checkLayout(migModel('A30-24GB')!, ['2g.12gb', '2g.12gb', '1g.6gb'])).toEqual({
      valid: false,
      problems: ['compute slices 2+2+1 = 5: an A30-24GB GPU has 4', 'memory slices 2+2+1 = 5: an A30-24GB GPU has 4'],
    });
  });

  it('refuses a layout whose budgets hold but whose instances cannot all be placed, and says where each may start', () => {
    // With the catalog's geometry the budgets decide (the enumeration test shows it); a GPU whose
    // NVML offers fewer placements does not: two 2g instances that may only start at 0.
    const narrow = fromReported(A100_80, [
      { name: '2g.20gb', id: 14, sliceCount: 2, instanceCount: 3, placements: [{ start: 0, size: 2 }] },
      {
        name: '1g.10gb',
        id: 19,
        sliceCount: 1,
        instanceCount: 7,
        placements: [0, 1, 2, 3, 4, 5, 6].map((start) => ({ start, size: 1 })),
      },
    ]);
    expect(checkLayout(narrow, ['2g.20gb', '1g.10gb'])).toMatchObject({ valid: true });
    expect(checkLayout(narrow, ['2g.20gb', '2g.20gb'])).toEqual({
      valid: false,
      problems: ['no placement fits them on the 8 memory slices: 2g.20gb at 0 only (2 slices)'],
    });
  });

  it('writes layouts the way people do', () => {
    expect(layoutWords(['1g.10gb', '3g.40gb', '1g.10gb'])).toBe('2×1g.10gb + 3g.40gb');
  });
});

describe('every layout of a model', () => {
  it.each(MIG_MODELS.map((m) => [m.name, m] as const))(
    '%s: enumerated exactly as a brute-force placement search finds them',
    (_name, model) => {
      const enumerated = enumerateLayouts(model);
      const keys = enumerated.map(canon);
      expect(new Set(keys).size).toBe(keys.length);
      const oracle = allCountVectors(model)
        .filter((l) => bruteForceValid(model, l))
        .map(canon)
        .sort();
      expect([...keys].sort()).toEqual(oracle);
      for (const l of enumerated) expect(checkLayout(model, l).valid).toBe(true);
    },
  );

  it('agrees with the brute-force search on random profile lists, and its placements never overlap', () => {
    const names = A100_80.profiles.map((p) => p.name);
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...names), { minLength: 1, maxLength: 9 }), (layout) => {
        const c = checkLayout(A100_80, layout);
        expect(c.valid).toBe(bruteForceValid(A100_80, layout));
        if (c.valid) {
          const cells = c.placement.flatMap((p) => Array.from({ length: p.size }, (_, k) => p.start + k));
          expect(new Set(cells).size).toBe(cells.length);
          for (const p of c.placement)
            expect(A100_80.profiles.find((q) => q.name === p.profile)!.starts).toContain(p.start);
          expect(
            place(
              A100_80,
              layout.map((n) => A100_80.profiles.find((q) => q.name === n)!),
            ),
          ).toEqual(c.placement);
        }
      }),
      { numRuns: 500, seed: 11 },
    );
  });
});
