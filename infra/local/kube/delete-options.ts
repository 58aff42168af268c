import { errors } from './errors.ts';
import { fits, goTypeOf, jsonTypeOf } from './body-types.ts';
import { dryRunOf } from './query.ts';
import type { FieldType, Struct } from './schema.ts';

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
