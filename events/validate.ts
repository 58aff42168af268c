/**
 * Validation of whole events (envelope + detail) against the catalog, with problems that name the
 * field: `detail.xid: expected integer, got "79"`.
 */
import type * as z from 'zod';
import { catalogEntry } from './catalog.ts';
import { describeValue } from './common.ts';
import { EventEnvelopeSchema, entrySize, MAX_ENTRY_BYTES, type EventEnvelope } from './envelope.ts';
import { deeperThan, MAX_JSON_DEPTH } from './json-depth.ts';

export interface Problem {
  path: string;
  message: string;
}

export type Validation<T> = { ok: true; value: T } | { ok: false; problems: Problem[] };

/** `['gpus', 0, 'uuid']` → `gpus[0].uuid`. */
export function formatPath(prefix: string, path: readonly PropertyKey[]): string {
  let out = prefix;
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? String(p) : `.${String(p)}`;
  return out === '' ? '(event)' : out;
}

function issueMessage(issue: z.core.$ZodIssue): string {
  const input = (issue as { input?: unknown }).input;
  switch (issue.code) {
    case 'invalid_type':
      if (issue.message.startsWith('expected')) return issue.message;
      return input === undefined ? 'required, but missing' : `expected ${issue.expected}, got ${describeValue(input)}`;
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}, got ${describeValue(input)}`;
    default:
      return input === undefined || typeof input === 'object'
        ? issue.message
        : `${issue.message} (got ${describeValue(input)})`;
  }
}

/** Problems from a zod error, each path under `prefix`; unknown keys are reported at their own path. */
export function problemsOf(error: z.ZodError, prefix = ''): Problem[] {
  return error.issues.map((issue) => {
    if (issue.code === 'unrecognized_keys' && issue.keys.length === 1) {
      return { path: formatPath(prefix, [...issue.path, issue.keys[0]!]), message: 'unknown field' };
    }
    return { path: formatPath(prefix, issue.path), message: issueMessage(issue) };
  });
}

/**
 * Details a builder got from its detail-type's catalog schema (parseDetail's results, never its
 * input): validateDetail answers for them without parsing them again, so an event the functions
 * build and publish is checked once, where it is built (before anything is recorded or done), not
 * again at the publisher. They are frozen, so the answer stays true.
 */
const parsedAs = new WeakMap<object, string>();

/** Parses a detail with `detailType`'s catalog schema (throws ZodError as `schema.parse` does). */
export function parseDetail<T>(detailType: string, schema: z.ZodType<T>, detail: unknown): T {
  if (catalogEntry(detailType)?.schema !== schema)
    throw new Error(`parseDetail: not the catalog schema of ${detailType}`);
  const out = schema.parse(detail);
  if (typeof out === 'object' && out !== null) parsedAs.set(Object.freeze(out), detailType);
  return out;
}

/** Parses a detail of a known detail-type. Unknown detail-types are a problem, not a pass. */
export function validateDetail(
  detailType: string,
  detail: unknown,
  prefix = 'detail',
): Validation<Record<string, unknown>> {
  if (typeof detail === 'object' && detail !== null && parsedAs.get(detail) === detailType)
    return { ok: true, value: detail as Record<string, unknown> };
  const entry = catalogEntry(detailType);
  if (!entry)
    return {
      ok: false,
      problems: [{ path: 'detail-type', message: `unknown detail-type ${JSON.stringify(detailType)}` }],
    };
  const r = entry.schema.safeParse(detail, { reportInput: true });
  return r.success
    ? { ok: true, value: r.data as Record<string, unknown> }
    : { ok: false, problems: problemsOf(r.error, prefix) };
}

/** Validates an event as EventBridge delivers it: envelope, source, detail, and entry size. */
export function validateEvent(event: unknown): Validation<EventEnvelope> {
  const env = EventEnvelopeSchema.safeParse(event, { reportInput: true });
  if (!env.success) return { ok: false, problems: problemsOf(env.error) };
  const e = env.data;
  const problems: Problem[] = [];
  const entry = catalogEntry(e['detail-type']);
  if (!entry) {
    problems.push({ path: 'detail-type', message: `unknown detail-type ${JSON.stringify(e['detail-type'])}` });
    return { ok: false, problems };
  }
  // Checked before anything walks the detail recursively (JSON.stringify overflows near 10k levels).
  if (deeperThan(e.detail, MAX_JSON_DEPTH)) {
    problems.push({
      path: 'detail',
      message: `nested more than ${MAX_JSON_DEPTH} levels deep (PutEvents refuses it as MalformedDetail)`,
    });
    return { ok: false, problems };
  }
  if (e.source !== entry.source)
    problems.push({
      path: 'source',
      message: `"${entry.detailType}" comes from ${entry.source}, got ${JSON.stringify(e.source)}`,
    });
  const size = entrySize({
    source: e.source,
    detailType: e['detail-type'],
    detail: JSON.stringify(e.detail),
    resources: e.resources,
  });
  if (size > MAX_ENTRY_BYTES)
    problems.push({
      path: 'detail',
      message: `event is ${size} bytes; EventBridge accepts at most ${MAX_ENTRY_BYTES}`,
    });
  const d = validateDetail(e['detail-type'], e.detail);
  if (!d.ok) problems.push(...d.problems);
  return problems.length ? { ok: false, problems } : { ok: true, value: { ...e, detail: d.ok ? d.value : e.detail } };
}
