import { invalidField } from './admission.ts';
import { errors } from './errors.ts';
import { normalizeQuantities } from './normalize.ts';
import type { ResourceDef } from './resources.ts';
import type { KubeObject, Pod } from './types.ts';
import { checkObject } from './validation.ts';

export type UpdateVerb = 'update' | 'patch';

export interface WriteOptions {
  dryRun?: boolean;
  subresource?: string;
}

/**
 * What PUT and PATCH make of the client's object before it is stored, as the real update handler does:
 * resourceVersion precondition (409), name and identity kept from the stored object, the object's
 * validation, status owned by the status subresource (and spec by the main resource), `generation`
 * bumped when the spec changes, and a pod's binding immutable. Throws the real refusal; else the object
 * to store.
 */
export function mergeUpdate(
  r: ResourceDef,
  current: KubeObject,
  next: KubeObject,
  opts: WriteOptions,
  verb: UpdateVerb,
): KubeObject {
  const name = current.metadata.name;
  if (
    typeof next !== 'object' ||
    next === null ||
    typeof next.metadata !== 'object' ||
    next.metadata === null ||
    Array.isArray(next.metadata)
  )
    throw errors.badRequest('the object has no metadata');
  const rv = next.metadata.resourceVersion;
  if (rv !== undefined && rv !== '' && rv !== current.metadata.resourceVersion) throw errors.conflict(r, name);
  if (next.metadata.name !== undefined && next.metadata.name !== name)
    throw errors.invalid(r, name, 'metadata.name', 'field is immutable');
  let merged: KubeObject = {
    ...next,
    apiVersion: current.apiVersion,
    kind: current.kind,
    metadata: {
      ...next.metadata,
      name,
      ...(current.metadata.namespace !== undefined ? { namespace: current.metadata.namespace } : {}),
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      resourceVersion: current.metadata.resourceVersion,
      ...(current.metadata.deletionTimestamp
        ? {
            deletionTimestamp: current.metadata.deletionTimestamp,
            deletionGracePeriodSeconds: current.metadata.deletionGracePeriodSeconds,
          }
        : {}),
    },
  };
  if (merged.metadata.deletionTimestamp === undefined) delete merged.metadata.deletionTimestamp;
  checkObject(r, merged, verb);
  const bad = normalizeQuantities(merged);
  if (bad) throw errors.invalid(r, name, bad, 'Invalid value: must be a quantity such as 500m, 16Gi or 8');
  const wrong = invalidField(merged);
  if (wrong) throw errors.invalid(r, name, ...wrong);
  if (r.hasStatus) {
    if (opts.subresource === 'status')
      merged = {
        ...current,
        metadata: { ...current.metadata, labels: merged.metadata.labels, annotations: merged.metadata.annotations },
        status: merged.status,
      };
    else if (current.status !== undefined) merged.status = current.status;
    else delete merged.status;
  }
  if (JSON.stringify(merged.spec) !== JSON.stringify(current.spec))
    merged.metadata.generation = (current.metadata.generation ?? 1) + 1;
  if (r.plural === 'pods' && (merged as Pod).spec?.nodeName !== (current as Pod).spec.nodeName)
    throw errors.invalid(
      r,
      name,
      'spec',
      'Forbidden: pod updates may not change fields other than `spec.containers[*].image`, ' +
        '`spec.initContainers[*].image`, `spec.activeDeadlineSeconds`, `spec.tolerations` (only additions to ' +
        'existing tolerations) or `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was ' +
        'previously negative)',
    );
  return merged;
}

/** An update that changes nothing but the resourceVersion is a no-op: nothing is stored. */
export const same = (a: KubeObject, b: KubeObject) =>
  JSON.stringify({ ...a, metadata: { ...a.metadata, resourceVersion: '' } }) ===
  JSON.stringify({ ...b, metadata: { ...b.metadata, resourceVersion: '' } });
