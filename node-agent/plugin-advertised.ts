/**
 * What a node should advertise for NVML's GPUs, per device-plugin mode, and whether it does (the device
 * plugin check's rule: plugin-health.ts runs it at each actuator tick).
 *
 * What a node should advertise, per mode:
 * - NVIDIA's plugin, whole GPUs: `nvidia.com/gpu` = GPUs × `nvidia.com/gpu.replicas` (time-slicing or MPS,
 *   the labeller's replicas per GPU; 1 without sharing), under `nvidia.com/gpu.shared` when renamed
 *   (NVIDIA/k8s-device-plugin api/config/v1/replicas.go, internal/lm/resource.go).
 * - With MIG: every `nvidia.com/` GPU resource summed (whole GPUs, `nvidia.com/mig-*`, or `nvidia.com/gpu`
 *   counting MIG devices under the single strategy) = whole GPUs × replicas + MIG devices.
 * - ACK's gpushare plugin (`aliyun.com/gpu-count` in capacity, or a sharing `ack.node.gpu.schedule`):
 *   `aliyun.com/gpu-count` = cards, and `aliyun.com/gpu-mem` at least one GiB per card
 *   (AliyunContainerService/gpushare-device-plugin pkg/gpu/nvidia: it patches gpu-count into capacity).
 *
 * Two ways to be wrong: fewer devices in **capacity** than expected (the plugin enumerates fewer, or the
 * kubelet dropped a dead plugin's resource: pkg/kubelet/cm/devicemanager/types.go endpointStopGracePeriod,
 * 5 min after its endpoint stopped), or **none allocatable** (a plugin whose endpoint stopped has every
 * device marked unhealthy at once). A fence takes some devices out of allocatable, never all of them
 * and never capacity; `remediate` still checks its own fences before restarting anything.
 */
import type { DevicePluginMismatchDetail, DevicePluginMode } from '../events/catalog/device-plugin.ts';
import type { Inventory } from './collectors/inventory.ts';

/** The Node as the check reads it. */
export interface NodeView {
  labels: Readonly<Record<string, string>>;
  capacity: Readonly<Record<string, string>>;
  allocatable: Readonly<Record<string, string>>;
  /** The keys of the Node's taints (absent: not read, as if none). */
  taints?: readonly string[];
}

/** What NVML answers for: whole GPUs (MIG off), MIG devices, and GPUs in all. */
export interface GpuView {
  gpus: number;
  whole: number;
  migDevices: number;
}

export function gpuViewOf(inv: Pick<Inventory, 'gpus'>): GpuView {
  const mig = inv.gpus.filter((g) => g.migMode === 'enabled');
  return {
    gpus: inv.gpus.length,
    whole: inv.gpus.length - mig.length,
    migDevices: mig.reduce((n, g) => n + g.migDevices.length, 0),
  };
}

/** One advertised resource: what NVML's GPUs give, and what the Node's capacity and allocatable hold. */
export type Resource = DevicePluginMismatchDetail['resources'][number];

/** ACK's sharing modes (`default` is exclusive): alibabacloud.com/help/doc-detail/191140.html. */
const CGPU_SCHEDULE = new Set(['cgpu', 'core_mem', 'share', 'mps']);
const GPU_RESOURCE = /^nvidia\.com\/(gpu|gpu\.shared|mig-.+)$/;

const num = (v: string | undefined) => {
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? Math.floor(n) : 0;
};

/** The mode the node's labels and capacity say, and what each advertised resource should hold. */
export function expectedAdvertised(g: GpuView, node: NodeView): { mode: DevicePluginMode; resources: Resource[] } {
  const { capacity: cap, allocatable: alloc, labels } = node;
  if (cap['aliyun.com/gpu-count'] !== undefined || CGPU_SCHEDULE.has(labels['ack.node.gpu.schedule'] ?? '')) {
    const r = (resource: string): Resource => ({
      resource,
      expected: g.gpus,
      capacity: num(cap[resource]),
      allocatable: num(alloc[resource]),
    });
    return { mode: 'cgpu', resources: [r('aliyun.com/gpu-count'), r('aliyun.com/gpu-mem')] };
  }
  const replicas = Math.max(1, num(labels['nvidia.com/gpu.replicas']));
  const strategy = labels['nvidia.com/gpu.sharing-strategy'];
  const renamed = cap['nvidia.com/gpu.shared'] !== undefined;
  const shared: DevicePluginMode | undefined =
    strategy === 'mps' ? 'mps' : strategy === 'time-slicing' || renamed ? 'time-slicing' : undefined;
  if (g.migDevices > 0) {
    const sum = (m: Readonly<Record<string, string>>) =>
      Object.entries(m).reduce((n, [k, v]) => n + (GPU_RESOURCE.test(k) ? num(v) : 0), 0);
    return {
      mode: 'mig',
      resources: [
        {
          resource: 'nvidia.com/*',
          expected: g.whole * replicas + g.migDevices,
          capacity: sum(cap),
          allocatable: sum(alloc),
        },
      ],
    };
  }
  const resource = renamed ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu';
  return {
    mode: shared ?? 'exclusive',
    resources: [
      {
        resource,
        expected: g.whole * (shared ? replicas : 1),
        capacity: num(cap[resource]),
        allocatable: num(alloc[resource]),
      },
    ],
  };
}

export type Verdict = { ok: true } | { ok: false; kind: 'capacity' | 'none-allocatable'; words: string };

/** Whether the node advertises what NVML's GPUs give (see the file's comment for the two ways it does not). */
export function judge(g: GpuView, resources: readonly Resource[]): Verdict {
  const short = resources.filter((r) => r.capacity < r.expected);
  const seen = `NVML sees ${g.gpus} GPU(s)`;
  if (short.length > 0)
    return {
      ok: false,
      kind: 'capacity',
      words: `${seen}; the node advertises ${short
        .map((r) => `${r.capacity} ${r.resource} (expected ${r.expected})`)
        .join(', ')}: the device plugin enumerates fewer devices than the node has, or is gone`,
    };
  const none = resources.filter((r) => r.expected > 0 && r.allocatable === 0);
  if (none.length > 0)
    return {
      ok: false,
      kind: 'none-allocatable',
      words: `${seen}; the node advertises ${none
        .map((r) => `${r.capacity} ${r.resource}`)
        .join(', ')} but none allocatable: the device plugin is down or unregistered`,
    };
  return { ok: true };
}
