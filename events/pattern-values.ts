/**
 * Compiles one element of a pattern's value list (`"x"`, `3`, `null`, `{ "prefix": "a" }`, ...)
 * into a test over one event leaf value, refusing what EventBridge refuses.
 *
 * Type rules (what AWS and event-ruler do): strings, numbers, booleans and null never match each
 * other; numbers compare by value; `anything-but` in every form matches a leaf of another type,
 * and null, because it only excludes what it names.
 */
import { InvalidPatternError } from './pattern-error.ts';
import { inCidr, parseCidr, parseIp } from './cidr.ts';
import { matchWildcard, parseWildcard, type Wildcard } from './wildcard.ts';

/** A leaf of the event: what sits at the end of a path once objects and arrays are walked. */
export type Leaf = string | number | boolean | null;
export type LeafTest = (value: Leaf) => boolean;

/** `exists: false` is not a test over a leaf but a demand that there be none. */
export const ABSENT = Symbol('absent');

/** Compile context: wildcard stars are summed per field for the complexity limit. */
export interface ValueContext {
  addStars(stars: number): void;
}

const fail = (reason: string): never => {
  throw new InvalidPatternError(reason);
};

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const lower = (s: string): string => s.toLowerCase();

function exactTest(value: unknown): LeafTest {
  if (typeof value === 'string') {
    // An exact string that is an IP address also matches other spellings of that address
    // (`2001:db8::1` and `2001:0db8:0:0:0:0:0:1`), as event-ruler compiles such strings to a range.
    const ip = parseIp(value);
    if (ip) return (v) => v === value || (typeof v === 'string' && parseIp(v)?.value === ip.value && parseIp(v)?.family === ip.family);
    return (v) => v === value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail('Match value must be String, number, true, false, or null');
    return (v) => typeof v === 'number' && v === value;
  }
  if (value === null || typeof value === 'boolean') return (v) => v === value;
  return fail('Match value must be String, number, true, false, or null');
}

function wildcardOf(text: unknown, ctx: ValueContext): Wildcard {
  if (typeof text !== 'string') fail('wildcard match pattern must be a string');
  let w: Wildcard;
  try {
    w = parseWildcard(text as string);
  } catch (err) {
    return fail((err as Error).message);
  }
  ctx.addStars(w.stars);
  return w;
}

/** `prefix` / `suffix`, plain or `{ "equals-ignore-case": "..." }`. Only strings match. */
function affixTest(kind: 'prefix' | 'suffix', arg: unknown): LeafTest {
  const at = kind === 'prefix' ? (v: string, a: string) => v.startsWith(a) : (v: string, a: string) => v.endsWith(a);
  if (typeof arg === 'string') return (v) => typeof v === 'string' && at(v, arg);
  if (isObject(arg)) {
    const keys = Object.keys(arg);
    const folded = arg['equals-ignore-case'];
    if (keys.length === 1 && typeof folded === 'string') {
      const want = lower(folded);
      return (v) => typeof v === 'string' && at(lower(v), want);
    }
  }
  return fail(`${kind} match pattern must be a string`);
}

function numericTest(arg: unknown): LeafTest {
  if (!Array.isArray(arg)) return fail('Value of numeric must be an array.');
  const terms: unknown[] = arg;
  const num = (i: number, op: string): number => {
    const n = terms[i];
    if (typeof n !== 'number' || !Number.isFinite(n)) fail(`Value of ${op} must be numeric`);
    return n as number;
  };
  const op0 = terms[0];
  if (typeof op0 !== 'string') return fail(`Invalid member in numeric match: ${JSON.stringify(op0) ?? 'nothing'}`);
  if (op0 === '=' || op0 === '<' || op0 === '<=') {
    const n = num(1, op0 === '=' ? 'equals' : op0);
    if (terms.length > 2) fail('Too many elements in numeric expression');
    if (op0 === '=') return (v) => typeof v === 'number' && v === n;
    return op0 === '<' ? (v) => typeof v === 'number' && v < n : (v) => typeof v === 'number' && v <= n;
  }
  if (op0 !== '>' && op0 !== '>=') return fail(`Unrecognized numeric range operator: ${op0}`);
  const bottom = num(1, op0);
  const above = op0 === '>' ? (v: number) => v > bottom : (v: number) => v >= bottom;
  if (terms.length === 2) return (v) => typeof v === 'number' && above(v);
  const op1 = terms[2];
  if (typeof op1 !== 'string') return fail(`Bad value in numeric range: ${JSON.stringify(op1) ?? 'nothing'}`);
  if (op1 !== '<' && op1 !== '<=') return fail(`Bad numeric range operator: ${op1}`);
  const top = num(3, op1);
  if (terms.length > 4) fail('Too many terms in numeric range expression');
  if (bottom >= top) fail('Bottom must be less than top');
  const below = op1 === '<' ? (v: number) => v < top : (v: number) => v <= top;
  return (v) => typeof v === 'number' && above(v) && below(v);
}

/** Strings of an anything-but sub-operator: one string or a non-empty list of them. */
function stringList(arg: unknown, reason: string): string[] {
  const list: unknown[] = Array.isArray(arg) ? arg : [arg];
  if (list.length === 0) fail('Empty arrays are not allowed');
  for (const s of list) if (typeof s !== 'string') fail(reason);
  return list as string[];
}

function anythingButObject(arg: Record<string, unknown>, ctx: ValueContext): LeafTest {
  const keys = Object.keys(arg);
  if (keys.length === 0) fail('Anything-But expression name not found');
  if (keys.length > 1) fail('Only one key allowed in match expression');
  const op = keys[0] as string;
  const value = arg[op];
  // Excluding by a string operator: every non-string leaf (numbers, booleans, null) is "anything but".
  const excluding = (hit: (s: string) => boolean): LeafTest => (v) => typeof v !== 'string' || !hit(v);
  switch (op) {
    case 'prefix':
    case 'suffix': {
      // AWS refuses { "anything-but": { "prefix": { "equals-ignore-case": ... } } } with this reason.
      if (isObject(value)) fail('Value of anything-but must be an array or single string/number value.');
      const list = stringList(value, 'prefix/suffix match pattern must be a string');
      if (list.includes('')) fail('Null prefix/suffix not allowed');
      return op === 'prefix' ? excluding((s) => list.some((p) => s.startsWith(p))) : excluding((s) => list.some((p) => s.endsWith(p)));
    }
    case 'equals-ignore-case': {
      const list = stringList(value, 'Inside anything-but/equals-ignore-case list, number|start|null|boolean is not supported.');
      const folded = new Set(list.map(lower));
      return excluding((s) => folded.has(lower(s)));
    }
    case 'wildcard': {
      const list = Array.isArray(value) ? value : [value];
      if (list.length === 0) fail('Empty arrays are not allowed');
      const ws = list.map((w) => wildcardOf(w, ctx));
      return excluding((s) => ws.some((w) => matchWildcard(w, s)));
    }
    default:
      return fail(`Unsupported anything-but pattern: ${op}`);
  }
}

function anythingButTest(arg: unknown, ctx: ValueContext): LeafTest {
  if (isObject(arg)) return anythingButObject(arg, ctx);
  if (typeof arg === 'string') return (v) => v !== arg;
  if (typeof arg === 'number' && Number.isFinite(arg)) return (v) => v !== arg;
  if (!Array.isArray(arg)) return fail('Value of anything-but must be an array or single string/number value.');
  const list: unknown[] = arg;
  if (list.length === 0) fail('Empty arrays are not allowed');
  for (const x of list) {
    if (typeof x !== 'string' && !(typeof x === 'number' && Number.isFinite(x))) {
      fail('Inside anything but list, start|null|boolean is not supported.');
    }
  }
  const kinds = new Set(list.map((x) => typeof x));
  if (kinds.size > 1) fail('Inside anything but list, either all values are number or string, mixed type is not supported');
  const excluded = new Set(list as Array<string | number>);
  // A Set compares numbers by value (0 and -0 alike) and never confuses "1" with 1.
  return (v) => !(typeof v === 'string' || typeof v === 'number') || !excluded.has(v);
}

/** Compiles one value-list element. Returns ABSENT for `{ "exists": false }`. */
export function compileValue(element: unknown, ctx: ValueContext): LeafTest | typeof ABSENT {
  if (Array.isArray(element)) return fail('Match value must be String, number, true, false, or null');
  if (!isObject(element)) return exactTest(element);
  const keys = Object.keys(element);
  if (keys.length === 0) fail('Match expression name not found');
  if (keys.length > 1) fail('Only one key allowed in match expression');
  const op = keys[0] as string;
  const arg = element[op];
  switch (op) {
    case 'prefix':
    case 'suffix':
      return affixTest(op, arg);
    case 'equals-ignore-case': {
      if (typeof arg !== 'string') fail('equals-ignore-case match pattern must be a string');
      const want = lower(arg as string);
      return (v) => typeof v === 'string' && lower(v) === want;
    }
    case 'wildcard': {
      const w = wildcardOf(arg, ctx);
      return (v) => typeof v === 'string' && matchWildcard(w, v);
    }
    case 'numeric':
      return numericTest(arg);
    case 'anything-but':
      return anythingButTest(arg, ctx);
    case 'exists':
      if (arg === true) return () => true;
      if (arg === false) return ABSENT;
      return fail('exists match pattern must be either true or false.');
    case 'cidr': {
      // AWS's reason for a non-string CIDR really does say "prefix".
      if (typeof arg !== 'string') fail('prefix match pattern must be a string');
      try {
        const range = parseCidr(arg as string);
        return (v) => typeof v === 'string' && inCidr(range, v);
      } catch (err) {
        return fail((err as Error).message);
      }
    }
    default:
      return fail(`Unrecognized match type ${op}`);
  }
}
