/** `GPU Inventory` — what a node has, sent at start and whenever it changes (example: ./gpu-inventory.example.json). */
import * as z from 'zod';
import { agentBase, count, DeviceHolder, GpuUuid, MigProfile, MigUuid, PciBusId } from '../common.ts';

export const GPU_INVENTORY = 'GPU Inventory';

export const MigDeviceSchema = z
  .object({
    uuid: MigUuid.optional(),
    gpuInstanceId: count(),
    computeInstanceId: count(),
    profile: MigProfile,
    /** Placement in memory slices (8 on A100/H100): start and size. */
    placement: z.object({ start: count(), size: count() }).strict(),
    memoryMiB: count().optional(),
  })
  .strict();
export type MigDevice = z.infer<typeof MigDeviceSchema>;

export const GpuProcessSchema = z
  .object({
    pid: count(),
    usedMiB: count().optional(),
    /** The MIG GPU instance the process runs in, when MIG is on. */
    gpuInstanceId: count().optional(),
    /** From /proc/<pid>/cgroup; absent for processes outside Kubernetes. */
    podUid: z.string().min(1).max(64).optional(),
    /**
     * An MPS client, from NVML's MPS listing (nvmlDeviceGetMPSComputeRunningProcesses_v3); the card's
     * compute listing then holds the MPS server, whose pod (the control daemon's) is no tenant (issue #32).
     */
    mps: z.literal(true).optional(),
  })
  .strict();

export const GpuInventoryDetailSchema = z
  .object({
    ...agentBase,
    driverVersion: z.string().min(1).max(32),
    nvmlVersion: z.string().max(32).optional(),
    cudaVersion: z
      .string()
      .regex(/^\d+\.\d+$/)
      .optional(),
    gpus: z
      .array(
        z
          .object({
            index: count(),
            uuid: GpuUuid,
            pciBusId: PciBusId,
            name: z.string().min(1).max(96),
            memoryTotalMiB: count(),
            migMode: z.enum(['enabled', 'disabled', 'unsupported']),
            migDevices: z.array(MigDeviceSchema).max(7),
            processes: z.array(GpuProcessSchema).max(256),
          })
          .strict(),
      )
      .max(16),
    /**
     * The node's device holders by the kubelet's PodResources API (see GpuXidErrorDetail.holders):
     * absent when the agent could not read it (unknown, never "no pods").
     */
    holders: z.array(DeviceHolder).max(256).optional(),
  })
  .strict();
export type GpuInventoryDetail = z.infer<typeof GpuInventoryDetailSchema>;
