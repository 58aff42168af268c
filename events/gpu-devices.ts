/**
 * The node annotation `gpu-reflex.io/allocatable-devices` (issue #27): which device IDs of each GPU
 * the kubelet counts allocatable now, as the node agent's actuator reads them from the kubelet's
 * PodResources API (`GetAllocatableResources`, /var/lib/kubelet/pod-resources/kubelet.sock — how
 * dcgm-exporter maps devices; kubernetes.io "Monitor Device Plugin Resources"). Device IDs are NVIDIA's
 * plugin's: the GPU UUID, a MIG device's UUID, a time-sliced replica `<UUID>::<n>`
 * (NVIDIA/k8s-device-plugin internal/rm/device_map.go).
 *
 * It lets the functions verify a fence under NVIDIA's plugin by identity — *this* GPU has no device
 * left allocatable — where the Node's allocatable only gives a count (any other device out passes a
 * count). `known: false` (no socket, the kubelet not answering, device IDs that name no GPU here):
 * unknown, which never verifies a fence. The actuator writes it (a JSON merge patch of that key)
 * whenever what it says changes; `at` is when it last did.
 *
 * `checked` is when the agent last confirmed it. While a GPU of the node is out ([]) — what a
 * verified fence rests on — the agent re-confirms at least every GPU_DEVICES_RECONFIRM_MS even when
 * nothing changed, and the functions read a word older than GPU_DEVICES_STALE_MS as unknown: an agent
 * that died keeps no fence verified by its last word (a device plugin that restarts meanwhile
 * re-advertises every device). An agent from before `checked` (none written) is read as before.
 */
import * as z from 'zod';
import { GpuUuid, Timestamp } from './common.ts';

export const GPU_DEVICES_ANNOTATION = 'gpu-reflex.io/allocatable-devices';
/** How often the agent re-confirms the annotation while a GPU of its node is out. */
export const GPU_DEVICES_RECONFIRM_MS = 2 * 60_000;
/** A confirmation older than this is no evidence: five re-confirmations missed. */
export const GPU_DEVICES_STALE_MS = 5 * GPU_DEVICES_RECONFIRM_MS;

export const GpuDevicesSchema = z
  .object({
    v: z.literal(1),
    at: Timestamp,
    /** When the agent last confirmed what it says (absent: an agent from before it did). */
    checked: Timestamp.optional(),
    known: z.boolean(),
    /** known false: why, in words. */
    reason: z.string().max(256).optional(),
    /** Per GPU UUID on the node: its device IDs the kubelet counts allocatable now ([] = none: it is out). */
    gpus: z.record(GpuUuid, z.array(z.string().min(1).max(128)).max(64)),
  })
  .strict();
export type GpuDevices = z.infer<typeof GpuDevicesSchema>;

/** The annotation, or undefined when absent or not readable (both: unknown). */
export function readGpuDevices(annotations: Readonly<Record<string, string>>): GpuDevices | undefined {
  const raw = annotations[GPU_DEVICES_ANNOTATION];
  if (raw === undefined) return undefined;
  try {
    const parsed = GpuDevicesSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
