import { toleratesTaint } from './predicates.ts';
import type { Store } from './store.ts';
import type { KubeObject, Taint, Toleration } from './types.ts';

/**
 * The devices DRA drivers publish, as the scheduler's allocator sees them (rules and sources:
 * dra-allocator.ts): every ResourceSlice device with its node, attributes and taints, the taints of the
 * DeviceTaintRules selecting it added (KEP-5055: "Taints defined by an admin in a DeviceTaintRule get added
 * to the set of taints defined by the DRA driver in a ResourceSlice"), and the CEL the simulator evaluates.
 */
export const SLICES = 'resourceslices.resource.k8s.io';
export const TAINT_RULES = 'devicetaintrules.resource.k8s.io';

/** DeviceToleration (KEP-5055): a node toleration's fields, matched the same way (ToleratesTaint). */
export type DeviceToleration = Toleration & { tolerationSeconds?: number };

export interface DeviceTaint {
  key: string;
  value?: string;
  effect: string;
  timeAdded?: string;
}
export interface Attr {
  string?: string;
  int?: number;
  bool?: boolean;
  version?: string;
}
export interface SliceDevice {
  driver: string;
  pool: string;
  device: string;
  node: string;
  attributes: Record<string, Attr>;
  taints: DeviceTaint[];
}
/** Every device the ResourceSlices publish, with its slice's node and the DeviceTaintRules' taints added. */
export function publishedDevices(store: Store): SliceDevice[] {
  const rules = store.list(TAINT_RULES).map(
    (r) =>
      r.spec as {
        deviceSelector?: { driver?: string; pool?: string; device?: string };
        taint?: DeviceTaint;
      },
  );
  const out: SliceDevice[] = [];
  for (const s of store.list(SLICES)) {
    const spec = s.spec as {
      driver?: string;
      nodeName?: string;
      pool?: { name?: string };
      devices?: { name: string; attributes?: Record<string, Attr>; taints?: DeviceTaint[] }[];
    };
    for (const d of spec.devices ?? []) {
      const ref = { driver: spec.driver ?? '', pool: spec.pool?.name ?? '', device: d.name };
      const ruled = rules
        .filter((r) => {
          const sel = r?.deviceSelector;
          if (!sel || !r.taint) return false;
          return (
            (sel.driver === undefined || sel.driver === ref.driver) &&
            (sel.pool === undefined || sel.pool === ref.pool) &&
            (sel.device === undefined || sel.device === ref.device)
          );
        })
        .map((r) => r.taint!);
      out.push({
        ...ref,
        node: spec.nodeName ?? '',
        attributes: d.attributes ?? {},
        taints: [...(d.taints ?? []), ...ruled],
      });
    }
  }
  return out;
}

/** A device's name across the cluster: `driver/pool/device`. */
export const deviceKey = (d: { driver: string; pool: string; device: string }) => `${d.driver}/${d.pool}/${d.device}`;

/** The taints with an effect (NoSchedule, NoExecute) that no toleration of the request tolerates. */
export function untolerated(
  taints: readonly DeviceTaint[],
  tolerations: readonly DeviceToleration[] | undefined,
): DeviceTaint[] {
  return taints.filter(
    (t) =>
      (t.effect === 'NoSchedule' || t.effect === 'NoExecute') &&
      !(tolerations ?? []).some((tol) => toleratesTaint(tol, t as Taint)),
  );
}

/**
 * The CEL the simulator evaluates: `&&` of `device.driver == "<d>"` and
 * `device.attributes["<domain>"].<name> == <literal>` (a string, an integer or true/false). An
 * unqualified slice attribute belongs to the driver's domain (ResourceSlice API reference, `attributes`).
 * Undefined: an expression outside that subset.
 */
export function celHolds(expr: string, d: SliceDevice): boolean | undefined {
  const lit = (s: string): string | number | boolean | undefined => {
    const q = /^(["'])(.*)\1$/.exec(s);
    if (q) return q[2];
    if (/^-?\d+$/.test(s)) return Number(s);
    if (s === 'true' || s === 'false') return s === 'true';
    return undefined;
  };
  for (const raw of expr.split('&&')) {
    const term = raw.trim();
    let m = /^device\.driver\s*==\s*(.+)$/.exec(term);
    if (m) {
      if (lit(m[1]!.trim()) === undefined) return undefined;
      if (lit(m[1]!.trim()) !== d.driver) return false;
      continue;
    }
    m = /^device\.attributes\[(["'])([^"']+)\1\]\.([A-Za-z0-9_]+)\s*==\s*(.+)$/.exec(term);
    if (!m) return undefined;
    const want = lit(m[4]!.trim());
    if (want === undefined) return undefined;
    const [domain, name] = [m[2]!, m[3]!];
    const a = d.attributes[`${domain}/${name}`] ?? (domain === d.driver ? d.attributes[name] : undefined);
    const have = a?.string ?? a?.int ?? a?.bool ?? a?.version;
    if (have !== want) return false;
  }
  return true;
}

/**
 * A DeviceTaintRule as the API server stores it on create: its taint's `timeAdded` set to now when the client
 * gave none (KEP-5055, DeviceTaint.TimeAdded: "Added automatically during create or update if not set"), the
 * instant a NoExecute toleration's `tolerationSeconds` counts from.
 */
export function withTimeAdded(rule: KubeObject, nowIso: string): KubeObject {
  const spec = rule.spec as { taint?: { timeAdded?: string } } | undefined;
  if (!spec?.taint || spec.taint.timeAdded) return rule;
  return { ...rule, spec: { ...spec, taint: { ...spec.taint, timeAdded: nowIso } } } as KubeObject;
}
