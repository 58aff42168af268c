/**
 * `GPU Health Changed` — a threshold crossing, sent once per crossing with hysteresis (example:
 * ./gpu-health-changed.example.json).
 */
import * as z from 'zod';
import { GPU_RECOVERY_ACTIONS } from '../xid.ts';
import { agentBase, DeviceHolder, GpuRef, MigRef, PodRef } from '../common.ts';

export const GPU_HEALTH_CHANGED = 'GPU Health Changed';

export const HEALTH_CONDITIONS = [
  'temperature',
  /** HBM temperature against the GPU's own memory limit (NVML_FI_DEV_MEMORY_TEMP). */
  'memory-temperature',
  'power',
  'utilization-high',
  'framebuffer-high',
  'ecc-uncorrected',
  'retired-pages-pending',
  'row-remap-pending',
  'row-remap-failure',
  'throttling',
  'nvlink-down',
  /** NVLink CRC errors or replays above their per-minute limits, or a link recovery (down and back). */
  'nvlink-errors',
  /** PCIe link narrower than it can be, or slower while the GPU is busy. */
  'pcie-link-degraded',
  /** NVLink fabric registration (HGX/NVSwitch) failed, stalled, or runs with degraded bandwidth. */
  'fabric',
  /** SRAM uncorrectable errors passed NVIDIA's field-diag threshold: the GPU is an RMA candidate (XID 48's test). */
  'sram-threshold-exceeded',
  'gpu-lost',
  /** A GPU this node had that NVML no longer lists (fell off the bus before the agent started, or was removed). */
  'gpu-missing',
  /**
   * The node has fewer GPUs than it should (EXPECTED_GPUS, e.g. its instance type's): a node-level fact, no GPU to
   * name.
   */
  'gpu-count',
  'recovery-action',
  /** The agent itself cannot see (NVML hung or failing): never a hardware verdict. */
  'monitoring-degraded',
] as const;
export type HealthCondition = (typeof HEALTH_CONDITIONS)[number];

export const GpuHealthChangedDetailSchema = z
  .object({
    ...agentBase,
    /** Absent only for what concerns the whole node: `monitoring-degraded` (NVML not answering), `gpu-count`. */
    gpu: GpuRef.optional(),
    mig: MigRef.optional(),
    condition: z.enum(HEALTH_CONDITIONS),
    state: z.enum(['firing', 'resolved']),
    severity: z.enum(['info', 'warning', 'critical']),
    value: z.number().optional(),
    threshold: z.number().optional(),
    unit: z.string().max(16).optional(),
    message: z.string().max(1024),
    recoveryAction: z.enum(GPU_RECOVERY_ACTIONS).optional(),
    pods: z.array(PodRef).max(128).optional(),
    /** Who holds the GPU by the kubelet's PodResources (GpuXidErrorDetail.holders); absent: unknown. */
    holders: z.array(DeviceHolder).max(128).optional(),
  })
  .strict()
  .refine((d) => d.gpu !== undefined || d.condition === 'monitoring-degraded' || d.condition === 'gpu-count', {
    path: ['gpu'],
    message: 'required unless condition is monitoring-degraded or gpu-count',
  });
export type GpuHealthChangedDetail = z.infer<typeof GpuHealthChangedDetailSchema>;
