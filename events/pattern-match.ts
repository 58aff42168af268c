/**
 * Matching a compiled pattern against an event.
 *
 * The event is first indexed: every leaf (string, number, boolean, null) is listed under its
 * dot-joined path together with the array elements it sits in (`[arrayId, index]` pairs). Objects
 * and arrays themselves are not leaves, so `exists` only sees leaves (as AWS documents) and an empty
 * array contributes nothing: it behaves as an absent field.
 *
 * A branch matches when one leaf per field can be chosen such that all chosen leaves agree on
 * every array they share (array consistency: `{"firstName": ["Anna"], "lastName": ["Jones"]}`
 * must find both in the same element). Flattening without this check gives wrong answers.
 * `exists: false` is checked last, against the final choice: no leaf at that path may be
 * consistent with the chosen leaves.
 */
import type { Branch, FieldRule } from './pattern-validate.ts';
import type { Leaf } from './pattern-values.ts';
import { MAX_JSON_DEPTH } from './json-depth.ts';
import { isJsonNumber, isJsonObject, JsonNumber, Num } from './json-number.ts';

/**
 * The array elements a leaf sits in, innermost first, as a chain shared with its siblings: a leaf
 * at depth d costs one link, not a copy of d pairs (copying made deep events cost depth²).
 */
interface ArrayPos {
  id: number;
  index: number;
  up: ArrayPos | undefined;
}

interface IndexedLeaf {
  value: Leaf;
  arrays: ArrayPos | undefined;
}

/**
 * Values nested deeper than this under the envelope are not indexed (they match nothing). PutEvents
 * refuses such details, so only in-process callers can hand one over; it keeps the walk bounded.
 */
export const MAX_EVENT_DEPTH = MAX_JSON_DEPTH + 1;

/** An event indexed once, reusable across any number of compiled patterns. */
export class PreparedEvent {
  /** @internal leaves by path */
  readonly leaves = new Map<string, IndexedLeaf[]>();

  constructor(event: unknown) {
    index(event, this.leaves);
  }
}

/** The leaf for a JSON scalar, or undefined for objects, arrays and what JSON cannot hold. */
function leafOf(v: unknown): Leaf | undefined {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return v;
  if (isJsonNumber(v)) return new Num(v);
  return undefined;
}

interface Frame {
  value: unknown;
  path: string;
  arrays: ArrayPos | undefined;
  depth: number;
}

/**
 * Iterative walk (deep events cannot overflow the stack). Values that JSON cannot hold
 * (undefined, functions, non-finite numbers) are treated as absent, and an object that contains
 * itself is not walked twice on the same line of descent, so non-JSON input never hangs.
 */
function index(event: unknown, out: Map<string, IndexedLeaf[]>): void {
  if (!isJsonObject(event)) return;
  let nextArrayId = 0;
  const ancestors = new Set<object>();
  const stack: Array<Frame | { leave: object }> = [{ value: event, path: '', arrays: undefined, depth: 0 }];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame | { leave: object };
    if ('leave' in frame) {
      ancestors.delete(frame.leave);
      continue;
    }
    const { value, path, arrays, depth } = frame;
    const leaf = leafOf(value);
    if (leaf !== undefined) {
      const list = out.get(path);
      if (list) list.push({ value: leaf, arrays });
      else out.set(path, [{ value: leaf, arrays }]);
      continue;
    }
    if (typeof value !== 'object' || value === null || value instanceof JsonNumber || ancestors.has(value)) continue;
    if (depth >= MAX_EVENT_DEPTH) continue;
    ancestors.add(value);
    stack.push({ leave: value });
    if (Array.isArray(value)) {
      const id = nextArrayId++;
      for (let i = value.length - 1; i >= 0; i--)
        stack.push({ value: value[i], path, arrays: { id, index: i, up: arrays }, depth: depth + 1 });
    } else {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        stack.push({
          value: (value as Record<string, unknown>)[key],
          path: path === '' ? key : `${path}.${key}`,
          arrays,
          depth: depth + 1,
        });
      }
    }
  }
}

/** The array elements chosen so far: arrayId → index. Undone on backtrack. */
type Choice = Map<number, number>;

function consistent(leaf: IndexedLeaf, choice: Choice): boolean {
  for (let a = leaf.arrays; a; a = a.up) {
    const chosen = choice.get(a.id);
    if (chosen !== undefined && chosen !== a.index) return false;
  }
  return true;
}

/** Records the leaf's elements in the choice; returns the array ids it added (for undo). */
function commit(leaf: IndexedLeaf, choice: Choice): number[] {
  const added: number[] = [];
  for (let a = leaf.arrays; a; a = a.up) {
    if (!choice.has(a.id)) {
      choice.set(a.id, a.index);
      added.push(a.id);
    }
  }
  return added;
}

interface Slot {
  field: FieldRule;
  /** Leaves at the field's path that pass one of its tests, consistency not yet considered. */
  candidates: IndexedLeaf[];
}

function matchBranch(fields: Branch, event: PreparedEvent): boolean {
  const leavesAt = (path: string) => event.leaves.get(path) ?? [];
  const slots: Slot[] = [];
  // Paths that must have no leaf consistent with the final choice.
  const absent: string[] = [];
  for (const field of fields) {
    if (field.tests.length === 0) {
      absent.push(field.path);
      continue;
    }
    const candidates = leavesAt(field.path).filter((l) => field.tests.some((t) => t(l.value)));
    if (candidates.length === 0 && !field.absentOk) return false;
    slots.push({ field, candidates });
  }
  // The answer does not depend on field order, so the most selective fields go first.
  slots.sort((a, b) => a.candidates.length - b.candidates.length);

  const choice: Choice = new Map();
  const noneConsistent = (path: string) => !leavesAt(path).some((l) => consistent(l, choice));
  // Absence is already lost when a consistent leaf can never become inconsistent: each of its
  // arrays is either fixed or one that no candidate can fix. Checked at every step to cut the search.
  const fixable = new Set<number>();
  const mayBeAbsent = absent.length > 0 || slots.some((slot) => slot.field.absentOk);
  if (mayBeAbsent) {
    for (const slot of slots) for (const l of slot.candidates) for (let a = l.arrays; a; a = a.up) fixable.add(a.id);
  }
  const settled = (l: IndexedLeaf) => {
    for (let a = l.arrays; a; a = a.up) if (!choice.has(a.id) && fixable.has(a.id)) return false;
    return true;
  };
  const doomed = (path: string) => leavesAt(path).some((l) => consistent(l, choice) && settled(l));

  const step = (i: number): boolean => {
    if (absent.some(doomed)) return false;
    const slot = slots[i];
    if (!slot) return absent.every(noneConsistent);
    for (const leaf of slot.candidates) {
      if (!consistent(leaf, choice)) continue;
      const added = commit(leaf, choice);
      if (step(i + 1)) return true;
      for (const id of added) choice.delete(id);
    }
    if (!slot.field.absentOk) return false;
    absent.push(slot.field.path);
    if (step(i + 1)) return true;
    absent.pop();
    return false;
  };
  return step(0);
}

/** True when any branch of the compiled pattern matches the event. */
export function matchBranches(branches: readonly Branch[], event: PreparedEvent): boolean {
  return branches.some((b) => matchBranch(b, event));
}
