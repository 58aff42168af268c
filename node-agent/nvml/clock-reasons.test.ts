import { describe, expect, it } from 'vitest';
import { clockEventReasonNames } from './clock-reasons.ts';

describe('clockEventReasonNames', () => {
  it.each([
    [0, []],
    [0x1, ['gpuIdle']],
    [0x44, ['swPowerCap', 'hwThermalSlowdown']],
    [0x88, ['hwSlowdown', 'hwPowerBrakeSlowdown']],
    [0x1 | 0x200, ['gpuIdle', 'bit0x200']],
  ])('names the bits of %i', (mask, names) => {
    expect(clockEventReasonNames(mask)).toEqual(names);
  });
});
