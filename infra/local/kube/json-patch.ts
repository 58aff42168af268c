import {
  clone,
  isObj,
  MAX_COPY_BYTES,
  MAX_JSON_PATCH_OPERATIONS,
  own,
  PatchError,
  PatchTooLarge,
  put,
  sameValue,
  type J,
  type Obj,
} from './patch-values.ts';

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
