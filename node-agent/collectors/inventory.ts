/**
 * Inventory: what the node has and who uses it. Sent at start and whenever it changes — a
 * process's memory use moving is not a change; a pod starting on a GPU, or a new MIG layout, is.
 */
import type { GpuInventoryDetail } from '../../events/catalog/gpu-inventory.ts';
import type { GpuReading } from './reading.ts';

export type Inventory = Omit<GpuInventoryDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>;

export interface SystemInfo {
  driverVersion: string;
  nvmlVersion?: string;
  cudaVersion?: string;
}

export function buildInventory(
  sys: SystemInfo,
  readings: readonly GpuReading[],
  podOfPid: ReadonlyMap<number, string | undefined>,
): Inventory {
  return {
    driverVersion: sys.driverVersion,
    ...(sys.nvmlVersion ? { nvmlVersion: sys.nvmlVersion } : {}),
    ...(sys.cudaVersion ? { cudaVersion: sys.cudaVersion } : {}),
    gpus: readings.map((r) => ({
      index: r.index,
      uuid: r.uuid,
      pciBusId: r.pciBusId,
      name: r.name,
      memoryTotalMiB: r.memoryTotalMiB ?? 0,
      migMode: r.migMode ?? 'unsupported',
      migDevices: (r.migDevices ?? []).map((m) => ({
        ...(m.uuid ? { uuid: m.uuid } : {}),
        gpuInstanceId: m.gpuInstanceId,
        computeInstanceId: m.computeInstanceId,
        profile: m.profile,
        placement: m.placement,
        ...(m.memoryTotalMiB !== undefined ? { memoryMiB: m.memoryTotalMiB } : {}),
      })),
      processes: (r.processes ?? []).map((p) => {
        const podUid = podOfPid.get(p.pid);
        return {
          pid: p.pid,
          ...(p.usedMiB !== undefined ? { usedMiB: p.usedMiB } : {}),
          ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId } : {}),
          ...(podUid ? { podUid } : {}),
          ...(p.mps ? { mps: true as const } : {}),
        };
      }),
    })),
  };
}

/** The part of an inventory whose change is worth an event (memory use per process is not). */
export function inventoryKey(inv: Inventory): string {
  return JSON.stringify({
    ...inv,
    gpus: inv.gpus.map((g) => ({
      ...g,
      processes: g.processes.map((p) => [p.pid, p.gpuInstanceId ?? null, p.podUid ?? null, p.mps ?? false]).sort(),
    })),
  });
}

/** Pods (by UID) using a GPU, or one MIG instance of it, per the latest inventory. */
/**
 * The pods on a GPU (or one MIG instance of it). With `pid` — the process the kernel log names for
 * an application XID — only the pod that owns that process, when the inventory knows it: on a
 * GPU shared by time-slicing or MPS, one buggy application is one workload, not every pod there.
 */
/** The pod whose process `pid` runs on the GPU, when the inventory knows it. */
export function podOfPidOnGpu(
  inv: Inventory | undefined,
  gpuUuid: string,
  pid: number | null | undefined,
): string | undefined {
  if (!pid) return undefined;
  return inv?.gpus.find((g) => g.uuid === gpuUuid)?.processes.find((p) => p.pid === pid)?.podUid;
}

export function podsOnGpu(
  inv: Inventory | undefined,
  gpuUuid: string,
  gpuInstanceId?: number,
  pid?: number | null,
): string[] {
  const gpu = inv?.gpus.find((g) => g.uuid === gpuUuid);
  if (!gpu) return [];
  const owner = pid ? gpu.processes.find((p) => p.pid === pid)?.podUid : undefined;
  if (owner) return [owner];
  // MPS: the tenants are the MPS clients; the compute listing's server belongs to the control daemon.
  const mps = gpu.processes.some((p) => p.mps);
  const uids = gpu.processes
    .filter((p) => !mps || p.mps)
    .filter((p) => gpuInstanceId === undefined || p.gpuInstanceId === gpuInstanceId)
    .flatMap((p) => (p.podUid ? [p.podUid] : []));
  return [...new Set(uids)];
}

/**
 * How the card looked shared in the latest inventory (issue #32): `mps` when NVML's MPS listing names
 * clients on it; `time-slicing` when processes of two pods run on one whole GPU, which exclusive
 * scheduling never does. Undefined: one pod or none (the node's labels may still say it is shared).
 */
export function cardSharing(inv: Inventory | undefined, gpuUuid: string): 'mps' | 'time-slicing' | undefined {
  const gpu = inv?.gpus.find((g) => g.uuid === gpuUuid);
  if (!gpu) return undefined;
  if (gpu.processes.some((p) => p.mps)) return 'mps';
  const whole = gpu.processes.filter((p) => p.gpuInstanceId === undefined && p.podUid);
  return new Set(whole.map((p) => p.podUid)).size > 1 ? 'time-slicing' : undefined;
}
