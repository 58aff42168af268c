import { describe, expect, it } from 'vitest';
import { XidDeduper } from './dedupe.ts';

function deduper(windowMs = 10_000) {
  let now = 0;
  const d = new XidDeduper({ windowMs, now: () => now });
  return { d, advance: (ms: number) => (now += ms) };
}

const GPU = '00000000:3B:00.0';

describe('XidDeduper', () => {
  it('reports the same XID on the same GPU once when both sources see it in the window', () => {
    const { d, advance } = deduper();
    expect(d.admit(GPU, 79, 'nvml')).toBe(true);
    advance(2_000);
    expect(d.admit(GPU, 79, 'kmsg')).toBe(false);
    expect(d.size).toBe(0);
  });

  it('works whichever source is first, and ignores bus id case', () => {
    const { d } = deduper();
    expect(d.admit('00000000:3b:00.0', 48, 'kmsg')).toBe(true);
    expect(d.admit(GPU, 48, 'nvml')).toBe(false);
  });

  it('reports both when the second sighting comes after the window', () => {
    const { d, advance } = deduper(10_000);
    expect(d.admit(GPU, 79, 'nvml')).toBe(true);
    advance(10_001);
    expect(d.admit(GPU, 79, 'kmsg')).toBe(true);
  });

  it('keeps repeats from one source: they are new occurrences', () => {
    const { d } = deduper();
    expect([
      d.admit(GPU, 13, 'nvml'),
      d.admit(GPU, 13, 'nvml'),
      d.admit(GPU, 13, 'kmsg'),
      d.admit(GPU, 13, 'kmsg'),
      d.admit(GPU, 13, 'kmsg'),
    ]).toEqual([true, true, false, false, true]);
  });

  it.each([
    ['another XID', GPU, 31],
    ['another GPU', '00000000:07:00.0', 79],
  ])('does not pair %s', (_what, pci, xid) => {
    const { d } = deduper();
    d.admit(GPU, 79, 'nvml');
    expect(d.admit(pci, xid, 'kmsg')).toBe(true);
  });

  it('rejects a negative window', () => {
    expect(() => new XidDeduper({ windowMs: -1, now: () => 0 })).toThrow(/windowMs/);
  });
});
