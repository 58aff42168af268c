/**
 * The functions' rules on Alibaba Cloud EventBridge (issue #35): each AWS pattern of events/patterns/
 * translated to Alibaba's syntax, from the same source, so both targets route the same events.
 *
 * Alibaba's events are CloudEvents 1.0: our `detail-type` travels as `type`, our `detail` as `data`,
 * `source` as itself (the Alibaba publisher, functions/adapters/bus-alibaba.ts, writes them so).
 * Alibaba's operators, per its "Event patterns" page
 * (https://help.aliyun.com/en/eventbridge/user-guide/event-patterns): exact values, `prefix`,
 * `suffix`, `contains`, `anything-but` (a value, a list, or `{prefix}`), `numeric`, `cidr` (IPv4 only),
 * `exists`, the empty string and null. It has no `equals-ignore-case`, no `wildcard`, no `$or` and no
 * `anything-but` of a suffix: a pattern using one is refused here, naming it, rather than deployed
 * to match something else.
 */

/** Thrown when an AWS pattern cannot be said in Alibaba's syntax; the message names the field and why. */
export class UnsupportedOnAlibabaError extends Error {
  override name = 'UnsupportedOnAlibabaError';
}

/** AWS envelope key → CloudEvents attribute as Alibaba EventBridge matches it. */
const TOP_LEVEL: Record<string, string> = { source: 'source', 'detail-type': 'type', detail: 'data' };

const OPERATORS = new Set(['prefix', 'suffix', 'anything-but', 'numeric', 'cidr', 'exists']);

function translateMatcher(m: unknown, where: string): unknown {
  if (m === null || typeof m !== 'object') return m;
  if (Array.isArray(m)) throw new UnsupportedOnAlibabaError(`${where}: a nested list is not a matcher`);
  const entries = Object.entries(m as Record<string, unknown>);
  if (entries.length !== 1) throw new UnsupportedOnAlibabaError(`${where}: a matcher has exactly one operator`);
  const [op, arg] = entries[0]!;
  if (!OPERATORS.has(op)) throw new UnsupportedOnAlibabaError(`${where}: Alibaba EventBridge has no "${op}" operator`);
  if (op === 'prefix' || op === 'suffix') {
    if (typeof arg !== 'string')
      throw new UnsupportedOnAlibabaError(
        `${where}: "${op}" of anything but a plain string (Alibaba has no ignore-case)`,
      );
  }
  if (op === 'cidr' && typeof arg === 'string' && arg.includes(':'))
    throw new UnsupportedOnAlibabaError(`${where}: "cidr" is IPv4 only on Alibaba EventBridge`);
  if (op === 'anything-but' && arg !== null && typeof arg === 'object' && !Array.isArray(arg)) {
    const keys = Object.keys(arg);
    if (keys.length !== 1 || keys[0] !== 'prefix' || typeof (arg as { prefix: unknown }).prefix !== 'string')
      throw new UnsupportedOnAlibabaError(`${where}: "anything-but" takes a value, a list or {prefix} on Alibaba`);
  }
  return { [op]: arg };
}

function translateFields(p: Record<string, unknown>, where: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) {
    const at = where ? `${where}.${k}` : k;
    if (k === '$or') throw new UnsupportedOnAlibabaError(`${at}: Alibaba EventBridge has no "$or"`);
    if (Array.isArray(v)) out[k] = v.map((m, i) => translateMatcher(m, `${at}[${i}]`));
    else if (v !== null && typeof v === 'object') out[k] = translateFields(v as Record<string, unknown>, at);
    else throw new UnsupportedOnAlibabaError(`${at}: a pattern's values are lists of matchers`);
  }
  return out;
}

/**
 * `aws` as the Alibaba EventBridge rules that route the same events: one pattern, or one per branch
 * of a top-level `$or` (Alibaba has no `$or`; a function may have several rules, each up to five
 * targets: https://help.aliyun.com/document_detail/163289.html). An `$or` anywhere else is refused.
 */
export function toAlibabaPatterns(aws: unknown): Record<string, unknown>[] {
  if (aws !== null && typeof aws === 'object' && !Array.isArray(aws) && '$or' in aws) {
    const { $or: branches, ...rest } = aws as { $or: unknown };
    if (!Array.isArray(branches) || branches.length === 0)
      throw new UnsupportedOnAlibabaError('$or: a list of patterns');
    return branches.map((b) => toAlibabaPattern({ ...rest, ...(b as object) }));
  }
  return [toAlibabaPattern(aws)];
}

/** `aws` (an EventBridge pattern over our envelope) as an Alibaba EventBridge pattern over CloudEvents. */
export function toAlibabaPattern(aws: unknown): Record<string, unknown> {
  if (aws === null || typeof aws !== 'object' || Array.isArray(aws))
    throw new UnsupportedOnAlibabaError('a pattern is a JSON object');
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(aws as Record<string, unknown>)) {
    const to = TOP_LEVEL[k];
    if (!to)
      throw new UnsupportedOnAlibabaError(
        `${k}: only source, detail-type and detail have a CloudEvents counterpart our publisher writes`,
      );
    if (to === 'data') {
      if (v === null || typeof v !== 'object' || Array.isArray(v))
        throw new UnsupportedOnAlibabaError('detail: a pattern over the detail is an object');
      out[to] = translateFields(v as Record<string, unknown>, 'detail');
    } else out[to] = translateFields({ [k]: v }, '')[k];
  }
  return out;
}
