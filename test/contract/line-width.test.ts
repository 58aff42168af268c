/**
 * Production lines stay within Prettier's printWidth, 120 characters (issue #26; shared STYLE.md). Prettier
 * does not break string literals, template literals or comments, so this test holds them to it: every
 * production `.ts`/`.js` file (tests, e2e, test support, fixtures and generated tables excepted, as in the
 * issue's count) has no line over 120 characters, but for the lines ALLOWED lists under
 * functions/remediate/, which is still being split. ALLOWED is exact: a file that gains a long line fails,
 * and so does one that lost some (lower its count, drop it at zero) — the list only shrinks.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(new URL('../../', import.meta.url).pathname);
const MAX = 120;
const SKIP_DIRS = new Set(['node_modules', 'dist', 'coverage']);
/** Not production: the issue's own filter, on the repository-relative path. */
const NOT_PRODUCTION = /test\.ts$|\/e2e\/|test-support|testing|\.generated\.ts$|^test\/|fixtures|\.d\.ts$/;

/** Long lines per file still allowed: functions/remediate/ only; emptied on 2026-12-05 (issue #26), it stays empty. */
const ALLOWED: Record<string, number> = {};

function* productionFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (name.startsWith('.') || SKIP_DIRS.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* productionFiles(p);
    else if (/\.(ts|js)$/.test(name) && !NOT_PRODUCTION.test(relative(ROOT, p))) yield p;
  }
}

/** `file: line` for every production line over MAX characters. */
export function longLines(): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const file of productionFiles(ROOT)) {
    const lines = readFileSync(file, 'utf8').split('\n');
    const long = lines.flatMap((l, i) => (l.length > MAX ? [i + 1] : []));
    if (long.length > 0) out.set(relative(ROOT, file), long);
  }
  return out;
}

describe('production line width', () => {
  const found = longLines();

  it(`no production line is over ${MAX} characters outside the allow-list`, () => {
    const unexpected = [...found]
      .filter(([file]) => ALLOWED[file] === undefined)
      .flatMap(([file, lines]) => lines.map((n) => `${file}:${n}`));
    expect(unexpected).toEqual([]);
  });

  it('the allow-list holds only functions/remediate/ and exactly its long lines (it only shrinks)', () => {
    expect(Object.keys(ALLOWED).filter((f) => !f.startsWith('functions/remediate/'))).toEqual([]);
    const counts = Object.fromEntries(
      [...found].filter(([f]) => ALLOWED[f] !== undefined).map(([f, l]) => [f, l.length]),
    );
    expect(counts).toEqual(ALLOWED);
  });
});
