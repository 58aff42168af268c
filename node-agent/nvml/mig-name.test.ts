import { describe, expect, it } from 'vitest';
import { migProfileName, migProfileSuffix } from './mig.ts';

/**
 * MIG profile names as NVIDIA writes them (nvidia-smi mig -lgip, the device plugin's resource
 * names): the GB is the profile's share of the GPU's memory rounded up to eighths, times the GPU's
 * memory in whole GB. Memory sizes below are what real drivers report per profile.
 */
describe('migProfileName', () => {
  it.each([
    // H200 141GB (143771 MiB): a 1g instance reports 16.00 GiB and is still called 1g.18gb
    [1, 16384, 143771, 0, '1g.18gb'],
    [3, 71475, 143771, 2, '3g.71gb'],
    [7, 143104, 143771, 4, '7g.141gb'],
    // A100-80GB (81920 MiB)
    [1, 9856, 81920, 0, '1g.10gb'],
    [3, 40192, 81920, 2, '3g.40gb'],
    [4, 40192, 81920, 3, '4g.40gb'],
    [7, 80384, 81920, 4, '7g.80gb'],
    [1, 9856, 81920, 7, '1g.10gb+me'],
    [1, 19968, 81920, 9, '1g.20gb'],
    // A100-40GB (40960 MiB)
    [1, 4864, 40960, 0, '1g.5gb'],
    [2, 9856, 40960, 1, '2g.10gb'],
  ])('%ig with %i MiB of %i MiB, profile index %i → %s', (slices, mib, total, index, name) => {
    expect(migProfileName(slices, mib, total, index)).toBe(name);
  });

  it('gives the NO_ME, ALL_ME and GFX variants suffixes of their own, so they never collide with the base profile', () => {
    const names = Array.from({ length: 17 }, (_, i) => migProfileSuffix(i));
    expect(names.slice(0xa, 0x11)).toEqual(['+gfx', '+gfx', '+gfx', '-me', '-me', '+me.all', '+me.all']);
    expect(names.slice(0, 7).every((s) => s === '')).toBe(true);
  });
});
