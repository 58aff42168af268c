import { errors, type ApiError } from './errors.ts';
import { KINDS, ObjectMeta, type FieldType, type Struct } from './schema.ts';
import type { KubeObject } from './types.ts';

/**
 * What the real API server's decoder refuses before anything else looks at a body: bodies nested deeper
 * than it will read, and values of the wrong JSON type for the Go struct they decode into. Walks are
 * iterative, so no body can exhaust the stack, and each refusal names the field path.
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

export interface TypeMismatch {
  /** Kubernetes field path with indices: `spec.taints[0].key`. */
  field: string;
  /** Go's message: `json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool`. */
  message: string;
  value: unknown;
}

export function jsonTypeOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'number' : `number ${v}`;
  return typeof v;
}

export function goTypeOf(t: FieldType): string {
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

export function fits(t: FieldType, v: unknown): boolean {
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
