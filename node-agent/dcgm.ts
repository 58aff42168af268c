/**
 * What the agent already reads, on `/metrics` under NVIDIA dcgm-exporter's names, types, units and
 * label keys, so the fleet's dashboards (Grafana 12239) and alert rules work with no DCGM installed.
 * Checked against dcgm-exporter's etc/default-counters.csv, its render template and its Kubernetes
 * pod mapper (docs/node-agent.md "DCGM-compatible metrics").
 *
 * - One table per entity (GPU, MIG GPU instance) maps a sample field to a DCGM name: a new field
 *   in GpuSample is one new line here.
 * - A value NVML did not supply is absent, never 0: DCGM itself skips blank values, and a 0 would
 *   pass for "idle" or "cool" on a dashboard.
 * - Every series is rebuilt from the latest sample: a lost GPU or a pod that left is gone from the
 *   next scrape, not frozen at its last value.
 */
import type { GpuRef } from './collectors/reading.ts';
import type { Inventory } from './collectors/inventory.ts';
import type { Labels, Metrics, Series } from './metrics.ts';
import type { MigDeviceInfo } from './nvml/mig.ts';
import type { GpuSample } from './nvml/sample.ts';

export interface DcgmField<T> {
  /** dcgm-exporter's metric name (the DCGM field name). */
  name: string;
  type: 'gauge' | 'counter';
  /** dcgm-exporter's help text: it states the unit. */
  help: string;
  /** The value in DCGM's unit, or undefined when NVML did not supply it (the series is absent). */
  read: (x: T) => number | boolean | undefined;
}

/** Per GPU. Units as DCGM's: %, MiB, °C, W; counts as NVML counts them. */
export const DCGM_GPU_FIELDS: readonly DcgmField<GpuSample>[] = [
  { name: 'DCGM_FI_DEV_GPU_UTIL', type: 'gauge', help: 'GPU utilization (in %).', read: (s) => s.utilization?.gpu },
  {
    name: 'DCGM_FI_DEV_MEM_COPY_UTIL',
    type: 'gauge',
    help: 'Memory utilization (in %).',
    read: (s) => s.utilization?.memory,
  },
  {
    name: 'DCGM_FI_DEV_ENC_UTIL',
    type: 'gauge',
    help: 'Encoder utilization (in %).',
    read: (s) => s.codecUtilization?.encoder,
  },
  {
    name: 'DCGM_FI_DEV_DEC_UTIL',
    type: 'gauge',
    help: 'Decoder utilization (in %).',
    read: (s) => s.codecUtilization?.decoder,
  },
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    read: (s) => s.memory?.usedMiB,
  },
  {
    name: 'DCGM_FI_DEV_FB_FREE',
    type: 'gauge',
    help: 'Framebuffer memory free (in MiB).',
    read: (s) => s.memory?.freeMiB,
  },
  // Not in dcgm-exporter's default counters (a DCGM field all the same, 250): exported because the
  // field notes' alert divides FB_USED by it, and NVML gives the total with used and free.
  {
    name: 'DCGM_FI_DEV_FB_TOTAL',
    type: 'gauge',
    help: 'Framebuffer memory total (in MiB).',
    read: (s) => s.memory?.totalMiB,
  },
  { name: 'DCGM_FI_DEV_GPU_TEMP', type: 'gauge', help: 'GPU temperature (in C).', read: (s) => s.temperatureC },
  {
    name: 'DCGM_FI_DEV_MEMORY_TEMP',
    type: 'gauge',
    help: 'Memory temperature (in C).',
    read: (s) => s.memoryTemperatureC,
  },
  { name: 'DCGM_FI_DEV_POWER_USAGE', type: 'gauge', help: 'Power draw (in W).', read: (s) => s.powerW },
  // nvmlDeviceGetEnforcedPowerLimit is DCGM field 164, not POWER_MGMT_LIMIT (160, the configured one).
  {
    name: 'DCGM_FI_DEV_ENFORCED_POWER_LIMIT',
    type: 'gauge',
    help: 'Effective power limit the driver enforces (in W).',
    read: (s) => s.powerLimitW,
  },
  {
    name: 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
    type: 'counter',
    help: 'Total number of single-bit volatile ECC errors.',
    read: (s) => s.ecc?.volatileCorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
    type: 'counter',
    help: 'Total number of double-bit volatile ECC errors.',
    read: (s) => s.ecc?.volatileUncorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_SBE_AGG_TOTAL',
    type: 'counter',
    help: 'Total number of single-bit persistent ECC errors.',
    read: (s) => s.ecc?.aggregateCorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
    type: 'counter',
    help: 'Total number of double-bit persistent ECC errors.',
    read: (s) => s.ecc?.aggregateUncorrected,
  },
  {
    name: 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for uncorrectable errors',
    read: (s) => s.remappedRows?.uncorrectable,
  },
  {
    name: 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for correctable errors',
    read: (s) => s.remappedRows?.correctable,
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    type: 'gauge',
    help: 'Whether remapping of rows has failed',
    read: (s) => s.remappedRows?.failure,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink flow-control CRC errors.',
    read: (s) => s.nvlinkErrors?.crcFlit,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink data CRC errors.',
    read: (s) => s.nvlinkErrors?.crcData,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink retries.',
    read: (s) => s.nvlinkErrors?.replay,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink recovery errors.',
    read: (s) => s.nvlinkErrors?.recovery,
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_PENDING',
    type: 'gauge',
    help: 'Whether remapping of rows is pending',
    read: (s) => s.remappedRows?.pending,
  },
];

/**
 * Per MIG GPU instance (labels GPU_I_PROFILE, GPU_I_ID): framebuffer is the one per-instance
 * reading NVML gives; utilization, temperature and power stay per GPU, as in DCGM.
 */
export const DCGM_MIG_FIELDS: readonly DcgmField<MigDeviceInfo>[] = [
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    read: (m) => m.memoryUsedMiB,
  },
  { name: 'DCGM_FI_DEV_FB_TOTAL', type: 'gauge', help: 'Framebuffer memory total (in MiB).', read: (m) => m.memoryMiB },
];

/** Not from the sample: the last XID code the agent published for the GPU (DCGM: the code, a gauge). */
export const DCGM_XID_ERRORS: Omit<DcgmField<never>, 'read'> = {
  name: 'DCGM_FI_DEV_XID_ERRORS',
  type: 'gauge',
  help: 'Value of the last XID error encountered.',
};

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
