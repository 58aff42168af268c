/**
 * The device plugin's health (issue #32): `Device Plugin Mismatch` — the node agent's NVML sees GPUs the
 * node does not advertise (example: ./device-plugin-mismatch.example.json) — and `Device Plugin Action`,
 * what the functions did about it (example: ./device-plugin-action.example.json).
 */
import * as z from 'zod';
import { actorBase, agentBase, NodeName } from '../common.ts';

export const DEVICE_PLUGIN_MISMATCH = 'Device Plugin Mismatch';
export const DEVICE_PLUGIN_ACTION = 'Device Plugin Action';
/**
 * The NoSchedule taint the functions put on a node whose plugin stays wrong (functions/remediate/core/
 * plugin-health.ts). The agent reads it too: while it is on the node and the GPUs are advertised again,
 * the agent says so each minute, so a lost `resolved` or a restarted agent never leaves it held.
 */
export const DEVICE_PLUGIN_TAINT_KEY = 'gpu-reflex.io/device-plugin';

/**
 * How the node's GPUs are advertised, as the agent read it: NVIDIA's plugin whole (`exclusive`), with
 * MIG devices, time-sliced or MPS replicas (`nvidia.com/gpu.replicas`, renamed `nvidia.com/gpu.shared`),
 * or ACK's gpushare plugin (`cgpu`: `aliyun.com/gpu-count`, `aliyun.com/gpu-mem`).
 */
export const DEVICE_PLUGIN_MODES = ['exclusive', 'mig', 'time-slicing', 'mps', 'cgpu'] as const;
export type DevicePluginMode = (typeof DEVICE_PLUGIN_MODES)[number];

/** One advertised resource against what NVML's GPUs should give it. */
export const AdvertisedResource = z
  .object({
    /** `nvidia.com/gpu`, `nvidia.com/gpu.shared`, every `nvidia.com/` GPU resource summed with MIG (`nvidia.com/*`),
     * `aliyun.com/gpu-count`, `aliyun.com/gpu-mem`. */
    resource: z.string().min(1).max(253),
    /** What NVML's GPUs should give (GPUs × replicas, MIG devices; at least, for `aliyun.com/gpu-mem`). */
    expected: z.number().int().min(0),
    /** The node's capacity: what the plugin enumerates (healthy or not). */
    capacity: z.number().int().min(0),
    /** The node's allocatable: what the plugin reports healthy. */
    allocatable: z.number().int().min(0),
  })
  .strict();

export const DevicePluginMismatchDetailSchema = z
  .object({
    ...agentBase,
    /** firing: the node advertises fewer devices than NVML's GPUs give; resolved: it advertises them again. */
    state: z.enum(['firing', 'resolved']),
    mode: z.enum(DEVICE_PLUGIN_MODES),
    /** GPUs NVML answers for on the node. */
    gpus: z.number().int().min(0),
    resources: z.array(AdvertisedResource).min(1).max(16),
    /**
     * `capacity`: the plugin enumerates fewer devices than NVML has GPUs (the kubelet drops a dead plugin's
     * resource 5 min after it stops); `none-allocatable`: it reports none healthy (a dead or unregistered
     * plugin's devices are all unhealthy at once). Absent when resolved.
     */
    kind: z.enum(['capacity', 'none-allocatable']).optional(),
    message: z.string().max(1024),
    /** Known error lines of the plugin's log, when the agent could read it (NVML not found, CDI device not found). */
    pluginErrors: z.array(z.string().max(512)).max(8).optional(),
  })
  .strict();
export type DevicePluginMismatchDetail = z.infer<typeof DevicePluginMismatchDetailSchema>;

export const DEVICE_PLUGIN_STEPS = ['restart', 'taint', 'untaint', 'held'] as const;

export const DevicePluginActionDetailSchema = z
  .object({
    ...actorBase,
    node: NodeName,
    /**
     * `restart`: the plugin's pod on the node was evicted (its DaemonSet makes a new one); `taint`: still wrong
     * after the restart (or nothing to restart), the node tainted and a person told; `untaint`: advertised again,
     * the taint lifted; `held`: not restarted, because a restart would undo a GPU fence (the reason says which).
     */
    step: z.enum(DEVICE_PLUGIN_STEPS),
    reason: z.string().max(2048),
    /** The plugin pods evicted (`namespace/name`). */
    pods: z.array(z.string().max(400)).max(16),
    dryRun: z.boolean(),
  })
  .strict();
export type DevicePluginActionDetail = z.infer<typeof DevicePluginActionDetailSchema>;
