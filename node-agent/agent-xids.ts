/**
 * The agent's XID path: an XID seen by NVML or in the kernel log (or an NVSwitch SXid there) becomes
 * one event, once. The same XID is usually seen twice, by NVML and in the kernel log: XidDeduper pairs the
 * two sightings within XID_DEDUPE_WINDOW_MS, the first is published (`via` says which source), the second
 * absorbed and only counted (gpu_reflex_xid_duplicates_total). It is never re-sent as `via: 'both'`: it has
 * left already, and a second event would be a second XID to consumers. Repeats from one source are new
 * occurrences: XidAggregator (xid-aggregate.ts) sends the first of a run of one application-class XID on one
 * GPU and pid at once and one event with a `count` per window for its repeats; an XID that can fence, reset
 * or drain is never held. Every sighting is recorded for the actuator's health probe (xid-log.ts). The event
 * names the pods, MIG instance, holders and sharing as of the agent's last sample (`view`). It returns what is
 * to be published; the agent publishes it.
 */
import { describeXid, xidStaysInInstance } from '../events/xid.ts';
import type { DeviceHolder, MigRef } from '../events/common.ts';
import type { AgentMetrics } from './agent-metrics.ts';
import type { HealthEvaluator } from './collectors/health.ts';
import { cardSharing, podOfPidOnGpu, podsOnGpu, type Inventory } from './collectors/inventory.ts';
import { holdersOfGpu } from './collectors/pod-resources-source.ts';
import type { GpuReading } from './collectors/reading.ts';
import { sxidEvent, xidEvent, type OutgoingEvent } from './events.ts';
import { XidDeduper } from './kmsg/dedupe.ts';
import { parseSxidLine } from './kmsg/parse-sxid.ts';
import { parseXidLine } from './kmsg/parse-xid.ts';
import type { KernelRecord } from './kmsg/record.ts';
import type { NvmlEvent } from './nvml/events.ts';
import type { PublisherLog } from './publisher/types.ts';
import type { NvmlSource } from './sources/nvml-source.ts';
import { XidAggregator, type XidOccurrence } from './xid-aggregate.ts';
import { XidLog } from './xid-log.ts';

/** The kernel log trails NVML by well under a second; 10 s leaves room for a slow kmsg poll. */
export const XID_DEDUPE_WINDOW_MS = 10_000;

/** XID 94: an uncorrected ECC error the driver contained (only the application was killed). */
const CONTAINED_ECC_XID = 94;

/** What the agent's last sample saw, which an XID's event names. */
export interface XidView {
  inventory: Inventory | undefined;
  readings: GpuReading[];
  holders: DeviceHolder[] | undefined;
}

export interface XidPathContext {
  nodeName: string;
  now: () => number;
  source: NvmlSource;
  evaluator: HealthEvaluator;
  metrics: AgentMetrics;
  log: PublisherLog;
  aggregateWindowMs: number;
  view: () => XidView;
}

export class XidPath {
  private readonly dedupe: XidDeduper;
  private readonly aggregate: XidAggregator;
  /** The XIDs published per GPU, for the actuator's health probe (xid-log.ts). */
  private readonly xids = new XidLog();

  constructor(private readonly c: XidPathContext) {
    this.dedupe = new XidDeduper({ windowMs: XID_DEDUPE_WINDOW_MS, now: c.now });
    this.aggregate = new XidAggregator({ windowMs: c.aggregateWindowMs });
  }

  private get source(): NvmlSource {
    return this.c.source;
  }
  private get inventory(): Inventory | undefined {
    return this.c.view().inventory;
  }
  private get readings(): GpuReading[] {
    return this.c.view().readings;
  }
  private get holders(): DeviceHolder[] | undefined {
    return this.c.view().holders;
  }

  /** Held XID repeats whose window closed (`all`: every one, at shutdown). */
  due(nowMs: number, all?: boolean): OutgoingEvent[] {
    return this.aggregate.due(nowMs, all);
  }

  /** The first /dev/kmsg record of an XID repeat held and not yet published (XidAggregator.heldFromRecord). */
  heldFromRecord(): number | undefined {
    return this.aggregate.heldFromRecord();
  }

  /** The XIDs seen for `gpuUuid` at or after `sinceMs` (the probe window's). */
  since(gpuUuid: string, sinceMs: number): number[] {
    return this.xids.since(gpuUuid, sinceMs);
  }

  /** An NVML XID event (already past the kernel log catch-up); returns what is to be published. */
  nvmlXid(e: Extract<NvmlEvent, { kind: 'event' }>, xid: number, now: number): OutgoingEvent[] {
    const gpu = this.source.byIndex(e.deviceIndex);
    if (!gpu) return [];
    if (!this.dedupe.admit(e.pciBusId, xid, 'nvml')) {
      this.c.metrics.xidDuplicate('nvml');
      return [];
    }
    if (xid === CONTAINED_ECC_XID) this.c.evaluator.containedEcc(gpu.uuid);
    const mig = this.migRef(gpu.uuid, e.gpuInstanceId, e.computeInstanceId);
    const recoveryAction = this.source.recoveryAction(gpu.index);
    const event = xidEvent(this.c.nodeName, now, {
      gpu,
      xid,
      via: 'nvml',
      pid: null,
      process: null,
      message: describeXid(xid).meaning,
      ...(mig ? { mig } : {}),
      ...(recoveryAction ? { recoveryAction } : {}),
      // A whole-GPU XID on a MIG instance affects every instance's pods (events/xid.ts INSTANCE_SCOPED_XIDS).
      podUids: podsOnGpu(this.inventory, gpu.uuid, xidStaysInInstance(xid) ? e.gpuInstanceId : undefined),
      ...(this.holders ? { holders: holdersOfGpu(this.holders, gpu.uuid) } : {}),
      ...this.sharingOf(gpu.uuid),
    });
    return this.sendXid(event, { gpuUuid: gpu.uuid, gpuInstanceId: e.gpuInstanceId, xid, pid: null }, 'nvml', now);
  }

  /**
   * A kernel-log line: an XID for a GPU of this node, or an NVSwitch SXid; anything else is ignored. `record`: what
   * the follower knows of its /dev/kmsg record, which names the event (the same record is the same event, read
   * twice) and, for one logged before the follower started, when it happened. The pairing with NVML, the
   * aggregation and the probe's log go by when the agent read it, as NVML's sightings do.
   */
  kernelLine(line: string, record: KernelRecord = {}): OutgoingEvent[] {
    const k = parseXidLine(line);
    if (!k) {
      // NVSwitch errors have no NVML event: the kernel log is their only source.
      const sxid = parseSxidLine(line);
      return sxid ? [sxidEvent(this.c.nodeName, record.loggedAtMs ?? this.c.now(), sxid, record.key)] : [];
    }
    const gpu = this.source.byPciBusId(k.pci);
    if (!gpu) {
      this.c.log.warn('kernel-log XID for a GPU NVML does not list; ignored', { pci: k.pci, xid: k.xid });
      return [];
    }
    const now = this.c.now();
    if (!this.dedupe.admit(k.pci, k.xid, 'kmsg')) {
      this.c.metrics.xidDuplicate('kmsg');
      return [];
    }
    if (k.xid === CONTAINED_ECC_XID) this.c.evaluator.containedEcc(gpu.uuid);
    const mig = this.migRef(gpu.uuid, k.gpuInstanceId);
    const recoveryAction = this.source.recoveryAction(gpu.index);
    const sharing = this.sharingOf(gpu.uuid);
    // Under MPS the kernel's pid may be the MPS server's (the control daemon's pod): no client is named.
    const culprit =
      describeXid(k.xid).fault === 'application' && sharing.sharing !== 'mps'
        ? podOfPidOnGpu(this.inventory, gpu.uuid, k.pid)
        : undefined;
    const event = xidEvent(this.c.nodeName, record.loggedAtMs ?? now, {
      gpu,
      xid: k.xid,
      via: 'kmsg',
      ...(record.key ? { record: record.key } : {}),
      pid: k.pid,
      // The catalog bounds these; a driver line is not.
      process: k.process === null ? null : k.process.slice(0, 256),
      message: k.message || k.meaning,
      ...(mig ? { mig } : {}),
      ...(recoveryAction ? { recoveryAction } : {}),
      ...(k.severity ? { severity: k.severity } : {}),
      ...(k.nvlink ? { nvlink: k.nvlink } : {}),
      // Every pod on the GPU (instance) is affected; an application XID is the named process's fault:
      // that pod alone is restarted and counted, while a quarantine still moves them all.
      podUids: podsOnGpu(this.inventory, gpu.uuid, xidStaysInInstance(k.xid) ? k.gpuInstanceId : undefined),
      ...(culprit ? { culpritUid: culprit } : {}),
      ...(this.holders ? { holders: holdersOfGpu(this.holders, gpu.uuid) } : {}),
      ...sharing,
    });
    return this.sendXid(
      event,
      {
        gpuUuid: gpu.uuid,
        gpuInstanceId: k.gpuInstanceId,
        xid: k.xid,
        pid: k.pid,
        ...(record.key ? { record: record.key.seq } : {}),
      },
      'kmsg',
      now,
    );
  }

  /** How the card looks shared in the latest inventory, as the XID event's `sharing` (issue #32). */
  private sharingOf(gpuUuid: string): { sharing?: 'mps' | 'time-slicing' } {
    const s = cardSharing(this.inventory, gpuUuid);
    return s ? { sharing: s } : {};
  }

  /** An XID's event, unless it repeats a run the aggregator holds; runs whose window closed go out first. */
  private sendXid(event: OutgoingEvent, o: XidOccurrence, via: 'nvml' | 'kmsg', now: number): OutgoingEvent[] {
    // Every sighting counts for the health probe's window, a repeat the aggregator holds included.
    this.xids.record(o.gpuUuid, o.xid, now);
    const closed = this.aggregate.due(now);
    if (!this.aggregate.admit(o, event, now)) return closed;
    this.c.metrics.xidPublished(via, now, o.gpuUuid, o.xid, this.source.gpus.find((g) => g.uuid === o.gpuUuid)?.index);
    return [...closed, event];
  }

  /** The MIG instance an event names, with its UUID and profile when the last sample saw it. */
  private migRef(gpuUuid: string, gi: number | undefined, ci?: number): MigRef | undefined {
    if (gi === undefined) return undefined;
    const devices = this.readings.find((r) => r.uuid === gpuUuid)?.migDevices ?? [];
    const m = devices.find((d) => d.gpuInstanceId === gi && (ci === undefined || d.computeInstanceId === ci));
    return {
      gpuInstanceId: gi,
      ...(ci === undefined ? {} : { computeInstanceId: ci }),
      ...(m?.uuid ? { uuid: m.uuid } : {}),
      ...(m ? { profile: m.profile } : {}),
    };
  }
}
