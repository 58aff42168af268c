/**
 * How deep JSON may nest, and two linear, non-recursive ways to measure it.
 *
 * Walking untrusted JSON recursively (JSON.stringify, structuredClone, a recursive reader) throws
 * "Maximum call stack size exceeded" near 10,000 levels, and a walk that copies its path at every
 * level costs depth² — a 120 KB Detail of 60,000 nested arrays once pinned the local bus for
 * minutes. So the edges measure depth first, in one pass, and refuse what is deeper than this.
 *
 * EventBridge documents no depth limit for Detail and we have not measured one. 1,000 is the
 * default `maxNestingDepth` of Jackson (2.15+), the JSON library behind AWS's Java services and
 * event-ruler; real events are a handful of levels deep. docs/local-bus.md says the same.
 */
export const MAX_JSON_DEPTH = 1000;

/**
 * The nesting depth of JSON text (`{}` and `[]` are 1, a scalar 0), scanning once and skipping
 * strings; stops early and returns `limit + 1` as soon as the text is deeper than `limit`.
 * Malformed text gets a best-effort answer: parse it afterwards to refuse it.
 */
export function jsonTextDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (++depth > max) {
        max = depth;
        if (max > limit) return limit + 1;
      }
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) depth--;
  }
  return max;
}

/**
 * True when a parsed value nests objects/arrays more than `limit` levels deep. Iterative; visits
 * each container once, and an object met again on its own line of descent (a cycle) counts as too deep.
 */
export function deeperThan(value: unknown, limit = MAX_JSON_DEPTH): boolean {
  const stack: { v: unknown; d: number }[] = [{ v: value, d: 0 }];
  while (stack.length > 0) {
    const { v, d } = stack.pop() as { v: unknown; d: number };
    if (typeof v !== 'object' || v === null) continue;
    if (d + 1 > limit) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push({ v: child, d: d + 1 });
    }
  }
  return false;
}
