import { describe, expect, it } from 'vitest';
import { deviceResourceName, simMigModel, SIM_MIG_MODELS } from './mig-catalog.ts';
import { placeInstances } from './mig-placement.ts';

const model = (name: string) => SIM_MIG_MODELS.find((m) => m.name === name)!;
const fits = (m: string, profiles: string[]) => 'slots' in placeInstances(model(m), profiles);
const n = (count: number, p: string) => Array<string>(count).fill(p);

/** `nvidia-smi mig -lgipp` on an A100/H100 as NVIDIA's MIG user guide lists it: `Profile ID 19 Placements: {0,1,2,3,4,5,6}:1`. */
const LGIPP: [id: number, starts: number[], size: number][] = [
  [19, [0, 1, 2, 3, 4, 5, 6], 1],
  [20, [0, 1, 2, 3, 4, 5, 6], 1],
  [15, [0, 2, 4, 6], 2],
  [14, [0, 2, 4], 2],
  [9, [0, 4], 4],
  [5, [0], 4],
  [0, [0], 8],
];

describe("the simulator's MIG catalog holds NVIDIA's documented tables", () => {
  it.each(SIM_MIG_MODELS.filter((m) => m.memorySlices === 8).map((m) => [m.name, m] as const))(
    '%s places each profile as -lgipp lists it',
    (_, m) => {
      expect(m.profiles.map((p) => [p.id, [...p.starts], p.size])).toEqual(LGIPP);
    },
  );

  it.each([
    [
      'A100-40GB',
      ['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb'],
      [7, 1, 4, 3, 2, 1, 1],
    ],
    [
      'H100-80GB',
      ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'],
      [7, 1, 4, 3, 2, 1, 1],
    ],
    [
      'H200-141GB',
      ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb'],
      [7, 1, 4, 3, 2, 1, 1],
    ],
    ['A30-24GB', ['1g.6gb', '1g.6gb+me', '2g.12gb', '2g.12gb+me', '4g.24gb'], [4, 1, 2, 1, 1]],
  ])('%s offers the profiles and instance counts of -lgip', (name, profiles, max) => {
    expect(model(name).profiles.map((p) => p.name)).toEqual(profiles);
    expect(model(name).profiles.map((p) => p.max)).toEqual(max);
  });

  it.each([
    ['NVIDIA-H100-80GB-HBM3', 'H100-80GB'],
    ['NVIDIA-A100-SXM4-40GB-MIG-1g.5gb', 'A100-40GB'],
    ['NVIDIA-A100-80GB-PCIe', 'A100-80GB'],
    ['NVIDIA-A30', 'A30-24GB'],
    ['Tesla-T4', undefined],
  ])('reads the product label %s as %s', (label, name) => {
    expect(simMigModel(label)?.name).toBe(name);
  });

  it('names the device plugin resource with + spelled .', () => {
    expect(deviceResourceName('1g.10gb+me')).toBe('nvidia.com/mig-1g.10gb.me');
  });
});

describe('the simulated driver places what NVIDIA documents, and refuses the rest', () => {
  it.each<[string, string[]]>([
    // NVIDIA/mig-parted examples/config.yaml: all-1g, all-2g, all-3g, all-balanced.
    ['A100-40GB', n(7, '1g.5gb')],
    ['A100-40GB', n(3, '2g.10gb')],
    ['A100-40GB', n(2, '3g.20gb')],
    ['A100-40GB', [...n(2, '1g.5gb'), '2g.10gb', '3g.20gb']],
    ['H100-80GB', [...n(2, '1g.10gb'), '2g.20gb', '3g.40gb']],
    ['A30-24GB', [...n(2, '1g.6gb'), '2g.12gb']],
    ['A30-24GB', n(4, '1g.6gb')],
    // The zero-waste layouts of the user guide's A100 diagram.
    ['A100-80GB', ['7g.80gb']],
    ['A100-80GB', ['4g.40gb', '3g.40gb']],
    ['A100-80GB', ['3g.40gb', '2g.20gb', '2g.20gb']],
    ['A100-80GB', ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb']],
    ['A100-80GB', ['4g.40gb', '2g.20gb', '1g.10gb']],
    ['A100-80GB', n(4, '1g.20gb')],
    ['A100-80GB', ['1g.10gb+me', ...n(6, '1g.10gb')]],
  ])('%s holds %j', (m, profiles) => {
    expect(fits(m, profiles)).toBe(true);
  });

  it.each<[string, string[], RegExp]>([
    ['A100-80GB', n(2, '4g.40gb'), /offers 1/],
    ['A100-80GB', [...n(2, '3g.40gb'), '1g.10gb'], /no placement/],
    ['A100-80GB', n(4, '2g.20gb'), /offers 3/],
    ['A100-80GB', n(8, '1g.10gb'), /offers 7/],
    ['A100-80GB', ['7g.80gb', '1g.10gb'], /compute slices/],
    ['A100-80GB', ['4g.40gb', '4g.40gb'], /offers 1/],
    ['A100-80GB', ['4g.40gb', '1g.20gb', '1g.20gb', '1g.10gb'], /compute slices|no placement/],
    ['A100-80GB', ['1g.10gb+me', '1g.10gb+me'], /offers 1|media engines/],
    ['A30-24GB', ['2g.12gb+me', '1g.6gb+me'], /media engines/],
    ['A30-24GB', ['4g.24gb', '1g.6gb'], /compute slices/],
    ['H100-80GB', ['1g.5gb'], /not supported on H100-80GB/],
  ])('%s refuses %j', (m, profiles, why) => {
    const placed = placeInstances(model(m), profiles);
    expect('problem' in placed && placed.problem).toMatch(why);
  });

  it('places a 3g only at 0 or 4, so a 1g at slice 4 leaves no room for a second 3g', () => {
    const placed = placeInstances(model('H100-80GB'), ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb']);
    expect('slots' in placed && placed.slots.map((s) => `${s.profile}@${s.start}`)).toEqual([
      '2g.20gb@0',
      '1g.10gb@2',
      '1g.10gb@3',
      '3g.40gb@4',
    ]);
  });
});
