/**
 * What the agent already reads, on `/metrics` under NVIDIA dcgm-exporter's names, types, units and
 * label keys, so the fleet's dashboards (Grafana 12239) and alert rules work with no DCGM installed.
 * Checked against dcgm-exporter's etc/default-counters.csv, its render template and its Kubernetes
 * pod mapper (docs/node-agent.md "DCGM-compatible metrics").
 *
 * - One table per entity (GPU, MIG GPU instance) maps a sample field to a DCGM name: a new field
 *   in GpuSample is one new line in dcgm-fields.ts.
 * - A value NVML did not supply is absent, never 0: DCGM itself skips blank values, and a 0 would
 *   pass for "idle" or "cool" on a dashboard.
 * - Every series is rebuilt from the latest sample: a lost GPU or a pod that left is gone from the
 *   next scrape, not frozen at its last value.
 */
import type { GpuRef } from './collectors/reading.ts';
import type { Inventory } from './collectors/inventory.ts';
import type { Labels, Metrics, Series } from './metrics.ts';
import { DCGM_GPU_FIELDS, DCGM_MIG_FIELDS, DCGM_XID_ERRORS, type DcgmField } from './dcgm-fields.ts';
import type { GpuSample } from './nvml/sample.ts';

export { DCGM_GPU_FIELDS, DCGM_MIG_FIELDS, DCGM_XID_ERRORS, type DcgmField } from './dcgm-fields.ts';

/** What Kubernetes calls a pod, for dcgm-exporter's `namespace`, `pod`, `container` labels. */
export interface PodName {
  namespace: string;
  pod: string;
  /** Only when one container can be told from the others. */
  container?: string;
}

/**
 * Names pods by UID. The agent learns UIDs from cgroups and has no Kubernetes API access, so a
 * name comes from a node-local source (dcgm-pods.ts). Unknown UIDs are left out; never throws.
 */
export interface PodNames {
  lookup(uids: readonly string[]): Promise<ReadonlyMap<string, PodName>>;
}

export interface DcgmView {
  /** dcgm-exporter's `Hostname` label: the node name. */
  hostname: string;
  /** The label dcgm-exporter's default counters add to every series (`DCGM_FI_DRIVER_VERSION`). */
  driverVersion?: string;
  /** Every GPU NVML listed at start: identity for the XID series of a GPU that no longer answers. */
  gpus: readonly GpuRef[];
  /** The latest sample of each GPU that answered (by UUID); none after a failed sample. */
  samples: ReadonlyMap<string, GpuSample>;
  /** Pods by GPU (and MIG instance), from the latest inventory. */
  inventory?: Inventory;
  names: ReadonlyMap<string, PodName>;
  lastXid: ReadonlyMap<string, number>;
}

export interface DcgmFamily {
  type: 'gauge' | 'counter';
  help: string;
  series: Series[];
}

/** Every DCGM series the view supports, by metric name. Pure. */
export function dcgmFamilies(v: DcgmView): Map<string, DcgmFamily> {
  const out = new Map<string, DcgmFamily>();
  const add = (f: Omit<DcgmField<never>, 'read'>, labels: Labels[], value: number) => {
    let fam = out.get(f.name);
    if (!fam) out.set(f.name, (fam = { type: f.type, help: f.help, series: [] }));
    for (const l of labels) fam.series.push({ labels: l, value });
  };
  for (const gpu of v.gpus) {
    const sample = v.samples.get(gpu.uuid);
    const base = identity(v, gpu);
    const migOn = sample?.migMode?.current === true;
    // With MIG on, pods hold instances, not the GPU: GPU-wide series name no pod (as dcgm-exporter).
    const gpuLabels = withPods(base, migOn ? [] : podUids(v.inventory, gpu.uuid), v.names);
    if (sample) {
      for (const f of DCGM_GPU_FIELDS) {
        const x = f.read(sample);
        if (x !== undefined) add(f, gpuLabels, Number(x));
      }
      const seen = new Set<number>();
      for (const m of sample.migDevices ?? []) {
        // Compute instances of one GPU instance share its memory: one series per GPU instance.
        if (seen.has(m.gpuInstanceId)) continue;
        seen.add(m.gpuInstanceId);
        const mig = { ...base, ...(m.profile ? { GPU_I_PROFILE: m.profile } : {}), GPU_I_ID: String(m.gpuInstanceId) };
        const labels = withPods(mig, podUids(v.inventory, gpu.uuid, m.gpuInstanceId), v.names);
        for (const f of DCGM_MIG_FIELDS) {
          const x = f.read(m);
          if (x !== undefined) add(f, labels, Number(x));
        }
      }
    }
    const xid = v.lastXid.get(gpu.uuid);
    if (xid !== undefined) add(DCGM_XID_ERRORS, gpuLabels, xid);
  }
  return out;
}

/** dcgm-exporter's GPU labels, in its order. */
function identity(v: DcgmView, gpu: GpuRef): Labels {
  return {
    gpu: String(gpu.index),
    UUID: gpu.uuid,
    pci_bus_id: gpu.pciBusId,
    device: `nvidia${gpu.index}`,
    modelName: gpu.name,
    Hostname: v.hostname,
    ...(v.driverVersion ? { DCGM_FI_DRIVER_VERSION: v.driverVersion } : {}),
  };
}

function podUids(inv: Inventory | undefined, uuid: string, gpuInstanceId?: number): string[] {
  const procs = inv?.gpus.find((g) => g.uuid === uuid)?.processes ?? [];
  const uids = procs
    .filter((p) => gpuInstanceId === undefined || p.gpuInstanceId === gpuInstanceId)
    .flatMap((p) => (p.podUid ? [p.podUid] : []));
  return [...new Set(uids)].sort();
}

/**
 * One series per pod on the GPU (dcgm-exporter's shared-GPU mode), or one without pod labels when
 * none is. `pod_uid` (dcgm-exporter's key, behind its --kubernetes-enable-pod-uid) always: it is
 * what the agent knows first-hand; `namespace`/`pod`/`container` only when a source named the pod.
 */
function withPods(base: Labels, uids: readonly string[], names: ReadonlyMap<string, PodName>): Labels[] {
  if (uids.length === 0) return [base];
  return uids.map((uid) => {
    const n = names.get(uid);
    return {
      ...base,
      ...(n ? { namespace: n.namespace, pod: n.pod, ...(n.container ? { container: n.container } : {}) } : {}),
      pod_uid: uid,
    };
  });
}

export interface DcgmMetrics {
  /** After each sample (an empty `samples` after a failed one: its series go, XIDs stay). */
  sampled(s: {
    gpus: readonly GpuRef[];
    samples: readonly GpuSample[];
    inventory?: Inventory;
    driverVersion?: string;
  }): Promise<void>;
  /** An XID the agent published for the GPU. */
  xid(gpuUuid: string, xid: number): void;
}

export interface DcgmOptions {
  hostname: string;
  /** Without it, pods carry `pod_uid` only. */
  podNames?: PodNames;
}

export function registerDcgmMetrics(registry: Metrics, o: DcgmOptions): DcgmMetrics {
  let view: DcgmView = { hostname: o.hostname, gpus: [], samples: new Map(), names: new Map(), lastXid: new Map() };
  const lastXid = new Map<string, number>();
  const publish = () => {
    const families = dcgmFamilies(view);
    for (const f of new Map(
      [...DCGM_GPU_FIELDS, ...DCGM_MIG_FIELDS, DCGM_XID_ERRORS].map((x) => [x.name, x]),
    ).values()) {
      registry.snapshot(f.name, f.help, f.type).replace(families.get(f.name)?.series ?? []);
    }
  };
  return {
    async sampled(s) {
      const uids = [
        ...new Set((s.inventory?.gpus ?? []).flatMap((g) => g.processes.flatMap((p) => (p.podUid ? [p.podUid] : [])))),
      ];
      const names = o.podNames && uids.length > 0 ? await o.podNames.lookup(uids) : new Map<string, PodName>();
      view = {
        hostname: o.hostname,
        ...(s.driverVersion ? { driverVersion: s.driverVersion } : {}),
        gpus: s.gpus,
        samples: new Map(s.samples.map((x) => [x.uuid, x])),
        ...(s.inventory ? { inventory: s.inventory } : {}),
        names,
        lastXid,
      };
      publish();
    },
    xid(gpuUuid, xid) {
      lastXid.set(gpuUuid, xid);
      publish();
    },
  };
}
