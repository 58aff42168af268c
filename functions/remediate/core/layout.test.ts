/**
 * The layout keeps its promise: `core/` is the pure decision core (policy, plan, state, escalation,
 * blast radius, sweep, event rendering) and imports nothing that does I/O: no adapter, no SDK, no
 * node: module, no clock. The edge (handler, facts, ledger, run, wiring, CLI) is `functions/remediate/`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const dir = new URL('./', import.meta.url);
const ALLOWED = [
  /^\.\/[a-z-]+\.ts$/,
  /^\.\.\/\.\.\/\.\.\/events\/index\.ts$/,
  /^\.\.\/\.\.\/lib\/plan\.ts$/,
  /^\.\.\/\.\.\/lib\/yaml-text\.ts$/,
  /^\.\.\/\.\.\/lib\/(hash|node-state|gpu-actions)\.ts$/,
  /^zod$/,
  /^yaml$/,
];
// lib/yaml-text.ts parses text it is handed (bounded aliases, one-line errors): no I/O. lib/hash.ts and
// lib/node-state.ts are the kernel's pure ids and label names; lib/gpu-actions.ts its pure GPU-action
// channel (the merge of an owner's set into the node's requests, the answers by owner).
/** Type-only imports of the applier's result shape and of the adapters' model (the one Taint type) are not I/O. */
const TYPE_ONLY = [/^\.\.\/\.\.\/lib\/apply\.ts$/, /^\.\.\/\.\.\/adapters\/kube\/model\.ts$/];

describe('functions/remediate/core', () => {
  const files = readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
  it.each(files)('%s imports only pure modules', (file) => {
    const text = readFileSync(new URL(file, dir), 'utf8');
    for (const m of text.matchAll(/^import (type )?[^;]*? from '([^']+)';/gms)) {
      const [, typeOnly, from] = m;
      const ok = ALLOWED.some((r) => r.test(from!)) || (typeOnly !== undefined && TYPE_ONLY.some((r) => r.test(from!)));
      expect(ok, `${file} imports ${from}`).toBe(true);
    }
    expect(text).not.toMatch(/Date\.now\(\)|new Date\(\)/);
  });
});
