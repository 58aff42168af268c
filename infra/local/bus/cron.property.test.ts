import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCron } from './cron.ts';

/** Field generators inside AWS's grammar; day fields pair so exactly one is "?". */
const item = (min: number, max: number) =>
  fc.oneof(
    fc.integer({ min, max }).map(String),
    fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) => `${Math.min(a, b)}-${Math.max(a, b)}`),
    fc.tuple(fc.integer({ min, max }), fc.integer({ min: 1, max: 20 })).map(([a, s]) => `${a}/${s}`),
    fc.constant('*'),
  );
const list = (min: number, max: number) =>
  fc.array(item(min, max), { minLength: 1, maxLength: 3 }).map((xs) => xs.join(','));
const dom = fc.oneof(list(1, 31), fc.constantFrom('L', 'LW', 'L-2', '1W', '15W', '31W'));
const dow = fc.oneof(
  fc
    .array(
      fc.oneof(fc.integer({ min: 1, max: 7 }).map(String), fc.constantFrom('MON-FRI', 'SUN,SAT', '*', 'L', '6L')),
      { minLength: 1, maxLength: 2 },
    )
    .map((x) => x.join(',')),
  fc.tuple(fc.integer({ min: 1, max: 7 }), fc.integer({ min: 1, max: 5 })).map(([d, n]) => `${d}#${n}`),
);
const expression = fc
  .tuple(list(0, 59), list(0, 23), fc.boolean(), dom, dow, list(1, 12))
  .map(([mi, h, useDom, dm, dw, mo]) => `${mi} ${h} ${useDom ? dm : '?'} ${mo} ${useDom ? '?' : dw} *`);
const instant = fc.integer({ min: Date.UTC(2026, 0, 1), max: Date.UTC(2030, 0, 1) });

describe('cron next() agrees with a minute-by-minute scan', () => {
  it('returns a later matching minute, with no matching minute skipped in between', () => {
    fc.assert(
      fc.property(expression, instant, (expr, from) => {
        const cron = parseCron(expr);
        const next = cron.next(from);
        if (next === undefined) return;
        expect(next).toBeGreaterThan(from);
        expect(next % 60_000).toBe(0);
        expect(cron.matches(next)).toBe(true);
        // Scan up to a day back from next (or to `from`) for an earlier match.
        const firstMinute = Math.floor(from / 60_000) * 60_000 + 60_000;
        let earlier: number | undefined;
        for (let t = Math.max(firstMinute, next - 86_400_000); t < next && earlier === undefined; t += 60_000) {
          if (cron.matches(t)) earlier = t;
        }
        expect(earlier, `${expr} after ${new Date(from).toISOString()}`).toBeUndefined();
      }),
      { numRuns: 150 },
    );
  });
});
