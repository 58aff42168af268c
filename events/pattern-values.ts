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
import { decimalMicros, isJsonNumber, isJsonObject, Num } from './json-number.ts';

/** A leaf of the event: what sits at the end of a path once objects and arrays are walked. */
export type Leaf = string | Num | boolean | null;
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

const isObject = isJsonObject;
const lower = (s: string): string => s.toLowerCase();

function exactTest(value: unknown): LeafTest {
  if (typeof value === 'string') {
    // An exact string that is an IP address also matches other spellings of that address
    // (`2001:db8::1` and `2001:0db8:0:0:0:0:0:1`), as event-ruler compiles such strings to a range.
    const ip = parseIp(value);
    if (ip) {
      return (v) => {
        if (v === value) return true;
        const other = typeof v === 'string' ? parseIp(v) : undefined;
        return other !== undefined && other.family === ip.family && other.value === ip.value;
      };
    }
    return (v) => v === value;
  }
  if (isJsonNumber(value)) {
    // Matches the same spelling, or the same value when both are in the comparable range.
    const n = new Num(value);
    return (v) => v instanceof Num && n.equals(v);
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

/** Exact millionths of a pattern number used numerically; refused outside AWS's range. */
function micros(n: unknown, op: string): bigint {
  if (!isJsonNumber(n)) return fail(`Value of ${op} must be numeric`);
  const m = decimalMicros(new Num(n).text);
  return typeof m === 'bigint' ? m : fail(m);
}

/** Only number leaves inside the comparable range take part in numeric comparisons. */
const numeric =
  (cmp: (m: bigint) => boolean): LeafTest =>
  (v) =>
    v instanceof Num && v.micros !== undefined && cmp(v.micros);

function numericTest(arg: unknown): LeafTest {
  if (!Array.isArray(arg)) return fail('Value of numeric must be an array.');
  const terms: unknown[] = arg;
  const op0 = terms[0];
  if (typeof op0 !== 'string') return fail(`Invalid member in numeric match: ${describe(op0)}`);
  if (op0 === '=' || op0 === '<' || op0 === '<=') {
    const n = micros(terms[1], op0 === '=' ? 'equals' : op0);
    if (terms.length > 2) fail('Too many elements in numeric expression');
    if (op0 === '=') return numeric((m) => m === n);
    return op0 === '<' ? numeric((m) => m < n) : numeric((m) => m <= n);
  }
  if (op0 !== '>' && op0 !== '>=') return fail(`Unrecognized numeric range operator: ${op0}`);
  const bottom = micros(terms[1], op0);
  const above = op0 === '>' ? (m: bigint) => m > bottom : (m: bigint) => m >= bottom;
  if (terms.length === 2) return numeric(above);
  const op1 = terms[2];
  if (typeof op1 !== 'string') return fail(`Bad value in numeric range: ${describe(op1)}`);
  if (op1 !== '<' && op1 !== '<=') return fail(`Bad numeric range operator: ${op1}`);
  const top = micros(terms[3], op1);
  if (terms.length > 4) fail('Too many terms in numeric range expression');
  if (bottom >= top) fail('Bottom must be less than top');
  const below = op1 === '<' ? (m: bigint) => m < top : (m: bigint) => m <= top;
  return numeric((m) => above(m) && below(m));
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  try {
    return JSON.stringify(v) ?? String(v);
  } catch {
    return typeof v;
  }
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
  const excluding =
    (hit: (s: string) => boolean): LeafTest =>
    (v) =>
      typeof v !== 'string' || !hit(v);
  switch (op) {
    case 'prefix':
    case 'suffix': {
      // AWS refuses { "anything-but": { "prefix": { "equals-ignore-case": ... } } } with this reason.
      if (isObject(value)) fail('Value of anything-but must be an array or single string/number value.');
      const list = stringList(value, 'prefix/suffix match pattern must be a string');
      if (list.includes('')) fail('Null prefix/suffix not allowed');
      return op === 'prefix'
        ? excluding((s) => list.some((p) => s.startsWith(p)))
        : excluding((s) => list.some((p) => s.endsWith(p)));
    }
    case 'equals-ignore-case': {
      const list = stringList(
        value,
        'Inside anything-but/equals-ignore-case list, number|start|null|boolean is not supported.',
      );
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
  const list: unknown[] = Array.isArray(arg) ? arg : [arg];
  if (!Array.isArray(arg) && typeof arg !== 'string' && !isJsonNumber(arg)) {
    fail('Value of anything-but must be an array or single string/number value.');
  }
  if (list.length === 0) fail('Empty arrays are not allowed');
  const strings = new Set<string>();
  const numbers = new Set<bigint>();
  for (const x of list) {
    if (typeof x === 'string') strings.add(x);
    else if (isJsonNumber(x)) numbers.add(micros(x, 'anything-but'));
    else fail('Inside anything but list, start|null|boolean is not supported.');
  }
  if (strings.size > 0 && numbers.size > 0) {
    fail('Inside anything but list, either all values are number or string, mixed type is not supported');
  }
  // Excluded numbers compare by exact value; a number outside the comparable range equals none of them.
  return (v) => {
    if (typeof v === 'string') return !strings.has(v);
    if (v instanceof Num) return v.micros === undefined || !numbers.has(v.micros);
    return true;
  };
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
