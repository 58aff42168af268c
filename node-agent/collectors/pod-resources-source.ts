/**
 * Who holds which GPU, by the kubelet's PodResources API: the agent reads it at each sample and
 * publishes it (GPU Inventory `holders`, and on each XID the holders of that GPU). Pids still say which
 * pod's process hit an XID; PodResources says which pods were given the GPU, processes or not.
 *
 * An absent or unanswering socket is "unknown" — the events then carry no `holders` — never "no
 * pods". The gRPC client (pod-resources.ts, node:http2) is imported only once the socket exists, so an
 * agent on a node without it (or with the hostPath not mounted) loads none of it.
 */
import { access } from 'node:fs/promises';
import type { DeviceHolder } from '../../events/common.ts';
import type { PodDevices, PodResourcesEntry } from './pod-resources-wire.ts';

export const DEFAULT_POD_RESOURCES_SOCKET = '/var/lib/kubelet/pod-resources/kubelet.sock';
/** How long one call may take: the kubelet answers from memory. */
const CALL_TIMEOUT_MS = 2_000;

export type PodResourcesReading =
  { known: true; pods: PodResourcesEntry[]; allocatable: PodDevices[] } | { known: false; reason: string };

export interface PodResourcesSource {
  /** Never throws: what went wrong is the reading's `reason`. */
  read(): Promise<PodResourcesReading>;
}

export function podResourcesSource(socketPath: string, timeoutMs = CALL_TIMEOUT_MS): PodResourcesSource {
  return {
    async read() {
      try {
        await access(socketPath);
      } catch {
        return { known: false, reason: `no PodResources socket at ${socketPath}` };
      }
      try {
        const { readPodResources } = await import('./pod-resources.ts');
        return { known: true, ...(await readPodResources(socketPath, timeoutMs)) };
      } catch (err) {
        return { known: false, reason: (err as Error).message };
      }
    },
  };
}

/** The GPUs (and their MIG devices) NVML lists, to match device IDs against. */
export interface GpuIdentity {
  uuid: string;
  migDevices: readonly { uuid?: string }[];
}

/**
 * The GPU UUID a device-plugin device ID names: the UUID itself, a MIG UUID of one of its instances,
 * a time-sliced replica `<UUID>::<n>` (NVIDIA/k8s-device-plugin internal/rm/device_map.go; dcgm-exporter
 * strips `::N` too) or an ACK gpushare unit `<UUID>-_-<n>` (AliyunContainerService/gpushare-device-plugin
 * pkg/gpu/nvidia/nvidia.go). Undefined for anything else (a NIC, another vendor's device).
 */
export function gpuOfDevice(id: string, gpus: readonly GpuIdentity[]): { gpu: string; mig?: string } | undefined {
  const base = id.replace(/::\d+$/, '').replace(/-_-\d+$/, '');
  for (const g of gpus) {
    if (g.uuid === base) return { gpu: g.uuid };
    if (g.migDevices.some((m) => m.uuid === base)) return { gpu: g.uuid, mig: base };
  }
  return undefined;
}

/** GPU resources of the device plugins (NVIDIA's, its time-sliced rename, ACK's gpushare). */
const GPU_RESOURCE = /^(nvidia\.com\/(gpu|gpu\.shared|mig-.+)|aliyun\.com\/gpu.*)$/;

/**
 * Every device holder of the node: device-plugin devices that are one of this node's GPUs (or MIG
 * devices), with the GPU they are; every DRA claim device as the kubelet names it (driver, pool,
 * device), which only the node's ResourceSlice maps to a GPU (the functions read it). `unmatched`:
 * GPU-resource device IDs that name no GPU NVML lists (NVIDIA's plugin with `deviceIDStrategy: index`
 * names devices `0`, `1`, …): then who holds which GPU is not known, and the caller must say so.
 */
export function deviceHolders(
  pods: readonly PodResourcesEntry[],
  gpus: readonly GpuIdentity[],
): { holders: DeviceHolder[]; unmatched: string[] } {
  const out: DeviceHolder[] = [];
  const unmatched: string[] = [];
  for (const p of pods) {
    if (!p.name || !p.namespace) continue;
    for (const c of p.containers) {
      for (const d of c.devices)
        for (const id of d.deviceIds) {
          const at = gpuOfDevice(id, gpus);
          if (!at && GPU_RESOURCE.test(d.resourceName)) unmatched.push(`${d.resourceName}=${id}`);
          if (!at) continue;
          const h = { namespace: p.namespace, name: p.name, resource: d.resourceName, deviceId: id };
          out.push({ ...h, gpu: at.gpu, ...(at.mig ? { mig: at.mig } : {}) } as DeviceHolder);
        }
      for (const cl of c.claims)
        for (const d of cl.devices.filter((x) => x.driver && x.pool && x.device && cl.claimName && cl.claimNamespace))
          out.push({
            namespace: p.namespace,
            name: p.name,
            dra: { claim: cl.claimName, claimNamespace: cl.claimNamespace, ...d },
          });
    }
  }
  // One entry per pod and device: several containers may share a device.
  const seen = new Set<string>();
  const holders = out.filter((h) => {
    const k = JSON.stringify([h.namespace, h.name, h.deviceId, h.dra]);
    return !seen.has(k) && (seen.add(k), true);
  });
  return { holders, unmatched };
}

/** The holders an event about GPU `uuid` carries: its device-plugin holders and every DRA holder. */
export function holdersOfGpu(holders: readonly DeviceHolder[], uuid: string): DeviceHolder[] {
  return holders.filter((h) => h.gpu === uuid || h.dra !== undefined).slice(0, 128);
}

/** What `GetAllocatableResources` says of each GPU: its device IDs still allocatable (events/gpu-devices.ts). */
export type AllocatableByGpu = { known: true; gpus: Record<string, string[]> } | { known: false; reason: string };

/**
 * Each GPU's allocatable device IDs (an empty list: none of its devices is allocatable, it is out). A GPU
 * device ID that names no GPU here (`deviceIDStrategy: index`) makes the whole answer unknown: identity
 * cannot be told, and unknown never verifies a fence.
 */
export function allocatableByGpu(reading: PodResourcesReading, gpus: readonly GpuIdentity[]): AllocatableByGpu {
  if (!reading.known) return { known: false, reason: reading.reason.slice(0, 256) };
  const out: Record<string, string[]> = Object.fromEntries(gpus.map((g) => [g.uuid, [] as string[]]));
  for (const d of reading.allocatable) {
    if (!GPU_RESOURCE.test(d.resourceName)) continue;
    for (const id of d.deviceIds) {
      const g = gpuOfDevice(id, gpus);
      if (!g) return { known: false, reason: `GPU device ${id} (${d.resourceName}) names no GPU here`.slice(0, 256) };
      out[g.gpu]!.push(id);
    }
  }
  for (const ids of Object.values(out)) ids.sort();
  return { known: true, gpus: out };
}
