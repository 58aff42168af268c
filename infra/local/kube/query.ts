import { errors, failure } from './errors.ts';

/**
 * Query parameters as the real API server decodes them (apimachinery's parameter codec), so a
 * client that spells `watch=True` (the Python client) or `limit=abc` gets the real answer:
 *
 * - booleans (`watch`, `allowWatchBookmarks`, `sendInitialEvents`): absent, `0` or `false` in any
 *   case is false, anything else (even an empty value) is true. This is
 *   `runtime.Convert_Slice_string_To_bool`, deliberately more lenient than Go's strconv.ParseBool.
 * - integers (`limit`, `timeoutSeconds`, `gracePeriodSeconds`): strconv.ParseInt, base 10, int64;
 *   anything else is a 400 with Go's wording.
 * - `dryRun`: every value must be `All` (422 naming the options type, as the real validation).
 * - `propagationPolicy`: `Orphan`, `Background` or `Foreground`.
 * - `fieldValidation`: `Ignore`, `Warn` or `Strict` (400, as the real handler).
 * Parameters the server does not know are ignored, as there.
 */
const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

export function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/** Undefined when absent; throws the real 400 when it is not a base-10 int64. */
export function queryInt(q: URLSearchParams, name: string): number | undefined {
  const v = q.get(name);
  if (v === null) return undefined;
  if (!/^[+-]?[0-9]+$/.test(v))
    throw errors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: invalid syntax`);
  const big = BigInt(v);
  if (big > INT64_MAX || big < INT64_MIN)
    throw errors.badRequest(`strconv.ParseInt: parsing ${JSON.stringify(v)}: value out of range`);
  return Number(big);
}

export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions';

/** `dryRun=All` (repeatable); any other value is refused as the real server's option validation does. */
export function queryDryRun(q: URLSearchParams, kind: OptionsKind): boolean {
  return dryRunOf(q.getAll('dryRun'), kind, 'dryRun');
}

/** The same rule for a DeleteOptions body's `dryRun` list. */
export function dryRunOf(values: unknown, kind: OptionsKind, field: string): boolean {
  if (values === undefined || values === null) return false;
  if (!Array.isArray(values) || values.some((v) => typeof v !== 'string'))
    throw optionsInvalid(kind, field, 'FieldValueTypeInvalid', `Invalid value: must be a list of strings`);
  const bad = (values as string[]).filter((v) => v !== 'All');
  if (bad.length > 0)
    throw optionsInvalid(
      kind,
      field,
      'FieldValueNotSupported',
      `Unsupported value: []string{${bad.map((v) => JSON.stringify(v)).join(', ')}}: supported values: "All"`,
    );
  return values.length > 0;
}

function optionsInvalid(kind: OptionsKind, field: string, reason: string, why: string) {
  return failure(422, 'Invalid', `${kind}.meta.k8s.io "" is invalid: ${field}: ${why}`, {
    group: 'meta.k8s.io',
    kind,
    causes: [{ reason, message: why, field }],
  });
}

const PROPAGATION = ['Orphan', 'Background', 'Foreground'];
const FIELD_VALIDATION = ['Ignore', 'Warn', 'Strict'];

/** Checks the write options every mutating verb shares; returns whether it is a dry run. */
export function writeOptions(q: URLSearchParams, kind: OptionsKind): boolean {
  const dryRun = queryDryRun(q, kind);
  const fv = q.get('fieldValidation');
  if (fv !== null && fv !== '' && !FIELD_VALIDATION.includes(fv)) {
    throw errors.badRequest(`invalid fieldValidation directive: ${fv}, must be one of: Ignore, Warn, Strict`);
  }
  const fm = q.get('fieldManager');
  // ValidateFieldManager: at most 128 characters, printable.
  if (fm !== null && (fm.length > 128 || /[^\x20-\x7e]/.test(fm))) {
    throw optionsInvalid(
      kind,
      'fieldManager',
      'FieldValueInvalid',
      fm.length > 128
        ? 'Too long: may not be more than 128 bytes'
        : `Invalid value: ${JSON.stringify(fm)}: must be printable`,
    );
  }
  if (kind === 'DeleteOptions') {
    const pp = q.get('propagationPolicy');
    if (pp !== null && !PROPAGATION.includes(pp))
      throw optionsInvalid(
        kind,
        'propagationPolicy',
        'FieldValueNotSupported',
        `Unsupported value: ${JSON.stringify(pp)}: supported values: "Foreground", "Background", "Orphan"`,
      );
    queryInt(q, 'gracePeriodSeconds');
  }
  return dryRun;
}

export interface ListQuery {
  labelSelector?: string;
  fieldSelector?: string;
  limit: number;
  continue?: string;
  watch: boolean;
  resourceVersion?: string;
  timeoutSeconds?: number;
}

/** ListOptions: the parameters of a list or watch, decoded and checked before anything runs. */
export function listQuery(q: URLSearchParams): ListQuery {
  const limit = queryInt(q, 'limit') ?? 0;
  const timeoutSeconds = queryInt(q, 'timeoutSeconds');
  queryBool(q, 'allowWatchBookmarks');
  const rvMatch = q.get('resourceVersionMatch');
  if (rvMatch !== null && rvMatch !== '' && !['Exact', 'NotOlderThan'].includes(rvMatch)) {
    throw failure(
      422,
      'Invalid',
      `ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: ${JSON.stringify(rvMatch)}: ` +
        `supported values: "Exact", "NotOlderThan"`,
      {
        group: 'meta.k8s.io',
        kind: 'ListOptions',
        causes: [
          {
            reason: 'FieldValueNotSupported',
            message: `Unsupported value: ${JSON.stringify(rvMatch)}: supported values: "Exact", "NotOlderThan"`,
            field: 'resourceVersionMatch',
          },
        ],
      },
    );
  }
  return {
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
    // The real server treats a limit of zero or below as "no limit".
    limit: limit > 0 ? limit : 0,
    continue: q.get('continue') || undefined,
    watch: queryBool(q, 'watch'),
    resourceVersion: q.get('resourceVersion') ?? undefined,
    ...(timeoutSeconds !== undefined ? { timeoutSeconds } : {}),
  };
}
