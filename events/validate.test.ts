import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from './json-depth.ts';
import { validateEvent } from './validate.ts';

const example = JSON.parse(readFileSync(new URL('./catalog/gpu-health-changed.example.json', import.meta.url), 'utf8')) as { detail: Record<string, unknown> };

describe('validateEvent on hostile input', () => {
  it('names an over-deep detail as a problem instead of overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 60_000; i++) deep = [deep];
    const r = validateEvent({ ...example, detail: { ...example.detail, extra: deep } });
    expect(r).toEqual({ ok: false, problems: [{ path: 'detail', message: `nested more than ${MAX_JSON_DEPTH} levels deep (PutEvents refuses it as MalformedDetail)` }] });
  });

  it('still accepts the example event', () => {
    expect(validateEvent(example).ok).toBe(true);
  });
});
