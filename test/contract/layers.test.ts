/**
 * The house's layers (issue #26; shared blueprint "The kernel and its clients"): functions/lib is the
 * kernel every reflex stands on and imports none of them; adapters import no function; each
 * function folder is a client of the kernel and imports no other function's folder — chatops drives
 * the others only through each one's public entry (`functions/<fn>/index.ts`); and nothing below
 * bin/ imports bin/ (the CLI dispatches down, never the reverse). Production files only: a test may
 * reach across to set a scene.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(new URL('../../', import.meta.url).pathname);
const SKIP = new Set(['node_modules', '.git', '.build', '.serverless']);

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const p = join(dir, name);
    if (statSync(p).isDirectory()) yield* tsFiles(p);
    else if (name.endsWith('.ts') && !name.endsWith('.test.ts') && !name.endsWith('.d.ts')) yield p;
  }
}

/** Every relative module a file imports (static, dynamic and `export … from`), repository-relative. */
export function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"](\.\.?\/[^'"]+)['"]/g))
    out.push(relative(ROOT, resolve(dirname(file), m[1]!)));
  return out;
}

const files = (top: string) => [...tsFiles(join(ROOT, top))].map((f) => relative(ROOT, f));
const KERNEL = new Set(['lib', 'adapters']);
/** `functions/<fn>/…` → fn; undefined outside functions/ or for the files at its top (config.ts). */
const fnOf = (p: string) => (p.startsWith('functions/') && p.split('/').length > 2 ? p.split('/')[1] : undefined);

/** Who imports what across `rule`'s line: `importer → imported`. */
function crossings(importers: readonly string[], crosses: (from: string, to: string) => boolean): string[] {
  return importers.flatMap((f) =>
    importsOf(join(ROOT, f))
      .filter((to) => crosses(f, to))
      .map((to) => `${f} → ${to}`),
  );
}

describe('layers', () => {
  it("no function folder imports another, but chatops through each one's public entry", () => {
    const bad = crossings(files('functions'), (from, to) => {
      const a = fnOf(from);
      const b = fnOf(to);
      if (!a || !b || a === b || KERNEL.has(a) || KERNEL.has(b)) return false;
      return !(a === 'chatops' && to === `functions/${b}/index.ts`);
    });
    expect(bad).toEqual([]);
  });

  it('the kernel (functions/lib) and the adapters import no function', () => {
    const bad = crossings(
      files('functions').filter((f) => KERNEL.has(fnOf(f) ?? '')),
      (_from, to) => !KERNEL.has(fnOf(to) ?? 'lib') && to.startsWith('functions/') && fnOf(to) !== undefined,
    );
    expect(bad).toEqual([]);
  });

  it('nothing below bin/ imports bin/ but the files still listed here, and the list holds no stale entry', () => {
    const below = ['functions', 'node-agent', 'events', 'infra'].flatMap(files);
    const bad = crossings(below, (_from, to) => to.startsWith('bin/'));
    const importers = [...new Set(bad.map((b) => b.split(' → ')[0]!))].sort();
    // Known, to be emptied (issue #26: bin/command.ts hooks stdout on import); none may be added.
    expect(importers.filter((f) => !BIN_IMPORTERS_LEFT.includes(f))).toEqual([]);
    expect(BIN_IMPORTERS_LEFT.filter((f) => !importers.includes(f))).toEqual([]);
  });
});

/**
 * The commands that live with the part they drive implement bin/command.ts's Command and throw its
 * UsageError; importing it has no side effect any more (the stdout hook runs in bin/main.ts only).
 * Moving that kit below bin/ empties this list.
 */
const BIN_IMPORTERS_LEFT: string[] = [];
