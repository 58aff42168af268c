import { errors, failure, type ApiError, type Cause } from './errors.ts';
import { dryRunOf } from './query.ts';
import type { ResourceDef } from './resources.ts';
import { KINDS, ObjectMeta, type FieldType, type Struct } from './schema.ts';
import type { KubeObject } from './types.ts';

/**
 * What the real API server refuses before it stores anything: values of the wrong JSON type
 * (its decoder), malformed names, label and annotation keys and values and oversized annotations
 * (ValidateObjectMeta), and request bodies nested deeper than it will read. Walks are iterative,
 * so no body can exhaust the stack, and each refusal names the field path.
 */

/**
 * Deeper bodies are refused (400) before any recursive code sees them. The real server reads up
 * to 10,000 levels (apimachinery's util/json maxDepth) and then prunes what its types lack; no
 * served kind nests past ~20, and the YAML parser this server uses overflows its stack near 1,000.
 */
export const MAX_BODY_DEPTH = 512;

/** Nesting depth of a decoded JSON value (a scalar is 0), without recursion; stops past `limit`. */
export function depthOf(value: unknown, limit = Number.POSITIVE_INFINITY): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length > 0) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max > limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v))
      if (typeof child === 'object' && child !== null) stack.push([child, depth]);
  }
  return max;
}

export function tooDeep(): ApiError {
  return errors.badRequest(`the request body is nested more than ${MAX_BODY_DEPTH} levels deep`);
}

// ---------------------------------------------------------------- JSON types (the decoder)

interface TypeMismatch {
  /** Kubernetes field path with indices: `spec.taints[0].key`. */
  field: string;
  /** Go's message: `json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool`. */
  message: string;
  value: unknown;
}

function jsonTypeOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'number' : `number ${v}`;
  return typeof v;
}

function goTypeOf(t: FieldType): string {
  if (typeof t === 'string')
    return (
      {
        string: 'string',
        bool: 'bool',
        int: 'int64',
        intOrString: 'intstr.IntOrString',
        quantity: 'resource.Quantity',
        time: 'v1.Time',
        any: 'interface {}',
      } as const
    )[t];
  if ('map' in t) return `map[string]${goTypeOf(t.map)}`;
  if ('list' in t) return `[]${goTypeOf(t.list)}`;
  return `v1.${t.go}`;
}

/** What Go's time.Parse(time.RFC3339) reads: years 0000-9999, optional fraction, Z or an offset. */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** A JSON number Go decodes into an int64: integral and in range (1e300 is integral in JavaScript). */
const isInt64 = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 63;

function fits(t: FieldType, v: unknown): boolean {
  if (v === null) return true; // null decodes to the zero value
  if (typeof t === 'string') {
    switch (t) {
      case 'string':
        return typeof v === 'string';
      case 'bool':
        return typeof v === 'boolean';
      case 'int':
        return isInt64(v);
      case 'intOrString':
        return typeof v === 'string' || isInt64(v);
      case 'quantity':
        return typeof v === 'string' || typeof v === 'number';
      case 'time':
        return typeof v === 'string' && (v === '' || RFC3339.test(v));
      default:
        return true;
    }
  }
  if ('list' in t) return Array.isArray(v);
  return typeof v === 'object' && !Array.isArray(v);
}

/** The first value whose JSON type the Go struct would refuse, or undefined. Iterative. */
export function typeMismatch(obj: KubeObject): TypeMismatch | undefined {
  const kind = KINDS[obj.kind];
  const root: Struct = {
    go: obj.kind,
    fields: { ...(kind?.fields ?? {}), metadata: ObjectMeta, apiVersion: 'string', kind: 'string' },
  };
  // [value, type, field path with indices, Go path without, innermost Go struct name]
  const stack: [unknown, FieldType, string, string, string][] = [[obj, root, '', '', obj.kind]];
  while (stack.length > 0) {
    const [v, t, path, goPath, inStruct] = stack.pop()!;
    if (!fits(t, v)) {
      if (t === 'time' && typeof v === 'string')
        return {
          field: path,
          value: v,
          message:
            `parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05Z07:00": cannot ` +
            `parse ${JSON.stringify(v)} as "2006"`,
        };
      return {
        field: path,
        value: v,
        message:
          `json: cannot unmarshal ${jsonTypeOf(v)} into Go struct field ${inStruct}.${goPath} of ` +
          `type ${goTypeOf(t)}`,
      };
    }
    if (v === null || typeof t === 'string') continue;
    if ('map' in t) {
      for (const [k, x] of Object.entries(v as object)) stack.push([x, t.map, `${path}[${k}]`, goPath, inStruct]);
    } else if ('list' in t) {
      (v as unknown[]).forEach((x, i) => stack.push([x, t.list, `${path}[${i}]`, goPath, inStruct]));
    } else {
      for (const [k, ft] of Object.entries(t.fields)) {
        const x = (v as Record<string, unknown>)[k];
        if (x !== undefined) stack.push([x, ft, path ? `${path}.${k}` : k, goPath ? `${goPath}.${k}` : k, t.go]);
      }
    }
  }
  return undefined;
}

// ---------------------------------------------------------------- ObjectMeta (apimachinery validation)

const NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const NAME_PART_MSG =
  "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric " +
  "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is " +
  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and " +
  "end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_MSG =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with " +
  "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is " +
  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
export const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
export const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and " +
  "end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation " +
  "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
/** TotalAnnotationSizeLimitB: keys and values of all annotations together. */
export const MAX_ANNOTATIONS_BYTES = 256 * 1024;

const quote = (v: string) => JSON.stringify(v.length > 256 ? `${v.slice(0, 256)}...` : v);
const invalidCause = (field: string, value: string, why: string): Cause => ({
  reason: 'FieldValueInvalid',
  message: `Invalid value: ${quote(value)}: ${why}`,
  field,
});

/** IsQualifiedName: `[prefix/]name`; the reasons it is not, in the real wording. */
export function qualifiedNameErrors(key: string): string[] {
  const parts = key.split('/');
  let name: string;
  const out: string[] = [];
  if (parts.length === 1) name = parts[0]!;
  else if (parts.length === 2) {
    const prefix = parts[0]!;
    name = parts[1]!;
    if (prefix.length === 0) out.push('prefix part must be non-empty');
    else if (prefix.length > 253) out.push('prefix part must be no more than 253 characters');
    else if (!DNS1123_SUBDOMAIN.test(prefix)) out.push(`prefix part ${SUBDOMAIN_MSG}`);
  } else {
    return [
      `a qualified name ${NAME_PART_MSG.slice('name part '.length)} with an optional DNS subdomain prefix and '/' ` +
        `(e.g. 'example.com/MyName')`,
    ];
  }
  if (name.length === 0) out.push('name part must be non-empty');
  else if (name.length > 63) out.push('name part must be no more than 63 characters');
  if (name.length > 0 && !NAME_PART.test(name)) out.push(NAME_PART_MSG);
  return out;
}

function metaCauses(r: ResourceDef, meta: Record<string, unknown>, creating: boolean): Cause[] {
  const causes: Cause[] = [];
  const name = meta.name;
  if (creating && typeof name === 'string' && name !== '') {
    const label = r.plural === 'namespaces';
    const max = label ? 63 : 253;
    if (name.length > max) causes.push(invalidCause('metadata.name', name, `must be no more than ${max} characters`));
    else if (!(label ? DNS1123_LABEL : DNS1123_SUBDOMAIN).test(name))
      causes.push(invalidCause('metadata.name', name, label ? LABEL_MSG : SUBDOMAIN_MSG));
  }
  for (const [k, v] of Object.entries((meta.labels ?? {}) as Record<string, string>)) {
    for (const why of qualifiedNameErrors(k)) causes.push(invalidCause('metadata.labels', k, why));
    if (typeof v !== 'string') continue;
    if (v.length > 63) causes.push(invalidCause('metadata.labels', v, 'must be no more than 63 characters'));
    if (!LABEL_VALUE.test(v)) causes.push(invalidCause('metadata.labels', v, LABEL_VALUE_MSG));
  }
  let bytes = 0;
  for (const [k, v] of Object.entries((meta.annotations ?? {}) as Record<string, string>)) {
    for (const why of qualifiedNameErrors(k.toLowerCase())) causes.push(invalidCause('metadata.annotations', k, why));
    bytes += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  }
  if (bytes > MAX_ANNOTATIONS_BYTES)
    causes.push({
      reason: 'FieldValueTooLong',
      message: `Too long: must have at most ${MAX_ANNOTATIONS_BYTES} bytes`,
      field: 'metadata.annotations',
    });
  return causes;
}

export type WriteVerb = 'create' | 'update' | 'patch';

/**
 * Throws what the real server answers for an object it cannot store: a type the decoder refuses
 * (POST/PUT: 400 "cannot be handled as"; PATCH: 422 on the patched object), then metadata that
 * fails validation (422 Invalid with every cause).
 */
export function checkObject(r: ResourceDef, obj: KubeObject, verb: WriteVerb): void {
  const name = typeof obj.metadata?.name === 'string' ? obj.metadata.name : '';
  const wrong = typeMismatch(obj);
  if (wrong) {
    const cause: Cause = {
      reason: 'FieldValueInvalid',
      message: `Invalid value: ${quote(JSON.stringify(wrong.value) ?? 'null')}: ${wrong.message}`,
      field: wrong.field,
    };
    if (verb === 'patch') throw errors.invalidCauses(r, name, [cause]);
    throw failure(
      400,
      'BadRequest',
      `${r.kind} in version "${r.version}" cannot be handled as a ${r.kind}: ${wrong.message}`,
      { causes: [cause] },
    );
  }
  const causes = metaCauses(r, obj.metadata ?? {}, verb === 'create');
  if (causes.length > 0) throw errors.invalidCauses(r, name, causes);
}

// ---------------------------------------------------------------- request bodies beside objects

export interface DeleteOptionsBody {
  gracePeriodSeconds?: number;
  preconditions?: { uid?: string; resourceVersion?: string };
  dryRun: boolean;
}

const DeleteOptionsType: Struct = {
  go: 'DeleteOptions',
  fields: {
    kind: 'string',
    apiVersion: 'string',
    gracePeriodSeconds: 'int',
    preconditions: { go: 'Preconditions', fields: { uid: 'string', resourceVersion: 'string' } },
    orphanDependents: 'bool',
    propagationPolicy: 'string',
    dryRun: { list: 'string' },
  },
};

/** A DeleteOptions body (DELETE, or an Eviction's deleteOptions): 400 when a field has the wrong type. */
export function deleteOptions(body: unknown, where = 'DeleteOptions'): DeleteOptionsBody {
  if (body === undefined || body === null) return { dryRun: false };
  if (typeof body !== 'object' || Array.isArray(body))
    throw errors.badRequest(`json: cannot unmarshal ${jsonTypeOf(body)} into Go value of type v1.DeleteOptions`);
  const probe = checkStruct(body, DeleteOptionsType);
  if (probe) throw errors.badRequest(`${where}: ${probe}`);
  const b = body as {
    gracePeriodSeconds?: number;
    preconditions?: { uid?: string; resourceVersion?: string };
    dryRun?: unknown;
  };
  return {
    ...(typeof b.gracePeriodSeconds === 'number' ? { gracePeriodSeconds: b.gracePeriodSeconds } : {}),
    ...(b.preconditions ? { preconditions: b.preconditions } : {}),
    dryRun: dryRunOf(b.dryRun, 'DeleteOptions', 'dryRun'),
  };
}

/** First type error of a flat-ish struct (DeleteOptions), in Go's words. */
function checkStruct(v: unknown, t: Struct): string | undefined {
  const stack: [unknown, FieldType, string, string][] = [[v, t, '', t.go]];
  while (stack.length > 0) {
    const [x, ft, path, inStruct] = stack.pop()!;
    if (!fits(ft, x))
      return `json: cannot unmarshal ${jsonTypeOf(x)} into Go struct field ${inStruct}.${path} of type ${goTypeOf(ft)}`;
    if (x === null || typeof ft === 'string') continue;
    if ('list' in ft) (x as unknown[]).forEach((y) => stack.push([y, ft.list, path, inStruct]));
    else if (!('map' in ft))
      for (const [k, st] of Object.entries(ft.fields))
        if ((x as Record<string, unknown>)[k] !== undefined)
          stack.push([(x as Record<string, unknown>)[k], st, path ? `${path}.${k}` : k, ft.go]);
  }
  return undefined;
}

const EVICTION_VERSIONS = ['policy/v1', 'policy/v1beta1'];

/**
 * POST pods/{name}/eviction: the body must be an Eviction (policy/v1 or v1beta1; kind and
 * apiVersion may be left out, the endpoint implies them) naming the pod in the URL.
 */
export function checkEviction(ns: string, name: string, body: unknown): DeleteOptionsBody {
  if (body === undefined || body === null) throw errors.badRequest('the body of the request must be an Eviction');
  if (typeof body !== 'object' || Array.isArray(body))
    throw errors.badRequest(`json: cannot unmarshal ${jsonTypeOf(body)} into Go value of type v1.Eviction`);
  const b = body as { apiVersion?: unknown; kind?: unknown; metadata?: unknown; deleteOptions?: unknown };
  if (b.apiVersion !== undefined && (typeof b.apiVersion !== 'string' || !EVICTION_VERSIONS.includes(b.apiVersion))) {
    throw errors.badRequest(
      `the API version in the data (${String(b.apiVersion)}) does not match the expected API version (policy/v1)`,
    );
  }
  if (b.kind !== undefined && b.kind !== 'Eviction')
    throw errors.badRequest(`the kind in the data (${String(b.kind)}) does not match the expected kind (Eviction)`);
  if (
    b.metadata !== undefined &&
    (typeof b.metadata !== 'object' || b.metadata === null || Array.isArray(b.metadata))
  ) {
    throw errors.badRequest(
      `json: cannot unmarshal ${jsonTypeOf(b.metadata)} into Go struct field Eviction.metadata of type v1.ObjectMeta`,
    );
  }
  const meta = (b.metadata ?? {}) as { name?: unknown; namespace?: unknown };
  if (meta.name !== name) throw errors.badRequest('name in URL does not match name in Eviction object');
  if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== ns) {
    throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  return deleteOptions(b.deleteOptions, 'Eviction.deleteOptions');
}
