import { isQuantity } from './quantity.ts';
import type { KubeObject } from './types.ts';

/**
 * The real API server stores resource quantities as strings whatever the client sent
 * (`nvidia.com/gpu: 8` comes back as `"8"`) and refuses ones that do not parse. This walks the
 * resource lists of the served kinds and does the same; it returns the field path of the first
 * bad quantity, or undefined.
 */
type Rec = Record<string, unknown>;

function fixList(list: unknown, path: string): string | undefined {
  if (typeof list !== 'object' || list === null) return undefined;
  const rec = list as Rec;
  for (const [k, v] of Object.entries(rec)) {
    if (typeof v === 'number') rec[k] = String(v);
    else if (typeof v !== 'string' || !isQuantity(v)) return `${path}[${k}]`;
  }
  return undefined;
}

function containers(list: unknown, path: string): string | undefined {
  if (!Array.isArray(list)) return undefined;
  for (const [i, c] of list.entries()) {
    const res = (c as { resources?: Rec } | undefined)?.resources;
    const bad =
      fixList(res?.requests, `${path}[${i}].resources.requests`) ??
      fixList(res?.limits, `${path}[${i}].resources.limits`);
    if (bad) return bad;
  }
  return undefined;
}

function podSpec(spec: unknown, path: string): string | undefined {
  const s = spec as Rec | undefined;
  return containers(s?.containers, `${path}.containers`) ?? containers(s?.initContainers, `${path}.initContainers`);
}

/** Mutates `obj` (a private copy) in place. */
export function normalizeQuantities(obj: KubeObject): string | undefined {
  const spec = obj.spec as Rec | undefined;
  const status = obj.status as Rec | undefined;
  switch (obj.kind) {
    case 'Node':
      return fixList(status?.capacity, 'status.capacity') ?? fixList(status?.allocatable, 'status.allocatable');
    case 'Pod':
      return podSpec(spec, 'spec');
    case 'ResourceQuota':
      return fixList(spec?.hard, 'spec.hard');
    case 'LimitRange': {
      const limits = Array.isArray(spec?.limits) ? (spec.limits as Rec[]) : [];
      for (const [i, l] of limits.entries()) {
        for (const f of ['default', 'defaultRequest', 'max', 'min', 'maxLimitRequestRatio']) {
          const bad = fixList(l[f], `spec.limits[${i}].${f}`);
          if (bad) return bad;
        }
      }
      return undefined;
    }
    case 'DaemonSet':
      return podSpec((spec?.template as Rec | undefined)?.spec, 'spec.template.spec');
    default:
      return undefined;
  }
}
