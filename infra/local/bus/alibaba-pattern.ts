/**
 * Alibaba Cloud EventBridge's event-pattern matching, written again from its documentation
 * ("Event patterns", https://help.aliyun.com/en/eventbridge/user-guide/event-patterns, and the same
 * rules on ApsaraMQ for RocketMQ's "Event patterns" page, test/data/alibaba-eventbridge/README.md):
 * a simulator, so it imports nothing of the product's own AWS matcher (events/pattern.ts).
 *
 * - The event must hold every field the pattern names, in the same nesting; fields it does not name
 *   are ignored.
 * - Keys are ANDed; the values of one key's list are ORed.
 * - Matching is exact and case-sensitive; values are JSON strings, numbers, true, false, null.
 * - Operators: exact value, `prefix`, `suffix`, `contains`, `anything-but` (a string, a number, a
 *   list, or `{prefix}`), `numeric` (`[op, n, op, n]` with = < <= > >=), `cidr` (IPv4), `exists`,
 *   the empty string and null as values.
 * - An array in the event matches when any of its elements does (the docs' "array" example).
 */

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const asList = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);

function ipv4(s: string): number | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return undefined;
  const parts = m.slice(1).map(Number);
  if (parts.some((n) => n > 255)) return undefined;
  return parts.reduce((a, n) => a * 256 + n, 0);
}

function inCidr(value: unknown, cidr: string): boolean {
  if (typeof value !== 'string') return false;
  const [net, bits] = cidr.split('/');
  const n = ipv4(net ?? '');
  const v = ipv4(value);
  const len = bits === undefined ? 32 : Number(bits);
  if (n === undefined || v === undefined || !(len >= 0 && len <= 32)) return false;
  const size = 2 ** (32 - len);
  return Math.floor(v / size) === Math.floor(n / size);
}

function numeric(value: unknown, spec: unknown[]): boolean {
  if (typeof value !== 'number') return false;
  for (let i = 0; i + 1 < spec.length; i += 2) {
    const op = spec[i];
    const n = spec[i + 1] as number;
    const ok =
      op === '='
        ? value === n
        : op === '<'
          ? value < n
          : op === '<='
            ? value <= n
            : op === '>'
              ? value > n
              : op === '>='
                ? value >= n
                : false;
    if (!ok) return false;
  }
  return true;
}

/** One matcher of a key's list against one scalar value that is there. */
function matchOne(m: unknown, value: Json): boolean {
  if (m === null || typeof m !== 'object') return m === value;
  const [op, arg] = Object.entries(m as Record<string, unknown>)[0] ?? [];
  switch (op) {
    case 'prefix':
      return typeof value === 'string' && value.startsWith(String(arg));
    case 'suffix':
      return typeof value === 'string' && value.endsWith(String(arg));
    case 'contains':
      return typeof value === 'string' && value.includes(String(arg));
    case 'numeric':
      return numeric(value, arg as unknown[]);
    case 'cidr':
      return inCidr(value, String(arg));
    case 'anything-but':
      if (arg !== null && typeof arg === 'object' && !Array.isArray(arg))
        return typeof value === 'string' && !value.startsWith(String((arg as { prefix: unknown }).prefix));
      return !asList(arg).some((a) => a === value);
    default:
      return false;
  }
}

function matchField(list: unknown[], present: boolean, value: Json | undefined): boolean {
  return list.some((m) => {
    if (m !== null && typeof m === 'object' && 'exists' in (m as object))
      return (m as { exists: boolean }).exists === present;
    if (!present) return false;
    return asList(value).some((v) => matchOne(m, v as Json));
  });
}

/** True when Alibaba EventBridge would route `event` (a CloudEvent as delivered) to a rule of `pattern`. */
export function alibabaPatternMatches(pattern: Record<string, unknown>, event: unknown): boolean {
  const e = (event ?? {}) as Record<string, Json>;
  for (const [k, want] of Object.entries(pattern)) {
    const present = e !== null && typeof e === 'object' && Object.prototype.hasOwnProperty.call(e, k);
    const value = present ? e[k] : undefined;
    if (Array.isArray(want)) {
      if (!matchField(want, present, value)) return false;
    } else if (want !== null && typeof want === 'object') {
      if (!present || value === null || typeof value !== 'object' || Array.isArray(value)) return false;
      if (!alibabaPatternMatches(want as Record<string, unknown>, value)) return false;
    } else return false;
  }
  return true;
}
