import type { KubeObject, LabelSelectorSpec } from './types.ts';
import { LABEL_VALUE, LABEL_VALUE_MSG, qualifiedNameErrors } from './validation.ts';

/**
 * Label selectors (`a=b,c!=d,e in (x,y),f notin (z),g,!h`) and field selectors
 * (`spec.nodeName=n,status.phase!=Running`), parsed once per request into predicates.
 */
export interface Requirement {
  key: string;
  op: 'in' | 'notin' | 'exists' | '!exists' | 'gt' | 'lt';
  values: string[];
}

/** Splits on commas that are not inside parentheses. */
function splitTop(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of text) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts.map((p) => p.trim()).filter((p) => p !== '');
}

/** Throws an Error with the real server's wording when the selector does not parse. */
export function parseLabelSelector(text: string): Requirement[] {
  const reqs = splitTop(text).map(parseRequirement);
  for (const r of reqs) checkRequirement(r);
  return reqs;
}

/** labels.NewRequirement's checks: a qualified-name key, label values, integers for Gt/Lt. */
function checkRequirement(r: Requirement): void {
  const keyErrors = qualifiedNameErrors(r.key);
  if (keyErrors.length > 0)
    throw new Error(
      `unable to parse requirement: key: Invalid value: ${JSON.stringify(r.key)}: ${keyErrors.join('; ')}`,
    );
  r.values.forEach((v, i) => {
    if (r.op === 'gt' || r.op === 'lt') {
      if (!/^-?\d+$/.test(v))
        throw new Error(
          `unable to parse requirement: values[${i}]: Invalid value: ${JSON.stringify(v)}: for 'Gt', 'Lt' operators, ` +
            `the value must be an integer`,
        );
    } else if (v.length > 63 || !LABEL_VALUE.test(v)) {
      throw new Error(
        `unable to parse requirement: values[${i}][${r.key}]: Invalid ` +
          `value: ${JSON.stringify(v)}: ${v.length > 63 ? 'must be no more than 63 characters' : LABEL_VALUE_MSG}`,
      );
    }
  });
}

function parseRequirement(part: string): Requirement {
  let m = /^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(part);
  if (m)
    return {
      key: m[1]!,
      op: m[2] as 'in' | 'notin',
      values: m[3]!
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== ''),
    };
  m = /^!\s*([^=!<>\s]+)$/.exec(part);
  if (m) return { key: m[1]!, op: '!exists', values: [] };
  m = /^([^=!<>\s]+)\s*(==|=|!=|>|<)\s*(\S*)$/.exec(part);
  if (m) {
    const op = m[2]!;
    if (op === '!=') return { key: m[1]!, op: 'notin', values: [m[3]!] };
    if (op === '>' || op === '<') return { key: m[1]!, op: op === '>' ? 'gt' : 'lt', values: [m[3]!] };
    return { key: m[1]!, op: 'in', values: [m[3]!] };
  }
  m = /^([^=!<>\s()]+)$/.exec(part);
  if (m) return { key: m[1]!, op: 'exists', values: [] };
  throw new Error(`unable to parse requirement: found '${part}', expected: identifier`);
}

export function matchesRequirements(labels: Record<string, string> | undefined, reqs: readonly Requirement[]): boolean {
  for (const r of reqs) {
    const v = labels !== undefined && Object.hasOwn(labels, r.key) ? labels[r.key] : undefined;
    switch (r.op) {
      case 'in':
        if (v === undefined || !r.values.includes(v)) return false;
        break;
      case 'notin':
        if (v !== undefined && r.values.includes(v)) return false;
        break;
      case 'exists':
        if (v === undefined) return false;
        break;
      case '!exists':
        if (v !== undefined) return false;
        break;
      case 'gt':
      case 'lt': {
        if (v === undefined) return false;
        const a = Number(v);
        const b = Number(r.values[0]);
        if (Number.isNaN(a) || Number.isNaN(b) || (r.op === 'gt' ? !(a > b) : !(a < b))) return false;
      }
    }
  }
  return true;
}

/** The structured `metav1.LabelSelector` (PDBs, DaemonSets) as requirements. Empty selects all. */
export function requirementsOf(sel: LabelSelectorSpec | undefined): Requirement[] {
  const reqs: Requirement[] = [];
  for (const [key, value] of Object.entries(sel?.matchLabels ?? {})) reqs.push({ key, op: 'in', values: [value] });
  for (const e of sel?.matchExpressions ?? []) {
    const op = ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!exists' } as const)[e.operator as 'In'];
    if (!op) throw new Error(`invalid label selector operator "${e.operator}"`);
    reqs.push({ key: e.key, op, values: e.values ?? [] });
  }
  return reqs;
}

export interface FieldRequirement {
  field: string;
  equal: boolean;
  value: string;
}

/** Fields the real server indexes for these types; anything else is a 400 like the real one. */
const FIELDS: Record<string, (o: KubeObject) => string> = {
  'metadata.name': (o) => o.metadata.name,
  'metadata.namespace': (o) => o.metadata.namespace ?? '',
  'spec.nodeName': (o) => (o.spec as { nodeName?: string } | undefined)?.nodeName ?? '',
  'status.phase': (o) => (o.status as { phase?: string } | undefined)?.phase ?? '',
  'spec.unschedulable': (o) => String((o.spec as { unschedulable?: boolean } | undefined)?.unschedulable ?? false),
  'involvedObject.name': (o) => (o.involvedObject as { name?: string } | undefined)?.name ?? '',
  'involvedObject.kind': (o) => (o.involvedObject as { kind?: string } | undefined)?.kind ?? '',
  'involvedObject.namespace': (o) => (o.involvedObject as { namespace?: string } | undefined)?.namespace ?? '',
  'involvedObject.uid': (o) => (o.involvedObject as { uid?: string } | undefined)?.uid ?? '',
  'involvedObject.apiVersion': (o) => (o.involvedObject as { apiVersion?: string } | undefined)?.apiVersion ?? '',
  'involvedObject.resourceVersion': (o) =>
    (o.involvedObject as { resourceVersion?: string } | undefined)?.resourceVersion ?? '',
  'involvedObject.fieldPath': (o) => (o.involvedObject as { fieldPath?: string } | undefined)?.fieldPath ?? '',
  reason: (o) => String(o.reason ?? ''),
  reportingComponent: (o) => String(o.reportingComponent ?? ''),
  source: (o) => String((o.source as { component?: string } | undefined)?.component ?? ''),
  type: (o) => String(o.type ?? ''),
  'spec.schedulerName': (o) => (o.spec as { schedulerName?: string } | undefined)?.schedulerName ?? '',
  // ResourceSlice
  'spec.driver': (o) => (o.spec as { driver?: string } | undefined)?.driver ?? '',
};

export function parseFieldSelector(text: string): FieldRequirement[] {
  return splitTop(text).map((part) => {
    const m = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(part);
    if (!m) throw new Error(`invalid selector: '${text}'; can't understand '${part}'`);
    // Own keys only: `constructor` or `toString` must not pass for a field.
    if (!Object.hasOwn(FIELDS, m[1]!)) throw new Error(`field label not supported: ${m[1]}`);
    return { field: m[1]!, equal: m[2] !== '!=', value: m[3]!.trim() };
  });
}

/** The value field selector `field` compares for `o` (absent values read as ''), or undefined for an unknown field. */
export function fieldValue(o: KubeObject, field: string): string | undefined {
  return FIELDS[field]?.(o);
}

export function matchesFields(o: KubeObject, reqs: readonly FieldRequirement[]): boolean {
  for (const r of reqs) {
    const v = FIELDS[r.field]!(o);
    if ((v === r.value) !== r.equal) return false;
  }
  return true;
}
