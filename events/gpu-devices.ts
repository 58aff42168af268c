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
 */
import * as z from 'zod';
import { GpuUuid, Timestamp } from './common.ts';

export const GPU_DEVICES_ANNOTATION = 'gpu-reflex.io/allocatable-devices';

export const GpuDevicesSchema = z
  .object({
    v: z.literal(1),
    at: Timestamp,
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
