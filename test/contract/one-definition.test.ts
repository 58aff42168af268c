/**
 * Types and helpers the house has one of (issue #26): a second definition lets the two drift apart.
 * `Taint` is the Kubernetes ports' (functions/adapters/kube/model.ts); the functions' logger is
 * functions/adapters/logger.ts, imported from there (no re-export under another name).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = new URL('../../', import.meta.url).pathname;

function production(dir: string): string[] {
  const out: string[] = [];
  const walk = (abs: string) => {
    if (statSync(abs).isDirectory()) for (const e of readdirSync(abs).sort()) walk(join(abs, e));
    else if (/\.ts$/.test(abs) && !abs.endsWith('.test.ts') && !abs.endsWith('.d.ts')) out.push(abs);
  };
  walk(join(ROOT, dir));
  return out;
}

describe('one definition', () => {
  it('declares the Taint type once, in the Kubernetes ports', () => {
    const declaring = ['functions', 'events']
      .flatMap(production)
      .filter((f) => /\b(interface|type)\s+Taint\s*[{=<]/.test(readFileSync(f, 'utf8')))
      .map((f) => relative(ROOT, f));
    expect(declaring).toEqual(['functions/adapters/kube/model.ts']);
  });

  it('has one logger for the functions, with no second module re-exporting it', () => {
    expect(existsSync(join(ROOT, 'functions/lib/logger.ts'))).toBe(false);
    const via = production('functions').filter((f) => /from '\.[./]*\/lib\/logger\.ts'/.test(readFileSync(f, 'utf8')));
    expect(via).toEqual([]);
  });
});
