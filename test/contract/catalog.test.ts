import { describe, expect, it } from 'vitest';
import { CATALOG, exampleEvent, validateEvent, validateDetail, SOURCES } from '../../events/index.ts';
import { jsonSchemaOf } from '../../events/cli.ts';

type Json = Record<string, unknown>;
const clone = <T>(v: T): T => structuredClone(v);
const examples = CATALOG.map((e) => [e.detailType, e, exampleEvent(e) as Json] as const);

describe('event catalog', () => {
  it('has every detail-type the product needs, each from its source', () => {
    expect(CATALOG.map((e) => `${e.source} ${e.detailType}`)).toEqual(
      expect.arrayContaining([
        `${SOURCES.agent} GPU XID Error`,
        `${SOURCES.agent} GPU Health Changed`,
        `${SOURCES.agent} GPU Utilization Summary`,
        `${SOURCES.agent} GPU Inventory`,
        `${SOURCES.functions} Remediation`,
        `${SOURCES.functions} MIG Layout Change`,
        `${SOURCES.functions} GPU Pool Scaled`,
        `${SOURCES.functions} Quota Rewritten`,
        `${SOURCES.functions} Approval Requested`,
        `${SOURCES.chatops} ChatOps Command`,
        `${SOURCES.chatops} ChatOps Command Requested`,
        `${SOURCES.chatops} Approval Decided`,
      ]),
    );
  });

  it.each(examples)('example of %s parses against its schema', (_t, _e, ev) => {
    const r = validateEvent(ev);
    expect(r.ok ? [] : r.problems).toEqual([]);
  });

  it.each(examples)('%s: a missing required field is named', (_t, _e, ev) => {
    const broken = clone(ev);
    delete (broken.detail as Json).eventId;
    const r = validateEvent(broken);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems).toContainEqual({ path: 'detail.eventId', message: 'required, but missing' });
  });

  it.each(examples)('%s: an unknown field is refused at its path', (_t, _e, ev) => {
    const broken = clone(ev);
    (broken.detail as Json).surprise = true;
    const r = validateEvent(broken);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems).toContainEqual({ path: 'detail.surprise', message: 'unknown field' });
  });

  it.each(examples)('%s: a wrong schemaVersion type is named', (_t, _e, ev) => {
    const broken = clone(ev);
    (broken.detail as Json).schemaVersion = '1';
    const r = validateEvent(broken);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.problems.map((p) => p.path)).toContain('detail.schemaVersion');
  });

  it('says "expected integer, got "79"" for a string XID', () => {
    const ev = clone(exampleEvent(CATALOG[0]!) as Json);
    (ev.detail as Json).xid = '79';
    const r = validateEvent(ev);
    expect(r.ok ? [] : r.problems).toEqual([{ path: 'detail.xid', message: 'expected integer, got "79"' }]);
  });

  it('names nested paths with array indices', () => {
    const inv = CATALOG.find((e) => e.slug === 'gpu-inventory')!;
    const ev = clone(exampleEvent(inv) as Json);
    ((ev.detail as Json).gpus as Json[])[0]!.uuid = 'GPU-nope';
    const r = validateEvent(ev);
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['detail.gpus[0].uuid']);
  });

  it('refuses an oversized detail the way EventBridge would (256 KB per entry)', () => {
    const ev = clone(exampleEvent(CATALOG[0]!) as Json);
    (ev.detail as Json).pods = Array.from({ length: 128 }, (_, i) => ({
      uid: `u-${i}`.padEnd(64, 'x'),
      namespace: 'n'.repeat(63),
      name: 'p'.repeat(253),
    }));
    (ev.detail as Json).message = 'm'.repeat(1024);
    // Under 256 KB still: valid.
    expect(validateEvent(ev).ok).toBe(true);
    ev.resources = Array.from({ length: 200 }, () => 'r'.repeat(2000));
    const r = validateEvent(ev);
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(r.problems[0]).toMatchObject({
        path: 'detail',
        message: expect.stringMatching(/bytes; EventBridge accepts at most 262144/),
      });
  });

  it('refuses a detail-type from the wrong source', () => {
    const ev = clone(exampleEvent(CATALOG[0]!) as Json);
    ev.source = SOURCES.functions;
    const r = validateEvent(ev);
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['source']);
  });

  it('refuses unknown detail-types instead of passing them', () => {
    expect(validateDetail('GPU Melted', {})).toEqual({
      ok: false,
      problems: [{ path: 'detail-type', message: 'unknown detail-type "GPU Melted"' }],
    });
  });

  it('lets node-level monitoring failures omit the GPU, and nothing else', () => {
    const base = {
      schemaVersion: 1,
      eventId: 'health:n1:monitoring:1',
      node: 'n1',
      observedAt: '2026-11-21T03:00:00.000Z',
      state: 'firing',
      severity: 'warning',
      message: 'NVML hung',
    };
    expect(validateDetail('GPU Health Changed', { ...base, condition: 'monitoring-degraded' }).ok).toBe(true);
    const r = validateDetail('GPU Health Changed', { ...base, condition: 'temperature' });
    expect(r.ok ? [] : r.problems.map((p) => p.path)).toEqual(['detail.gpu']);
  });

  it.each(CATALOG.map((e) => [e.detailType]))(
    'exports a JSON Schema for %s that requires its base fields',
    (detailType) => {
      const s = jsonSchemaOf(detailType);
      expect(s.$schema).toMatch(/json-schema\.org/);
      // One object, or (a detail with variants, by a discriminator) each of its variants one.
      const variants = (s.oneOf ?? s.anyOf ?? [s]) as (typeof s)[];
      expect(variants.length).toBeGreaterThan(0);
      for (const v of variants) {
        expect(v.type).toBe('object');
        expect(v.required).toEqual(expect.arrayContaining(['schemaVersion', 'eventId']));
        expect(v.additionalProperties).toBe(false);
      }
    },
  );
});
