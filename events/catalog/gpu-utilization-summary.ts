/** `GPU Utilization Summary` — one event per window per node (example: ./gpu-utilization-summary.example.json). */
import * as z from 'zod';
import { agentBase, count, DeviceHolder, GpuUuid, MigProfile, MigUuid, Timestamp } from '../common.ts';

export const GPU_UTILIZATION_SUMMARY = 'GPU Utilization Summary';

/** Average and maximum over the window's samples. */
const Agg = z.object({ avg: z.number().min(0), max: z.number().min(0) }).strict();

export const GpuUtilizationSummaryDetailSchema = z
  .object({
    ...agentBase,
    windowStart: Timestamp,
    windowEnd: Timestamp,
    samples: count(),
    gpus: z
      .array(
        z
          .object({
            index: count(),
            uuid: GpuUuid,
            utilPercent: Agg.optional(),
            memoryUtilPercent: Agg.optional(),
            /** Absent: NVML gave no memory reading in the window (unknown, never 0 %). */
            framebufferUsedPercent: Agg.optional(),
            temperatureC: Agg.optional(),
            powerW: Agg.optional(),
            /** Per MIG device: NVML reports memory per instance; SM utilization needs GPM and is omitted. */
            migDevices: z
              .array(
                z
                  .object({
                    uuid: MigUuid.optional(),
                    gpuInstanceId: count(),
                    profile: MigProfile,
                    /** Absent: NVML gave no memory for the instance (unknown: idle-gpus never reads it as empty). */
                    framebufferUsedPercent: Agg.optional(),
                  })
                  .strict(),
              )
              .max(7),
          })
          .strict(),
      )
      .max(16),
    /**
     * Who holds the GPUs at the window's end by the kubelet's PodResources API (as GpuInventoryDetail.holders):
     * what idle-gpus reads to know whose allocation sits idle. Absent: unknown (never "nobody").
     */
    holders: z.array(DeviceHolder).max(256).optional(),
  })
  .strict();
export type GpuUtilizationSummaryDetail = z.infer<typeof GpuUtilizationSummaryDetailSchema>;
