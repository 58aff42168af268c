import * as z from 'zod';
import { Duration, FaultSchema, Name, PodArrivalSchema } from './scenario-fields.ts';

/** A scenario's timeline steps (scenario.ts `timeline`), each chosen by its key. */

const FaultStep = z
  .object({
    at: Duration,
    node: Name,
    gpu: z.number().int().nonnegative(),
    fault: FaultSchema,
    note: z.string().optional(),
  })
  .strict();
const PodsStep = z.object({ at: Duration, pods: PodArrivalSchema, note: z.string().optional() }).strict();
/**
 * Another writer of a node's ACK unhealthy-devices file replaces it whole (ACK's node-problem-detector
 * before 1.2.35 did, on its own detections; a person can): `index` entries as given, `gpus` as those
 * GPUs' UUIDs; an empty step empties the file. Scripted adversity (infra/local/ack-fence-file.ts).
 */
const FenceFileStep = z
  .object({
    at: Duration,
    node: Name,
    fenceFile: z
      .object({
        index: z.array(z.number().int().nonnegative()).max(64).optional(),
        gpus: z.array(z.number().int().nonnegative()).max(64).optional(),
        by: z.string().min(1).max(80).default('another writer'),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
/**
 * From this step on, GPU `gpu` of `node` does not come back from the node's next reboot: a GPU that
 * fell off the bus (a `gpuLost` fault on it at or before this step) and stays off it after the power
 * cycle — NVIDIA's resolution for an XID 79 that persists after a reboot is to replace the hardware
 * (XID catalog, RESTART_BM). NVML no longer lists it, and the device plugin no longer enumerates it
 * (the node's capacity drops by one GPU). Scripted adversity (stack.ts onReboot).
 */
const AfterRebootStep = z
  .object({
    at: Duration,
    node: Name,
    gpu: z.number().int().nonnegative(),
    afterReboot: z.literal('missing'),
    note: z.string().optional(),
  })
  .strict();
/**
 * Another writer of ACK gpushare's ConfigMap `kube-system/unhealthy-gpu-<node>` replaces its `gpus`
 * whole, as written (`null`: drops the key). Scripted adversity (infra/local/kube/gpushare.ts).
 */
const UnhealthyCardsStep = z
  .object({
    at: Duration,
    node: Name,
    unhealthyCards: z
      .object({
        gpus: z.string().max(256).nullable(),
        by: z.string().min(1).max(80).default('another writer'),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
/**
 * Whoever gated pods lifts their gates (Kueue admitting the workload): every scheduling gate of the
 * pods `name` or `name-<i>` in `namespace` is removed, as the gate's owner does (pod-scheduling-readiness).
 */
const UngateStep = z
  .object({
    at: Duration,
    ungate: z.object({ namespace: Name, name: Name, by: z.string().min(1).max(80).default('Kueue') }).strict(),
    note: z.string().optional(),
  })
  .strict();
export type UngateStepT = z.infer<typeof UngateStep>;
/**
 * A node joins the cluster (a person or a provisioner outside the scenario's cloud adds it): a Node with
 * these labels and allocatable, Ready. A GPU node makes the GPU Operator reconcile its ClusterPolicy
 * (clusterpolicy_controller.go addWatchNewGPUNode; the simulated one in kube/mig-manager.ts). No agent
 * runs on it: it is the cluster's object only.
 */
const JoinStep = z
  .object({
    at: Duration,
    join: z
      .object({
        node: Name,
        labels: z.record(z.string(), z.string()).default({}),
        allocatable: z.record(z.string(), z.union([z.string(), z.number()])).default({}),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
export type JoinStepT = z.infer<typeof JoinStep>;
/**
 * The node's device plugin breaks (issue #32): it stops serving, so the kubelet marks its devices unhealthy
 * (allocatable 0) and drops its resource 5 min later (capacity 0), with `log` lines in its pod's log. A new
 * plugin pod (its DaemonSet's, after the old one is deleted) serves again, unless `persistent` (the cause is
 * the node's: a missing driver library, a stale CDI spec). Scripted adversity (infra/local/device-plugin.ts).
 */
const DevicePluginStep = z
  .object({
    at: Duration,
    node: Name,
    devicePlugin: z
      .object({
        breaks: z.literal(true),
        log: z.array(z.string().min(1).max(400)).max(8).default([]),
        persistent: z.boolean().default(false),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
export type DevicePluginStepT = z.infer<typeof DevicePluginStep>;
/** A narration line printed at its time: tells the reader what to look for next. */
const NoteStep = z.object({ at: Duration, note: z.string().min(1) }).strict();
export type TimelineStep =
  | z.infer<typeof FaultStep>
  | z.infer<typeof PodsStep>
  | z.infer<typeof NvmlStepSchema>
  | z.infer<typeof FenceFileStep>
  | z.infer<typeof AfterRebootStep>
  | z.infer<typeof UnhealthyCardsStep>
  | z.infer<typeof UngateStep>
  | JoinStepT
  | z.infer<typeof DevicePluginStep>
  | z.infer<typeof NoteStep>;
export type AfterRebootStepT = z.infer<typeof AfterRebootStep>;
export type FenceFileStepT = z.infer<typeof FenceFileStep>;

/**
 * A step's kind is chosen by its key (`fault`, `pods`, else a note), then that schema alone is
 * applied, so errors name the field (`timeline.0.fault.xid: ...`) instead of "Invalid input".
 */
export const TimelineStepSchema = z.unknown().transform((v, ctx): TimelineStep => {
  const o = typeof v === 'object' && v !== null ? v : {};
  const schema =
    'fault' in o
      ? FaultStep
      : 'pods' in o
        ? PodsStep
        : 'nvml' in o
          ? NvmlStepSchema
          : 'fenceFile' in o
            ? FenceFileStep
            : 'afterReboot' in o
              ? AfterRebootStep
              : 'unhealthyCards' in o
                ? UnhealthyCardsStep
                : 'ungate' in o
                  ? UngateStep
                  : 'join' in o
                    ? JoinStep
                    : 'devicePlugin' in o
                      ? DevicePluginStep
                      : NoteStep;
  const r = schema.safeParse(v);
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ code: 'custom', message: i.message, path: i.path });
  return z.NEVER;
});
export type FaultStepT = z.infer<typeof FaultStep>;
export type NvmlStepT = z.infer<typeof NvmlStepSchema>;
export type PodsStepT = z.infer<typeof PodsStep>;

/** Per-node NVML overrides: fields merged into the generated GPUs (by index) and extra GPUs. */
const GpuOverride = z.record(z.string(), z.unknown());
export const NvmlNodeOverride = z
  .object({
    driverVersion: z.string().optional(),
    cudaVersion: z.number().int().optional(),
    gpus: z.record(z.string().regex(/^\d+$/, 'must be a GPU index'), GpuOverride).optional(),
    extraGpus: z.array(GpuOverride).optional(),
  })
  .strict();

/**
 * Maintenance on a node: its NVML changes (a driver upgrade, MIG mode switched on a GPU), fields
 * merged into what the node had, and its agent restarts, as both take a GPU reset or a reboot on a
 * real node. Faults of that node still to come keep their scenario times.
 */
const NvmlStepSchema = z
  .object({ at: Duration, node: Name, nvml: NvmlNodeOverride, note: z.string().optional() })
  .strict();
