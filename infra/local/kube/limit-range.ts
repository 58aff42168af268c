import { formatQuantity, parseQuantity } from './quantity.ts';
import type { Container, KubeObject, Pod, ResourceList } from './types.ts';

/**
 * The LimitRanger admission plugin for `type: Container`: fill in default limits and requests,
 * then refuse containers beyond min/max, with the plugin's message.
 */
interface LimitRangeItem {
  type: string;
  default?: ResourceList;
  defaultRequest?: ResourceList;
  max?: ResourceList;
  min?: ResourceList;
}

function itemsOf(limitRanges: KubeObject[]): LimitRangeItem[] {
  return limitRanges.flatMap((lr) =>
    ((lr.spec as { limits?: LimitRangeItem[] } | undefined)?.limits ?? []).filter((i) => i.type === 'Container'),
  );
}

/** A request above its limit once defaults are in: the API server's 422 validation error. */
export class RequestOverLimit extends Error {
  override name = 'RequestOverLimit';
  constructor(
    readonly field: string,
    why: string,
  ) {
    super(why);
  }
}

/** Returns a new pod with defaults applied; throws an Error with the plugin's message on min/max. */
export function applyLimitRanges(pod: Pod, limitRanges: KubeObject[]): Pod {
  const items = itemsOf(limitRanges);
  const fix =
    (field: string) =>
    (c: Container, i: number): Container => {
      const limits: ResourceList = { ...(c.resources?.limits ?? {}) };
      // API defaulting first: explicit limits become requests where requests are absent.
      const requests: ResourceList = { ...limits, ...(c.resources?.requests ?? {}) };
      for (const item of items) {
        for (const [k, v] of Object.entries(item.default ?? {})) if (limits[k] === undefined) limits[k] = v;
        for (const [k, v] of Object.entries(item.defaultRequest ?? item.default ?? {}))
          if (requests[k] === undefined) requests[k] = v;
      }
      for (const item of items) {
        for (const [k, v] of Object.entries(item.max ?? {})) {
          const l = limits[k];
          if (l !== undefined && parseQuantity(l) > parseQuantity(v))
            throw new Error(`maximum ${k} usage per Container is ${v}, but limit is ${l}`);
        }
        for (const [k, v] of Object.entries(item.min ?? {})) {
          const r = requests[k];
          if (r !== undefined && parseQuantity(r) < parseQuantity(v))
            throw new Error(
              `minimum ${k} usage per Container is ${v}, but request is ${formatQuantity(parseQuantity(r), k)}`,
            );
        }
      }
      for (const [k, r] of Object.entries(requests)) {
        const l = limits[k];
        if (l !== undefined && parseQuantity(r) > parseQuantity(l))
          throw new RequestOverLimit(
            `spec.${field}[${i}].resources.requests`,
            `Invalid value: "${r}": must be less than or equal to ${k} limit of ${l}`,
          );
      }
      const resources = {
        ...(Object.keys(limits).length > 0 ? { limits } : {}),
        ...(Object.keys(requests).length > 0 ? { requests } : {}),
      };
      return { ...c, resources };
    };
  return {
    ...pod,
    spec: {
      ...pod.spec,
      containers: pod.spec.containers.map(fix('containers')),
      ...(pod.spec.initContainers ? { initContainers: pod.spec.initContainers.map(fix('initContainers')) } : {}),
    },
  };
}
