/**
 * Turns what the collectors saw into catalog details, with deterministic event ids: the same
 * observation always gets the same id, so a replayed spool or a redelivery is deduplicated
 * downstream. Every detail is parsed against the catalog before it leaves (a malformed event is a
 * bug here, never the bus's problem).
 */
import { GPU_HEALTH_CHANGED, type GpuHealthChangedDetail } from '../events/catalog/gpu-health-changed.ts';
import { GPU_INVENTORY, type GpuInventoryDetail } from '../events/catalog/gpu-inventory.ts';
import {
  GPU_UTILIZATION_SUMMARY,
  type GpuUtilizationSummaryDetail,
} from '../events/catalog/gpu-utilization-summary.ts';
import { GPU_XID_ERROR, type GpuXidErrorDetail } from '../events/catalog/gpu-xid-error.ts';
import { GPU_ACTION_RESULT, type GpuActionResultDetail } from '../events/catalog/gpu-action.ts';
import { NVSWITCH_SXID_ERROR, type NvSwitchSxidErrorDetail } from '../events/catalog/nvswitch-sxid-error.ts';
import type { KernelSxid } from './kmsg/parse-sxid.ts';
import { recordTag, type KernelRecord } from './kmsg/record.ts';
import { SCHEMA_VERSION, SOURCES } from '../events/common.ts';
import { nvlinkDetail, type Nvlink5Words } from '../events/xid/nvlink5.ts';
import { validateDetail } from '../events/validate.ts';
import type { HealthEvent } from './collectors/health.ts';
import type { Inventory } from './collectors/inventory.ts';
import type { GpuRef } from './collectors/reading.ts';

export type Priority = 'critical' | 'normal' | 'bulk';

/** What the publisher sends: one PutEvents entry, already validated. */
export interface OutgoingEvent {
  source: string;
  detailType: string;
  detail: Record<string, unknown> & { eventId: string };
  time: Date;
  resources?: string[];
  priority: Priority;
}

export class InvalidEventError extends Error {
  override name = 'InvalidEventError';
  constructor(
    detailType: string,
    readonly problems: string[],
  ) {
    super(`refusing to send an invalid "${detailType}": ${problems.join('; ')}`);
  }
}

/**
 * The catalog check the publisher runs on every event before it is queued (PublisherDeps.check): the
 * problems of its detail against its detail-type's schema, `detail.count: …`; none when it is valid.
 * Events are built valid here, but some are changed after (an aggregated XID gets `count`).
 */
export function catalogProblems(event: Pick<OutgoingEvent, 'detailType' | 'detail'>): string[] {
  const r = validateDetail(event.detailType, event.detail);
  return r.ok ? [] : r.problems.map((p) => `${p.path}: ${p.message}`);
}

function outgoing(
  detailType: string,
  detail: Record<string, unknown> & { eventId: string },
  at: number,
  priority: Priority,
): OutgoingEvent {
  const r = validateDetail(detailType, detail);
  if (!r.ok)
    throw new InvalidEventError(
      detailType,
      r.problems.map((p) => `${p.path}: ${p.message}`),
    );
  return { source: SOURCES.agent, detailType, detail, time: new Date(at), priority };
}

export interface XidObservation {
  gpu: GpuRef;
  xid: number;
  via: GpuXidErrorDetail['via'];
  pid: number | null;
  process: string | null;
  message: string;
  mig?: GpuXidErrorDetail['mig'];
  recoveryAction?: GpuXidErrorDetail['recoveryAction'];
  severity?: GpuXidErrorDetail['severity'];
  /** NVLink5 XIDs: the kernel line's unit, link and words; the event carries NVIDIA's decode beside them. */
  nvlink?: Nvlink5Words;
  podUids: string[];
  /** The pod the kernel line's pid names, for an application XID (GpuXidErrorDetail.culprit). */
  culpritUid?: string;
  /** PodResources' holders of this GPU (GpuXidErrorDetail.holders); absent: unknown. */
  holders?: GpuXidErrorDetail['holders'];
  /** How the agent saw the card shared (GpuXidErrorDetail.sharing). */
  sharing?: GpuXidErrorDetail['sharing'];
  /** The /dev/kmsg record it was read from (kmsg/record.ts): the event's id names it instead of `at`. */
  record?: KernelRecord['key'];
}

/**
 * `…:<at>` for what has no identity of its own (an NVML event, a line of a log file), `…:k<boot>.<seq>` for a
 * /dev/kmsg record: read again after a restart, it is the same event.
 */
const occurrence = (at: number, record: KernelRecord['key']) => (record ? recordTag(record) : String(at));

export function xidEvent(node: string, at: number, o: XidObservation): OutgoingEvent {
  const detail: GpuXidErrorDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `xid:${node}:${o.gpu.uuid}:${o.xid}:${occurrence(at, o.record)}`,
    node,
    observedAt: new Date(at).toISOString(),
    gpu: o.gpu,
    ...(o.mig ? { mig: o.mig } : {}),
    xid: o.xid,
    via: o.via,
    pid: o.pid,
    process: o.process,
    message: o.message.slice(0, 1024),
    ...(o.recoveryAction ? { recoveryAction: o.recoveryAction } : {}),
    ...(o.severity ? { severity: o.severity } : {}),
    ...(o.nvlink ? { nvlink: nvlinkDetail(o.xid, o.nvlink) } : {}),
    pods: o.podUids.slice(0, 128).map((uid) => ({ uid })),
    ...(o.culpritUid ? { culprit: { uid: o.culpritUid } } : {}),
    ...(o.holders ? { holders: o.holders } : {}),
    ...(o.sharing ? { sharing: o.sharing } : {}),
  };
  return outgoing(GPU_XID_ERROR, detail, at, 'critical');
}

/** An NVSwitch error from the kernel log: fatal ones travel as alarms, non-fatal ones as news. */
export function sxidEvent(node: string, at: number, k: KernelSxid, record?: KernelRecord['key']): OutgoingEvent {
  const detail: NvSwitchSxidErrorDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `sxid:${node}:${k.switch}:${k.sxid}:${k.link ?? '-'}:${occurrence(at, record)}`,
    node,
    observedAt: new Date(at).toISOString(),
    switch: k.switch,
    pciBusId: k.pci,
    sxid: k.sxid,
    severity: k.severity,
    ...(k.link === undefined ? {} : { link: k.link }),
    message: k.message,
  };
  return outgoing(NVSWITCH_SXID_ERROR, detail, at, k.severity === 'fatal' ? 'critical' : 'normal');
}

const INFORMATIONAL: ReadonlySet<string> = new Set(['utilization-high', 'framebuffer-high', 'power']);

export function healthEvent(
  node: string,
  at: number,
  h: HealthEvent,
  podUids: string[] = [],
  holders?: GpuHealthChangedDetail['holders'],
): OutgoingEvent {
  const subject = h.gpu?.uuid ?? 'node';
  const detail: GpuHealthChangedDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `health:${node}:${subject}:${h.condition}:${h.state}:${at}`,
    node,
    observedAt: new Date(at).toISOString(),
    ...h,
    ...(podUids.length && h.state === 'firing' ? { pods: podUids.slice(0, 128).map((uid) => ({ uid })) } : {}),
    ...(holders && h.gpu && h.state === 'firing' ? { holders } : {}),
  };
  // Informational crossings (load, not faults) travel with inventory's priority, not as alarms.
  return outgoing(GPU_HEALTH_CHANGED, detail, at, INFORMATIONAL.has(h.condition) ? 'normal' : 'critical');
}

export function utilizationEvent(
  node: string,
  at: number,
  s: Omit<GpuUtilizationSummaryDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>,
): OutgoingEvent {
  const detail: GpuUtilizationSummaryDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `util:${node}:${Date.parse(s.windowStart)}`,
    node,
    observedAt: new Date(at).toISOString(),
    ...s,
  };
  return outgoing(GPU_UTILIZATION_SUMMARY, detail, at, 'bulk');
}

export function inventoryEvent(node: string, at: number, inv: Inventory): OutgoingEvent {
  const detail: GpuInventoryDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `inventory:${node}:${at}`,
    node,
    observedAt: new Date(at).toISOString(),
    ...inv,
  };
  return outgoing(GPU_INVENTORY, detail, at, 'normal');
}

/**
 * `GPU Action Result`: the actuator answered a GPU action the functions asked for (critical: a restore waits on it).
 */
export function gpuActionResultEvent(detail: GpuActionResultDetail): OutgoingEvent {
  return outgoing(GPU_ACTION_RESULT, detail, Date.parse(detail.observedAt), 'critical');
}
