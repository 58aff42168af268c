/**
 * `GPU Idle Allocation` — idle-gpus found a GPU (or MIG device) allocated to a pod that does no work, or
 * acted on it (example: ./gpu-idle-allocation.example.json). One per idle run and state: `idle` when the run
 * reaches the policy's window (the owner is told), `evicted` when an opted-in namespace's deadline passed
 * with the device still idle, `cancelled` when utilization came back (or went unknown) before the deadline.
 */
import * as z from 'zod';
import { actorBase, count, GpuUuid, MigUuid, NodeName, Timestamp } from '../common.ts';

export const GPU_IDLE_ALLOCATION = 'GPU Idle Allocation';

export const IDLE_STATES = ['idle', 'evicted', 'cancelled'] as const;

export const GpuIdleAllocationDetailSchema = z
  .object({
    ...actorBase,
    state: z.enum(IDLE_STATES),
    node: NodeName,
    gpu: GpuUuid,
    /** The MIG device the pod holds on `gpu`, when it holds one rather than the whole GPU. */
    mig: MigUuid.optional(),
    pod: z.object({ namespace: z.string().min(1).max(63), name: z.string().min(1).max(253) }).strict(),
    /** The pod's team by the policy's team label; its namespace when it has none. */
    team: z.string().min(1).max(63),
    /** Start of the first window of this idle run. */
    idleSince: Timestamp,
    idleSeconds: count(),
    /** The policy that applied: under this (max over each window, utilization and memory activity) for this long. */
    thresholdPercent: z.number().min(0).max(100),
    windowSeconds: count(),
    /** What the idle time cost: GPU-hours (a MIG device counts its share of the GPU) × the price. Absent: no price. */
    cost: z
      .object({
        gpuHours: z.number().min(0),
        amount: z.number().min(0),
        currency: z.string().regex(/^[A-Z]{3}$/),
        pricePerGpuHour: z.number().min(0),
      })
      .strict()
      .optional(),
    /** When the pod is evicted if still idle: only where the namespace's policy opts in to eviction. */
    evictAt: Timestamp.optional(),
    reason: z.string().min(1).max(1024),
    dryRun: z.boolean(),
  })
  .strict();
export type GpuIdleAllocationDetail = z.infer<typeof GpuIdleAllocationDetailSchema>;
