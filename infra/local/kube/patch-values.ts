/**
 * What every patch type (patch.ts, json-patch.ts) builds on: own-property access that no `__proto__` key
 * can abuse, copies, the two refusals and the real server's size limits, and structural equality.
 */
export type J = unknown;
export type Obj = Record<string, J>;

export const isObj = (v: J): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/**
 * Own properties only, read and written as plain data: a key `__proto__` (valid JSON) must never
 * reach Object.prototype through `obj[key]` (prototype pollution of the whole server) nor change
 * an object's prototype. The real server treats it as an ordinary (unknown) field.
 */
export const own = (o: Obj, k: string): J => (Object.hasOwn(o, k) ? o[k] : undefined);
export const put = (o: Obj, k: string, v: J): void =>
  void Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
export const clone = <T>(v: T): T => (v === undefined ? v : (JSON.parse(JSON.stringify(v)) as T));

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
