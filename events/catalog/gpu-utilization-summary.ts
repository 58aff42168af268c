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
    /**
     * How long the agent went without a sample inside the window, by its own clock: the stretches between two
     * samples (the window's start and end counting as such) longer than two windows, summed; 0: sampled
     * throughout (docs/node-agent.md). A stall (the agent's event loop blocked, NVML hanging or failing every
     * sample, the process stopped) ends in a window that spans it with only the samples taken before it: its
     * avg/max do not speak for that time. idle-gpus counts nothing in a window with unsampled time idle, and
     * nothing in a summary without this field (an agent older than it cannot say: docs/cost.md).
     */
    unsampledMs: count().optional(),
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
