/**
 * Building blocks shared by every detail schema: identifiers as NVML and Kubernetes spell them,
 * timestamps, and the fields every detail carries (`schemaVersion`, `eventId`).
 */
import * as z from 'zod';

/** Describes a received value for messages: `"79"`, `an object`, `nothing`. */
export function describeValue(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  const text = JSON.stringify(v);
  return text.length > 60 ? text.slice(0, 57) + '...' : text;
}

/** An integer whose type error reads `expected integer, got "79"`. */
export const int = () =>
  z.int({
    error: (iss) => (iss.code === 'invalid_type' ? `expected integer, got ${describeValue(iss.input)}` : undefined),
  });
export const count = () => int().min(0);

/** ISO-8601 UTC timestamp, as EventBridge and NVML-side clocks are recorded: `2026-11-21T03:12:45.120Z`. */
export const Timestamp = z.iso.datetime({ offset: false });

/** NVML UUID of a physical GPU: `GPU-` + a UUID. */
export const GpuUuid = z
  .string()
  .regex(
    /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
    'expected a GPU UUID like GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b',
  );
/** NVML UUID of a MIG device (`MIG-` + UUID; older drivers: `MIG-GPU-<uuid>/<gi>/<ci>`). */
export const MigUuid = z
  .string()
  .regex(
    /^MIG-(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|GPU-[0-9a-f-]{36}\/\d+\/\d+)$/i,
    'expected a MIG UUID like MIG-…',
  );
/** NVML's PCI bus id: domain:bus:device.function, `00000000:3B:00.0`. */
export const PciBusId = z
  .string()
  .regex(/^[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]$/, 'expected an NVML PCI bus id like 00000000:3B:00.0');
/** A Kubernetes node name (DNS-1123 subdomain). */
export const NodeName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'expected a Kubernetes node name');
/** A MIG profile name as nvidia-smi prints it: `1g.10gb`, `1g.10gb+me`, `3g.40gb`. */
export const MigProfile = z
  .string()
  .regex(/^\d+g\.\d+gb(\+me|\+me\.all|-me|\+gfx)?$/, 'expected a MIG profile like 1g.10gb');

/** Deterministic id chosen by the producer, so consumers can deduplicate redelivery and replay. */
export const EventId = z
  .string()
  .min(8)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'expected an event id of letters, digits, ".", "_", ":" or "-"');

export const SCHEMA_VERSION = 1;
/** Every detail starts with these. */
export const detailBase = {
  schemaVersion: z.literal(SCHEMA_VERSION),
  eventId: EventId,
};

/**
 * Fields of agent-produced details: which node saw it and when (the agent's clock; a kernel-log record logged before
 * the agent started: when the kernel logged it, docs/node-agent.md "Kernel log at start").
 */
export const agentBase = {
  ...detailBase,
  node: NodeName,
  observedAt: Timestamp,
};

/** Fields of function- and chat-produced details. */
export const actorBase = {
  ...detailBase,
  occurredAt: Timestamp,
};

/** A physical GPU as the agent names it in events. */
export const GpuRef = z
  .object({
    index: count(),
    uuid: GpuUuid,
    pciBusId: PciBusId,
    name: z.string().min(1).max(96),
  })
  .strict();
export type GpuRef = z.infer<typeof GpuRef>;

/** A MIG instance, when the event names one (NVML gives 0xFFFFFFFF otherwise: then omitted). */
export const MigRef = z
  .object({
    gpuInstanceId: count(),
    computeInstanceId: count().optional(),
    uuid: MigUuid.optional(),
    profile: MigProfile.optional(),
  })
  .strict();
export type MigRef = z.infer<typeof MigRef>;

/** A pod using a GPU. From the agent only the UID is certain (pid → cgroup); name when known. */
export const PodRef = z
  .object({
    uid: z.string().min(1).max(64),
    namespace: z.string().min(1).max(63).optional(),
    name: z.string().min(1).max(253).optional(),
  })
  .strict();
export type PodRef = z.infer<typeof PodRef>;

/**
 * A pod the kubelet's PodResources API (`List`, kubernetes/kubelet pkg/apis/podresources/v1/api.proto)
 * says holds a device: by namespace and name (the API names no pod UID). A device-plugin device has
 * its resource name and device ID (the GPU UUID, a MIG UUID, `<UUID>::<n>` for a time-sliced
 * replica), with the GPU (and MIG instance) the agent found it to be through NVML; a DRA device has
 * its claim and driver/pool/device, which only the node's ResourceSlice maps to a GPU UUID.
 */
export const DeviceHolder = z
  .object({
    namespace: z.string().min(1).max(63),
    name: z.string().min(1).max(253),
    resource: z.string().min(1).max(253).optional(),
    deviceId: z.string().min(1).max(128).optional(),
    /** The GPU the device is (or is on), when the agent matched the device ID to one NVML lists. */
    gpu: GpuUuid.optional(),
    /** The MIG device, when the device ID is one. */
    mig: MigUuid.optional(),
    dra: z
      .object({
        claim: z.string().min(1).max(253),
        claimNamespace: z.string().min(1).max(63),
        driver: z.string().min(1).max(63),
        pool: z.string().min(1).max(253),
        device: z.string().min(1).max(128),
      })
      .strict()
      .optional(),
  })
  .strict();
export type DeviceHolder = z.infer<typeof DeviceHolder>;

export const SOURCES = {
  agent: 'gpu-reflex.node-agent',
  functions: 'gpu-reflex.functions',
  chatops: 'gpu-reflex.chatops',
} as const;
export type EventSource = (typeof SOURCES)[keyof typeof SOURCES];
