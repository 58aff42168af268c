import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from './json-depth.ts';
import { catalogEntry, exampleEvent } from './catalog.ts';
import { APPROVAL_REQUESTED } from './catalog/chatops.ts';
import { REMEDIATION, RemediationDetailSchema } from './catalog/remediation.ts';
import { parseDetail, validateDetail, validateEvent } from './validate.ts';

const example = JSON.parse(
  readFileSync(new URL('./catalog/gpu-health-changed.example.json', import.meta.url), 'utf8'),
) as { detail: Record<string, unknown> };

describe('validateEvent on hostile input', () => {
  it('names an over-deep detail as a problem instead of overflowing the stack', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 60_000; i++) deep = [deep];
    const r = validateEvent({ ...example, detail: { ...example.detail, extra: deep } });
    expect(r).toEqual({
      ok: false,
      problems: [
        {
          path: 'detail',
          message: `nested more than ${MAX_JSON_DEPTH} levels deep (PutEvents refuses it as MalformedDetail)`,
        },
      ],
    });
  });

  it('still accepts the example event', () => {
    expect(validateEvent(example).ok).toBe(true);
  });
});

describe('parseDetail: one schema check per published event', () => {
  const example = () => (exampleEvent(catalogEntry(REMEDIATION)!) as { detail: Record<string, unknown> }).detail;

  it('validateDetail answers for a detail parseDetail built, without parsing it again', () => {
    const built = parseDetail(REMEDIATION, RemediationDetailSchema, example());
    // A parse hands back a copy; the very same object back means no parse ran.
    expect(validateDetail(REMEDIATION, built)).toEqual({ ok: true, value: built });
    expect((validateDetail(REMEDIATION, built) as { value: unknown }).value).toBe(built);
    expect((validateDetail(REMEDIATION, example()) as { value: unknown }).value).not.toBe(example());
  });

  it('vouches only for the detail-type it was parsed as, and keeps it from being changed', () => {
    const built = parseDetail(REMEDIATION, RemediationDetailSchema, example());
    expect(validateDetail(APPROVAL_REQUESTED, built).ok).toBe(false);
    expect(() => ((built as { phase: string }).phase = 'nonsense')).toThrow(TypeError);
  });

  it("refuses a schema that is not the detail-type's own", () => {
    expect(() => parseDetail(APPROVAL_REQUESTED, RemediationDetailSchema, example())).toThrow(/not the catalog schema/);
  });
});
