/**
 * The four PATCH bodies the real API server accepts. Each function returns a new document and
 * never touches its input, so a failed patch leaves the stored object as it was.
 */
type J = unknown;
type Obj = Record<string, J>;

const isObj = (v: J): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

export class PatchError extends Error {
  override name = 'PatchError';
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
  return path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function parentOf(doc: J, tokens: string[], path: string): { parent: Obj | J[]; last: string } {
  let cur: J = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[Number(t)];
    else if (isObj(cur)) cur = cur[t];
    else cur = undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  if (!Array.isArray(cur) && !isObj(cur)) throw new PatchError(`doc is missing path: "${path}"`);
  return { parent: cur, last: tokens[tokens.length - 1]! };
}

function getAt(doc: J, path: string): J {
  let cur: J = doc;
  for (const t of pointer(path)) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObj(cur) ? cur[t] : undefined;
    if (cur === undefined) throw new PatchError(`doc is missing path: "${path}"`);
  }
  return cur;
}

function index(arr: J[], t: string, path: string, forAdd: boolean): number {
  if (forAdd && t === '-') return arr.length;
  const i = Number(t);
  if (!/^\d+$/.test(t) || i > arr.length || (!forAdd && i === arr.length)) throw new PatchError(`invalid array index in "${path}"`);
  return i;
}

function addAt(doc: J, path: string, value: J): J {
  const tokens = pointer(path);
  if (tokens.length === 0) return value;
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, last, path, true), 0, value);
  else parent[last] = value;
  return doc;
}

function removeAt(doc: J, path: string): J {
  const tokens = pointer(path);
  const { parent, last } = parentOf(doc, tokens, path);
  if (Array.isArray(parent)) parent.splice(index(parent, last, path, false), 1);
  else {
    if (!(last in parent)) throw new PatchError(`unable to remove nonexistent key: ${last}: missing value`);
    delete parent[last];
  }
  return doc;
}

export function applyJsonPatch(doc: J, ops: J): J {
  if (!Array.isArray(ops)) throw new PatchError('json patch must be an array of operations');
  let out = clone(doc);
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
      case 'copy':
        out = addAt(out, raw.path, clone(getAt(out, raw.from ?? '')));
        break;
      case 'test':
        if (JSON.stringify(getAt(out, raw.path)) !== JSON.stringify(raw.value)) throw new PatchError(`testing value ${raw.path} failed: test failed`);
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
  const out: Obj = isObj(doc) ? clone(doc) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}

// ---------------------------------------------------------------- strategic merge patch
/**
 * Lists the Go types mark `patchStrategy:"merge"`, keyed by field name with their merge key.
 * Everything else (node `taints`, pod `tolerations`, ...) is replaced whole, exactly as in the
 * real server: NodeSpec.Taints has no patch strategy, which is why `kubectl taint k-` works by
 * sending the full remaining list.
 */
const MERGE_KEYS: Record<string, string> = {
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
const MERGE_PRIMITIVES = new Set(['finalizers']);

function mergeList(field: string, base: J[], patch: J[]): J[] {
  const key = MERGE_KEYS[field];
  if (!key) {
    if (MERGE_PRIMITIVES.has(field)) return [...base, ...patch.filter((p) => !base.includes(p))];
    return clone(patch.filter((p) => !(isObj(p) && '$patch' in p)));
  }
  if (patch.some((p) => isObj(p) && p.$patch === 'replace')) return clone(patch.filter((p) => !(isObj(p) && p.$patch === 'replace')));
  const out = clone(base) as J[];
  for (const item of patch) {
    if (!isObj(item)) continue;
    const at = out.findIndex((o) => isObj(o) && o[key] === item[key]);
    if (item.$patch === 'delete') {
      if (at >= 0) out.splice(at, 1);
      continue;
    }
    if (at >= 0) out[at] = applyStrategicMergePatch(out[at], item);
    else out.push(applyStrategicMergePatch({}, item));
  }
  return out;
}

export function applyStrategicMergePatch(doc: J, patch: J): J {
  if (!isObj(patch)) return clone(patch);
  if (patch.$patch === 'replace') {
    const { $patch: _p, ...rest } = patch;
    return clone(rest);
  }
  if (patch.$patch === 'delete') return undefined;
  const out: Obj = isObj(doc) ? clone(doc) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (k === '$patch' || k === '$retainKeys') continue;
    if (k.startsWith('$setElementOrder/')) continue;
    if (k.startsWith('$deleteFromPrimitiveList/')) {
      const field = k.slice('$deleteFromPrimitiveList/'.length);
      const cur = out[field];
      if (Array.isArray(cur) && Array.isArray(v)) out[field] = cur.filter((x) => !v.includes(x));
      continue;
    }
    if (v === null) delete out[k];
    else if (Array.isArray(v)) out[k] = mergeList(k, Array.isArray(out[k]) ? (out[k] as J[]) : [], v);
    else if (isObj(v)) {
      const merged = applyStrategicMergePatch(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else out[k] = v;
  }
  if (Array.isArray(patch.$retainKeys)) {
    for (const k of Object.keys(out)) if (!patch.$retainKeys.includes(k)) delete out[k];
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
