/**
 * The four PATCH bodies the real API server accepts. Each function returns a new document and
 * never touches its input, so a failed patch leaves the stored object as it was.
 *
 * Work stays linear in the sizes of the document and the patch, whatever the input: the document
 * is copied once and merged in place (copying each level's subtree again made one 500-deep merge
 * into a 3 MB object take 19 s), list items are found by key through a map, JSON patches hold at
 * most 10,000 operations (the real server's limit) and may copy at most MAX_COPY_BYTES in total
 * (each `copy` of the root doubled the document), and `test` compares without serializing.
 * Depth is bounded before a body gets here (server.ts refuses more than 512 levels). JSON patch is in
 * json-patch.ts, what all share in patch-values.ts.
 */
import { applyJsonPatch } from './json-patch.ts';
import { clone, isObj, own, PatchError, put, type J, type Obj } from './patch-values.ts';

export { applyJsonPatch } from './json-patch.ts';
export { PatchError, PatchTooLarge, MAX_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, sameValue } from './patch-values.ts';

// ---------------------------------------------------------------- RFC 7386 JSON merge patch
export function applyMergePatch(doc: J, patch: J): J {
  if (!isObj(patch)) return clone(patch);
  return mergeInto(isObj(doc) ? clone(doc) : {}, patch);
}

/** Merges `patch` into `target`, which this call owns (a copy), in place. */
function mergeInto(target: Obj, patch: Obj): Obj {
  for (const [k, v] of Object.entries(patch)) {
    const cur = own(target, k);
    if (v === null) delete target[k];
    else if (isObj(v)) put(target, k, mergeInto(isObj(cur) ? cur : {}, v));
    else put(target, k, clone(v));
  }
  return target;
}

// ---------------------------------------------------------------- strategic merge patch
/**
 * Lists the Go types mark `patchStrategy:"merge"`, keyed by field name with their merge key.
 * Everything else (node `taints`, pod `tolerations`, ...) is replaced whole, exactly as in the
 * real server: NodeSpec.Taints has no patch strategy, which is why `kubectl taint k-` works by
 * sending the full remaining list.
 */
export const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  ephemeralContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
  conditions: 'type',
  ownerReferences: 'uid',
  imagePullSecrets: 'name',
  addresses: 'type',
};
/** Primitive lists the Go types merge as sets. */
export const MERGE_PRIMITIVES = new Set(['finalizers']);

/** `base` is owned by the caller (part of the copy being patched). */
function mergeList(field: string, base: J[], patch: J[]): J[] {
  const key = Object.hasOwn(MERGE_KEYS, field) ? MERGE_KEYS[field] : undefined;
  if (!key) {
    if (MERGE_PRIMITIVES.has(field)) {
      const have = new Set(base);
      return [...base, ...patch.filter((p) => !have.has(p) && (have.add(p), true))];
    }
    return clone(patch.filter((p) => !(isObj(p) && '$patch' in p)));
  }
  if (patch.some((p) => isObj(p) && p.$patch === 'replace'))
    return clone(patch.filter((p) => !(isObj(p) && p.$patch === 'replace')));
  // Items by merge key (a map, not a scan per patch item: 500k items must not be quadratic).
  // Deleted slots are left as holes and dropped at the end, so indexes stay valid.
  const out: (J | typeof HOLE)[] = [...base];
  const index = new Map<J, number>();
  out.forEach((o, i) => isObj(o) && !index.has(own(o, key)) && index.set(own(o, key), i));
  for (const item of patch) {
    if (!isObj(item)) continue;
    const at = index.get(own(item, key));
    if (item.$patch === 'delete') {
      if (at !== undefined) {
        out[at] = HOLE;
        index.delete(own(item, key));
      }
      continue;
    }
    if (at !== undefined) out[at] = strategicInto(isObj(out[at]) ? (out[at] as Obj) : {}, item) as J;
    else {
      index.set(own(item, key), out.length);
      out.push(strategicInto({}, item) as J);
    }
  }
  return out.filter((o) => o !== HOLE) as J[];
}

const HOLE = Symbol('deleted');

export function applyStrategicMergePatch(doc: J, patch: J): J {
  if (!isObj(patch)) return clone(patch);
  return strategicInto(isObj(doc) ? clone(doc) : {}, patch);
}

/** Strategic merge of `patch` into `target`, which this call owns, in place; undefined for `$patch: delete`. */
function strategicInto(target: Obj, patch: Obj): J {
  if (patch.$patch === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return clone(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out = target;
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = own(out, field);
      if (Array.isArray(cur) && Array.isArray(v))
        put(
          out,
          field,
          cur.filter((x) => !v.includes(x)),
        );
      continue;
    }
    const cur = own(out, k);
    if (v === null) delete out[k];
    else if (Array.isArray(v)) put(out, k, mergeList(k, Array.isArray(cur) ? cur : [], v));
    else if (isObj(v)) {
      const merged = strategicInto(isObj(cur) ? cur : {}, v);
      if (merged === undefined) delete out[k];
      else put(out, k, merged);
    } else put(out, k, v);
  }
  if (Array.isArray(patch.$retainKeys)) {
    const keep = new Set(patch.$retainKeys);
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }
  return out;
}

export const PATCH_TYPES = {
  json: 'application/json-patch+json',
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** Applies a patch body of the given content type; server-side apply is handled by the caller. */
export function applyPatch(contentType: string, doc: J, patch: J): J {
  switch (contentType) {
    case PATCH_TYPES.json:
      return applyJsonPatch(doc, patch);
    case PATCH_TYPES.merge:
      return applyMergePatch(doc, patch);
    case PATCH_TYPES.strategic:
      return applyStrategicMergePatch(doc, patch);
    default:
      throw new PatchError(`unsupported patch type ${contentType}`);
  }
}
