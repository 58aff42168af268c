import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { deeperThan, jsonTextDepth, MAX_JSON_DEPTH } from './json-depth.ts';

/** The depth of a parsed value, recursively: the reference the linear scans are checked against. */
function depthOf(v: unknown): number {
  if (typeof v !== 'object' || v === null) return 0;
  return 1 + Math.max(0, ...(Array.isArray(v) ? v : Object.values(v)).map(depthOf));
}

describe('JSON nesting depth', () => {
  it.each([
    ['1', 0],
    ['"{[{["', 0],
    ['{}', 1],
    ['{"a":[[]]}', 3],
    ['{"a":"\\"[[[","b":[{}]}', 3],
    ['[[],[[]],[]]', 3],
  ])('jsonTextDepth(%s) is %i, brackets inside strings ignored', (text, depth) => {
    expect(jsonTextDepth(text)).toBe(depth);
  });

  it('agrees with a recursive count on any JSON text and any value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        const d = depthOf(v);
        expect(jsonTextDepth(JSON.stringify(v))).toBe(d);
        expect(deeperThan(v, d)).toBe(false);
        if (d > 0) expect(deeperThan(v, d - 1)).toBe(true);
      }),
    );
  });

  it('measures 60,000 levels in one pass and stops at the limit', () => {
    const text = '['.repeat(60_000) + ']'.repeat(60_000);
    expect(jsonTextDepth(text)).toBe(MAX_JSON_DEPTH + 1);
    expect(jsonTextDepth(text, 100_000)).toBe(60_000);
    let v: unknown = [];
    for (let i = 0; i < 60_000; i++) v = [v];
    expect(deeperThan(v)).toBe(true);
  });

  it('counts a cycle as too deep instead of walking it forever', () => {
    const a: unknown[] = [];
    a.push(a);
    expect(deeperThan(a)).toBe(true);
  });
});
