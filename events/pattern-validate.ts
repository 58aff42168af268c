/**
 * Turns an event pattern into its compiled form: a list of branches (one per `$or` combination),
 * each a list of fields `{ path, tests, absentOk }`. Everything AWS refuses throws
 * InvalidPatternError here, so a compiled pattern never fails later.
 *
 * Paths join keys with `.` (`{"a": {"b": ...}}` and `{"a.b": ...}` are the same field). This is
 * event-ruler's behaviour and AWS shows it (conformance cases `ls-dot_joining_*`, tagged quirk):
 * we follow AWS deliberately, so a rule tested here behaves the same once deployed.
 *
 * `$or` is expanded the way event-ruler expands it: each branch copies the fields seen so far and
 * adds its own; a later field with the same path replaces an earlier one (last one wins, as with
 * duplicate JSON keys).
 */
import { InvalidPatternError } from './pattern-error.ts';
import { ABSENT, compileValue, type LeafTest } from './pattern-values.ts';
import { isJsonObject } from './json-number.ts';

export interface FieldRule {
  /** Dot-joined keys from the pattern root to the value list. */
  path: string;
  /** OR-ed tests; the field matches when one leaf at `path` passes one of them. */
  tests: LeafTest[];
  /** `{ "exists": false }` is in the list: the field also matches when no leaf is at `path`. */
  absentOk: boolean;
}

export type Branch = FieldRule[];

/** Deeper patterns are refused rather than risk the stack; real rules are a few levels deep. */
export const MAX_DEPTH = 64;
/** `$or` combinations are multiplied out; this caps the product. */
export const MAX_BRANCHES = 1024;
/**
 * Unescaped `*` allowed per field, over all its `wildcard` and `anything-but` wildcard patterns.
 * AWS measures the state machine the wildcards build; this star count is a conservative stand-in
 * that agrees with every recorded AWS answer (5 stars pass, `*:*:*:*:*:event-bus/*` with 6 fails).
 */
export const MAX_WILDCARD_STARS = 5;

const OR = '$or';
// Operator names (and a few event-ruler keeps for later) cannot be field names inside `$or`.
const RESERVED_IN_OR = new Set([
  'anything-but',
  'cidr',
  'equals-ignore-case',
  'exactly',
  'exists',
  'numeric',
  'prefix',
  'suffix',
  'wildcard',
  '=',
  '<',
  '<=',
  '>',
  '>=',
  'regex',
  'not-wildcard',
  'not-equals-ignore-case',
]);

type Rules = Map<string, FieldRule>[];

const fail = (reason: string): never => {
  throw new InvalidPatternError(reason);
};

const isObject = isJsonObject;

class Compiler {
  readonly stars = new Map<string, number>();

  object(rules: Rules, prefix: string, obj: Record<string, unknown>, depth: number, inOr: boolean): Rules {
    if (depth > MAX_DEPTH) fail(`Pattern is nested more than ${MAX_DEPTH} levels deep`);
    const keys = Object.keys(obj);
    if (keys.length === 0) fail('Empty objects are not allowed');
    for (const key of keys) {
      const value = obj[key];
      if (key === OR) {
        rules = this.or(rules, prefix, value, depth);
        continue;
      }
      if (inOr && RESERVED_IN_OR.has(key))
        fail(`${key} is Ruler reserved fieldName which cannot be used inside ${OR}.`);
      const path = prefix === '' ? key : `${prefix}.${key}`;
      if (Array.isArray(value)) rules = this.field(rules, path, value);
      else if (isObject(value)) rules = this.object(rules, path, value, depth + 1, inOr);
      else fail(`${JSON.stringify(key)} must be an object or an array`);
    }
    return rules;
  }

  or(rules: Rules, prefix: string, value: unknown, depth: number): Rules {
    if (!Array.isArray(value)) return fail(`It must be an Array followed with ${OR}.`);
    const list: unknown[] = value;
    if (list.length < 2) fail(`There must have at least 2 Objects in ${OR} relationship.`);
    const out: Rules = [];
    for (const branch of list) {
      if (!isObject(branch)) fail(`Only JSON object is allowed in array of ${OR} relationship.`);
      const copies = rules.length === 0 ? [new Map<string, FieldRule>()] : rules.map((r) => new Map(r));
      out.push(...this.object(copies, prefix, branch as Record<string, unknown>, depth + 1, true));
      if (out.length > MAX_BRANCHES) fail(`Too many ${OR} combinations (more than ${MAX_BRANCHES})`);
    }
    return out;
  }

  field(rules: Rules, path: string, values: unknown[]): Rules {
    if (values.length === 0) fail('Empty arrays are not allowed');
    const tests: LeafTest[] = [];
    let absentOk = false;
    const ctx = {
      addStars: (n: number) => {
        const total = (this.stars.get(path) ?? 0) + n;
        this.stars.set(path, total);
        if (total > MAX_WILDCARD_STARS) {
          fail(
            'Rule is too complex - try using fewer wildcard characters or fewer repeating character sequences after ' +
              'a wildcard character',
          );
        }
      },
    };
    for (const element of values) {
      const test = compileValue(element, ctx);
      if (test === ABSENT) absentOk = true;
      else tests.push(test);
    }
    const rule: FieldRule = { path, tests, absentOk };
    if (rules.length === 0) return [new Map([[path, rule]])];
    for (const r of rules) r.set(path, rule);
    return rules;
  }
}

/** Validates and compiles a pattern (a parsed JSON value). Throws InvalidPatternError. */
export function compileBranches(pattern: unknown): Branch[] {
  if (!isObject(pattern)) return fail('Filter is not an object');
  const rules = new Compiler().object([], '', pattern, 0, false);
  return rules.map((r) => [...r.values()]);
}
