/**
 * The four PATCH bodies the real API server accepts. Each function returns a new document and
 * never touches its input, so a failed patch leaves the stored object as it was.
 *
 * Work stays linear in the sizes of the document and the patch, whatever the input: the document
 * is copied once and merged in place (copying each level's subtree again made one 500-deep merge
 * into a 3 MB object take 19 s), list items are found by key through a map, JSON patches hold at
 * most 10,000 operations (the real server's limit) and may copy at most MAX_COPY_BYTES in total
 * (each `copy` of the root doubled the document), and `test` compares without serializing.
 * Depth is bounded before a body gets here (server.ts refuses more than 512 levels).
 */
type J = unknown;
type Obj = Record<string, J>;

const isObj = (v: J): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/**
 * Own properties only, read and written as plain data: a key `__proto__` (valid JSON) must never
 * reach Object.prototype through `obj[key]` (prototype pollution of the whole server) nor change
 * an object's prototype. The real server treats it as an ordinary (unknown) field.
 */
const own = (o: Obj, k: string): J => (Object.hasOwn(o, k) ? o[k] : undefined);
const put = (o: Obj, k: string, v: J): void =>
  void Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

export class PatchError extends Error {
  override name = 'PatchError';
}

/** The real server's maxJSONPatchOperations; more is a 413. */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;
/** Accumulated size of what `copy` operations may duplicate (evanphx/json-patch's AccumulatedCopySizeLimit). */
export const MAX_COPY_BYTES = 8 * 1024 * 1024;

export class PatchTooLarge extends Error {
  override name = 'PatchTooLarge';
}

/** Structural equality, iterative, stopping at the first difference (cheap against a large document). */
export function sameValue(a: J, b: J): boolean {
  const stack: [J, J][] = [[a, b]];
  while (stack.length > 0) {
    const [x, y] = stack.pop()!;
    if (x === y) continue;
    if (
      typeof x !== 'object' ||
      typeof y !== 'object' ||
      x === null ||
      y === null ||
      Array.isArray(x) !== Array.isArray(y)
    )
      return false;
    if (Array.isArray(x)) {
      const ys = y as J[];
      if (x.length !== ys.length) return false;
      for (let i = 0; i < x.length; i++) stack.push([x[i], ys[i]]);
    } else {
      const xk = Object.keys(x);
      const yo = y as Obj;
      if (xk.length !== Object.keys(yo).length) return false;
      for (const k of xk) {
        if (!Object.hasOwn(yo, k)) return false;
        stack.push([(x as Obj)[k], yo[k]]);
      }
    }
  }
  return true;
}

// ---------------------------------------------------------------- RFC 6902 JSON patch
interface Op {
  op: string;
  path: string;
  from?: string;
  value?: J;
}

function pointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer "${path}"`);
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: J, tokens: string[], path: string): { parent: Obj | J[]; last: string } {
  let cur: J = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObj(cur)) cur = own(cur, t);
    else cur = undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  if (!Array.isArray(cur) && !isObj(cur)) throw new PatchError(`doc is missing path: "${path}"`);
  return { parent: cur, last: tokens[tokens.length - 1]! };
}

function getAt(doc: J, path: string): J {
  let cur: J = doc;
  for (const t of pointer(path)) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObj(cur) ? own(cur, t) : undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  return cur;
}

function index(arr: J[], t: string, path: string, forAdd: boolean): number {
  if (forAdd && t === '-') return arr.length;
  const i = Number(t);
  if (!/^\d+$/.test(t) || i > arr.length || (!forAdd && i === arr.length))
    throw new PatchError(`invalid array index in "${path}"`);
  return i;
}

function addAt(doc: J, path: string, value: J): J {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, last, path, true), 0, value);
  else put(parent, last, value);
  return doc;
}

function removeAt(doc: J, path: string): J {
  const tokens = pointer(path);
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, last, path, false), 1);
  else {
    if (!Object.hasOwn(parent, last)) throw new PatchError(`unable to remove nonexistent key: ${last}: missing value`);
    delete parent[last];
  }
  return doc;
}

export function applyJsonPatch(doc: J, ops: J): J {
  if (!Array.isArray(ops)) throw new PatchError('json patch must be an array of operations');
  if (ops.length > MAX_JSON_PATCH_OPERATIONS)
    throw new PatchTooLarge(
      `The allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  let out = clone(doc);
  let copied = 0;
  for (const raw of ops as Op[]) {
    if (!isObj(raw) || typeof raw.path !== 'string') throw new PatchError('json patch operation needs "op" and "path"');
    switch (raw.op) {
      case 'add':
        out = addAt(out, raw.path, clone(raw.value));
        break;
      case 'remove':
        out = removeAt(out, raw.path);
        break;
      case 'replace':
        getAt(out, raw.path);
        out = addAt(removeAt(out, raw.path), raw.path, clone(raw.value));
        break;
      case 'move': {
        const v = getAt(out, raw.from ?? '');
        out = addAt(removeAt(out, raw.from ?? ''), raw.path, v);
        break;
      }
      case 'copy': {
        const text = JSON.stringify(getAt(out, raw.from ?? ''));
        copied += text.length;
        if (copied > MAX_COPY_BYTES)
          throw new PatchError(
            `Unable to copy, would exceed the accumulated copy size limit of ${MAX_COPY_BYTES} bytes`,
          );
        out = addAt(out, raw.path, JSON.parse(text) as J);
        break;
      }
      case 'test':
        if (!sameValue(getAt(out, raw.path), raw.value))
          throw new PatchError(`testing value ${raw.path} failed: test failed`);
        break;
      default:
        throw new PatchError(`Unexpected kind: ${String(raw.op)}`);
    }
  }
  return out;
}

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
