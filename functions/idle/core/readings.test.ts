import { describe, expect, it } from 'vitest';
import { migShare } from './readings.ts';

describe('migShare', () => {
  it("is a profile's compute slices over its GPU model's: an A30's 4g.24gb is the whole GPU, not 4/7", () => {
    expect(migShare('4g.24gb')).toBe(1);
    expect(migShare('2g.12gb')).toBe(0.5);
    expect(migShare('1g.6gb+me')).toBe(0.25);
    expect(migShare('3g.40gb')).toBeCloseTo(3 / 7);
    expect(migShare('7g.80gb')).toBe(1);
  });
});
