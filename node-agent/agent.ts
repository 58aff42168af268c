/**
 * The node agent as explicit steps, so tests drive it without timers (agent-runtime.ts loops
 * them on real ones):
 *
 *  - `sampleOnce(nowMs)`: sample every GPU → inventory (published when it changed, or every
 *    `inventoryIntervalMs`) → health crossings → utilization summary when a window closes;
 *  - `pollEventsOnce(timeoutMs)`: one NVML event wait. An XID is published (pods and MIG instance
 *    from the latest inventory, the GPU's recovery action read now); a lost GPU, ECC, DRAM
 *    retirement or recovery-action event triggers a sample at once, so its health crossing goes
 *    out without waiting for the next tick;
 *  - `onKernelLine(line)`: a kernel-log XID, found by PCI bus id.
 *
 * The same XID is usually seen twice, by NVML and in the kernel log. XidDeduper pairs the two
 * sightings within XID_DEDUPE_WINDOW_MS: the first one is published (`via` says which source),
 * the second is absorbed and only counted (gpu_reflex_xid_duplicates_total). The event is never
 * re-sent as `via: 'both'`: it has already left, and a second event would be a second XID to
 * consumers. Repeats from one source are new occurrences: XidAggregator (xid-aggregate.ts) sends
 * the first of a run of one application-class XID on one GPU and pid at once and one event with a
 * `count` per window for its repeats; an XID that can fence, reset or drain is never held.
 */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { describeXid, xidStaysInInstance } from '../events/xid.ts';
import type { GpuRef, MigRef } from '../events/common.ts';
import { noAgentMetrics, type AgentMetrics } from './agent-metrics.ts';
import { HealthEvaluator, type EccMemory, type HealthEvent, type HealthThresholds } from './collectors/health.ts';
import {
  buildInventory,
  cardSharing,
  inventoryKey,
  podOfPidOnGpu,
  podsOnGpu,
  type Inventory,
} from './collectors/inventory.ts';
import { PodResolver } from './collectors/pods.ts';
import {
  deviceHolders,
  holdersOfGpu,
  type GpuIdentity,
  type PodResourcesSource,
} from './collectors/pod-resources-source.ts';
import type { DeviceHolder } from '../events/common.ts';
import type { GpuReading } from './collectors/reading.ts';
import { UtilizationWindow } from './collectors/utilization.ts';
import { healthEvent, inventoryEvent, sxidEvent, utilizationEvent, xidEvent, type OutgoingEvent } from './events.ts';
import type { AgentHealth } from './http.ts';
import { XidDeduper } from './kmsg/dedupe.ts';
import { XID_AGGREGATE_WINDOW_MS, XidAggregator, type XidOccurrence } from './xid-aggregate.ts';
import { parseXidLine } from './kmsg/parse-xid.ts';
import { parseSxidLine } from './kmsg/parse-sxid.ts';
import { XidLog } from './xid-log.ts';
import { NVML_EVENT, type NvmlEvent, type NvmlEventWatcher, type NvmlEventWatcherOptions } from './nvml/events.ts';
import { NvmlError, type Nvml } from './nvml/nvml.ts';
import { silentLog, type PublisherLog } from './publisher/types.ts';
import { NvmlSource } from './sources/nvml-source.ts';

/** Where events go: the Publisher, or stdout in a dry run. Must not block or throw. */
export interface EventSink {
  publish(event: OutgoingEvent): unknown;
}

/** XID critical errors, plus the events that mean "sample now": ECC, DRAM retirement, recovery action. */
export const AGENT_EVENT_MASK =
  NVML_EVENT.xidCriticalError |
  NVML_EVENT.singleBitEcc |
  NVML_EVENT.doubleBitEcc |
  NVML_EVENT.dramRetirement |
  NVML_EVENT.dramRetirementFailure |
  NVML_EVENT.gpuRecoveryAction;

/** The kernel log trails NVML by well under a second; 10 s leaves room for a slow kmsg poll. */
export const XID_DEDUPE_WINDOW_MS = 10_000;
/** An SBE storm must not turn into a sample per event: at most one event-triggered sample per second. */
export const EVENT_SAMPLE_MIN_GAP_MS = 1_000;

export interface AgentOptions {
  nodeName: string;
  nvml: Nvml;
  sink: EventSink;
  /** Wall-clock milliseconds: event times, windows, dedupe. */
  now: () => number;
  procRoot: string;
  thresholds: HealthThresholds;
  utilizationWindowMs: number;
  inventoryIntervalMs: number;
  /** XID_AGGREGATE_WINDOW_MS (default 60 s): how long repeats of an application XID are held. */
  xidAggregateWindowMs?: number;
  /** false (`--once`): no NVML event set is created. */
  watchEvents?: boolean;
  watcher?: NvmlEventWatcherOptions;
  metrics?: AgentMetrics;
  health?: AgentHealth;
  log?: PublisherLog;
  /**
   * Where the last-seen uncorrected-ECC counters are kept across restarts (beside the spool). None:
   * in memory only, and a restart re-reports an old count as new errors.
   */
  eccStatePath?: string;
  /**
   * Where the GPUs this node has had are remembered (beside the spool), so one that NVML no longer
   * lists at start — it fell off the bus before the agent could watch it — is reported
   * (`gpu-missing`) instead of silently not being there.
   */
  gpuMemoryPath?: string;
  /**
   * How many GPUs this node should have (EXPECTED_GPUS: its instance type's). NVML listing fewer at
   * start fires `gpu-count` — the one way to see a GPU that was gone before any agent ran here.
   */
  expectedGpus?: number;
  /**
   * The kernel-log follower: before an NVML XID is published, the agent lets it read what the
   * kernel logged meanwhile (at most KMSG_CATCH_UP_MS), so the kernel's line — with the pid, the
   * process and an NVLink5 XID's Fatal/Nonfatal — is the first sighting when it exists.
   */
  kernelLog?: { catchUp(timeoutMs: number): Promise<boolean> };
  /**
   * The kubelet's PodResources API (collectors/pod-resources-source.ts), read at each sample: which
   * pods hold which GPU. None, or unreadable: the events carry no `holders` (unknown).
   */
  podResources?: PodResourcesSource;
}

/** How long an NVML XID waits for the kernel log to be read; the line is usually there already. */
export const KMSG_CATCH_UP_MS = 100;

/** XID 94: an uncorrected ECC error the driver contained (only the application was killed). */
const CONTAINED_ECC_XID = 94;

/** A small state file replaced whole: written beside it, renamed over it (never half a file). */
function replaceFile(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

function readEccState(path: string): EccMemory {
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as EccMemory) : {};
  } catch {
    return {}; // first start, or unreadable: counting starts over
  }
}

export class Agent {
  readonly source: NvmlSource;
  readonly watcher: NvmlEventWatcher | undefined;
  private readonly evaluator: HealthEvaluator;
  private readonly window: UtilizationWindow;
  private readonly pods: PodResolver;
  private readonly dedupe: XidDeduper;
  private readonly aggregate: XidAggregator;
  private readonly metrics: AgentMetrics;
  /** The XIDs published per GPU, for the actuator's health probe (xid-log.ts). */
  private readonly xids = new XidLog();
  private readonly log: PublisherLog;
  private inventory: Inventory | undefined;
  /** Device holders by PodResources as of the last sample; undefined: unknown. */
  private holders: DeviceHolder[] | undefined;
  /** Why PodResources was last unreadable (logged once per change). */
  private podResourcesProblem: string | undefined;
  private eccSaved: string;
  /** gpu-missing events (and their resolutions) found at start, sent with the first sample. */
  private pendingGpuReport: HealthEvent[];
  private inventoryKey: string | undefined;
  private inventorySentAt = -Infinity;
  private readings: GpuReading[] = [];
  private lastSampleAt = -Infinity;
  /** Failures in a row: only the first of a run is logged, so a broken driver does not flood. */
  private sampleFailures = 0;
  private waitFailures = 0;
  /** Samples run one at a time (the timer and an event may both ask for one). */
  private sampling: Promise<unknown> = Promise.resolve();

  constructor(private readonly o: AgentOptions) {
    this.metrics = o.metrics ?? noAgentMetrics;
    this.log = o.log ?? silentLog;
    this.source = new NvmlSource(o.nvml);
    for (const index of this.source.unnamed)
      this.log.warn('GPU lost before the agent could name it; it is not monitored', { index });
    this.evaluator = new HealthEvaluator(o.thresholds);
    if (o.eccStatePath) this.evaluator.restoreEcc(readEccState(o.eccStatePath));
    this.pendingGpuReport = [...(o.gpuMemoryPath ? this.compareGpus(o.gpuMemoryPath) : []), ...this.compareCount()];
    this.eccSaved = JSON.stringify(this.evaluator.eccMemory());
    this.window = new UtilizationWindow(o.utilizationWindowMs, o.now());
    this.pods = new PodResolver(o.procRoot);
    this.dedupe = new XidDeduper({ windowMs: XID_DEDUPE_WINDOW_MS, now: o.now });
    this.aggregate = new XidAggregator({ windowMs: o.xidAggregateWindowMs ?? XID_AGGREGATE_WINDOW_MS });
    if (o.watchEvents ?? true) {
      this.watcher = o.nvml.events(AGENT_EVENT_MASK, o.watcher);
      for (const s of this.watcher.skipped)
        this.log.warn('no NVML events from this GPU', { index: s.index, reason: s.reason });
    }
  }

  /** The last event wait failed: the caller should pause before the next (it returned at once). */
  get eventWaitFailing(): boolean {
    return this.waitFailures > 0;
  }

  /** The inventory as of the last sample (pods per GPU for XIDs and health events). */
  get latestInventory(): Inventory | undefined {
    return this.inventory;
  }

  /** One sample of every GPU; returns what it published. */
  sampleOnce(nowMs: number = this.o.now()): Promise<OutgoingEvent[]> {
    const run = this.sampling.then(() => this.sample(nowMs));
    this.sampling = run.catch(() => undefined);
    return run;
  }

  private async sample(nowMs: number): Promise<OutgoingEvent[]> {
    this.lastSampleAt = nowMs;
    const result = this.source.sample();
    if (!result.ok) {
      this.metrics.nvmlError(result.reason);
      if (++this.sampleFailures === 1) this.log.warn('sampling the GPUs failed', { error: String(result.error) });
      // What NVML did not answer is absent from /metrics, not frozen at its last value.
      await this.metrics.gpusSampled({ gpus: this.source.gpus, samples: [] });
      const crossings = this.evaluator.sampleFailed(result.reason);
      if (crossings.some((h) => h.state === 'firing'))
        this.o.health?.setNvmlHealthy(false, `NVML sampling fails: ${result.reason}`);
      return this.emit(crossings.map((h) => healthEvent(this.o.nodeName, nowMs, h)));
    }
    for (const e of result.fieldErrors ?? []) this.metrics.nvmlError(e);
    if (this.sampleFailures > 0) this.log.info('sampling the GPUs works again', { failedSamples: this.sampleFailures });
    this.sampleFailures = 0;
    this.o.health?.setNvmlHealthy(true);
    const previous = this.inventory;
    this.readings = result.readings;
    const out: OutgoingEvent[] = [];
    // A lost GPU answers nothing: inventory lists the GPUs that can take work.
    const live = result.readings.filter((r) => !r.lost);
    const podOfPid = await this.pods.resolve(live.flatMap((r) => (r.processes ?? []).map((p) => p.pid)));
    // Every GPU, a lost one too (its holders still hold it; its MIG devices as last seen).
    this.holders = await this.readHolders(
      result.readings.map((r) => ({
        uuid: r.uuid,
        migDevices: r.migDevices ?? previous?.gpus.find((g) => g.uuid === r.uuid)?.migDevices ?? [],
      })),
    );
    this.metrics.holdersSampled(this.holders, (uuid) => this.source.gpus.find((g) => g.uuid === uuid)?.index);
    const inv = {
      ...buildInventory(this.source.system, live, podOfPid),
      ...(this.holders ? { holders: this.holders } : {}),
    };
    const key = inventoryKey(inv);
    this.inventory = inv;
    await this.metrics.gpusSampled({
      gpus: this.source.gpus,
      samples: result.samples,
      inventory: inv,
      driverVersion: this.source.system.driverVersion,
    });
    if (key !== this.inventoryKey || nowMs - this.inventorySentAt >= this.o.inventoryIntervalMs) {
      this.inventoryKey = key;
      this.inventorySentAt = nowMs;
      out.push(inventoryEvent(this.o.nodeName, nowMs, inv));
    }
    for (const h of this.evaluator.evaluate(result.readings, nowMs))
      out.push(
        healthEvent(
          this.o.nodeName,
          nowMs,
          h,
          this.podsFor(h, previous),
          h.gpu && this.holders ? holdersOfGpu(this.holders, h.gpu.uuid) : undefined,
        ),
      );
    for (const h of this.pendingGpuReport.splice(0)) out.push(healthEvent(this.o.nodeName, nowMs, h));
    this.saveEcc();
    const summary = this.window.add(result.readings, nowMs);
    // With the holders as of this sample: idle-gpus tells whose allocation sat idle (absent: unknown).
    if (summary) out.push(utilizationEvent(this.o.nodeName, nowMs, this.withHolders(summary)));
    // Held XID repeats whose window closed (a quiet GPU sends no XID that would release them).
    out.push(...this.aggregate.due(nowMs));
    return this.emit(out);
  }

  /** PodResources' holders of this node's GPUs now; undefined when it cannot be read (unknown). */
  private async readHolders(gpus: readonly GpuIdentity[]): Promise<DeviceHolder[] | undefined> {
    if (!this.o.podResources) return undefined;
    const r = await this.o.podResources.read();
    if (!r.known) {
      if (r.reason !== this.podResourcesProblem)
        this.log.warn('PodResources not readable: which pods hold a GPU is unknown', { reason: r.reason });
      this.podResourcesProblem = r.reason;
      return undefined;
    }
    const { holders, unmatched } = deviceHolders(r.pods, gpus);
    // A GPU device the agent cannot name by UUID: who holds which GPU is unknown, not "nobody".
    const problem =
      unmatched.length > 0 ? `GPU devices that name no GPU here: ${unmatched.slice(0, 4).join(', ')}` : undefined;
    if (problem !== this.podResourcesProblem) {
      if (problem) this.log.warn('PodResources not usable: which pods hold a GPU is unknown', { reason: problem });
      else this.log.info('PodResources readable again');
    }
    this.podResourcesProblem = problem;
    return problem ? undefined : holders.slice(0, 256);
  }

  /** The GPUs as of the last sample, with their MIG devices: what PodResources device IDs are matched to. */
  gpuIdentities(): GpuIdentity[] {
    return (this.inventory?.gpus ?? []).map((g) => ({ uuid: g.uuid, migDevices: g.migDevices ?? [] }));
  }

  /** The XIDs this agent published for `gpuUuid` at or after `sinceMs` (the probe window's). */
  xidsSince(gpuUuid: string, sinceMs: number): number[] {
    return this.xids.since(gpuUuid, sinceMs);
  }

  /** The pod (UID) a GPU process belongs to, as the last inventory resolved it; undefined when unknown. */
  podOfPid(pid: number): string | undefined {
    for (const g of this.inventory?.gpus ?? []) {
      const p = g.processes.find((x) => x.pid === pid);
      if (p) return p.podUid;
    }
    return undefined;
  }

  /** Pods on the GPU now, or, for a GPU just lost (no longer in the inventory), as last seen. */
  private podsFor(h: HealthEvent, previous: Inventory | undefined): string[] {
    if (!h.gpu) return [];
    const now = podsOnGpu(this.inventory, h.gpu.uuid);
    return now.length > 0 ? now : podsOnGpu(previous, h.gpu.uuid);
  }

  /** One NVML event wait of at most `timeoutMs`; returns what it published. */
  async pollEventsOnce(timeoutMs: number): Promise<OutgoingEvent[]> {
    if (!this.watcher) return [];
    let event: NvmlEvent | null;
    try {
      event = await this.watcher.wait(timeoutMs);
    } catch (err) {
      if (!(err instanceof NvmlError)) throw err;
      this.metrics.nvmlError(err.nvmlName);
      if (++this.waitFailures === 1) this.log.warn('waiting for NVML events failed', { error: err.message });
      return [];
    }
    this.waitFailures = 0;
    if (!event) return [];
    const now = this.o.now();
    if (event.kind === 'gpu-lost') {
      this.log.error('GPU lost', { index: event.deviceIndex, uuid: event.uuid, pciBusId: event.pciBusId });
      return this.sampleOnce(now);
    }
    if (event.xid !== undefined) {
      await this.o.kernelLog?.catchUp(KMSG_CATCH_UP_MS);
      return this.nvmlXid(event, event.xid, now);
    }
    // ECC, retirement, recovery action: the counters the sample reads just moved.
    return now - this.lastSampleAt >= EVENT_SAMPLE_MIN_GAP_MS ? this.sampleOnce(now) : [];
  }

  private nvmlXid(e: Extract<NvmlEvent, { kind: 'event' }>, xid: number, now: number): OutgoingEvent[] {
    const gpu = this.source.byIndex(e.deviceIndex);
    if (!gpu) return [];
    if (!this.dedupe.admit(e.pciBusId, xid, 'nvml')) {
      this.metrics.xidDuplicate('nvml');
      return [];
    }
    if (xid === CONTAINED_ECC_XID) this.evaluator.containedEcc(gpu.uuid);
    const mig = this.migRef(gpu.uuid, e.gpuInstanceId, e.computeInstanceId);
    const recoveryAction = this.source.recoveryAction(gpu.index);
    const event = xidEvent(this.o.nodeName, now, {
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
   * GPUs remembered from earlier runs that NVML does not list now fire `gpu-missing`; ones that were
   * missing and are back resolve it. The memory keeps every GPU ever seen here (a GPU removed on
   * purpose: delete the file).
   */
  private compareGpus(path: string): HealthEvent[] {
    let memory: { gpus: GpuRef[]; missing: string[] } = { gpus: [], missing: [] };
    try {
      const raw = JSON.parse(readFileSync(path, 'utf8')) as { gpus?: GpuRef[]; missing?: string[] };
      memory = {
        gpus: Array.isArray(raw.gpus) ? raw.gpus : [],
        missing: Array.isArray(raw.missing) ? raw.missing : [],
      };
    } catch {
      // first start on this node: nothing to compare with
    }
    const now = new Set(this.source.gpus.map((g) => g.uuid));
    const out: HealthEvent[] = [];
    const missing: string[] = [];
    for (const g of memory.gpus) {
      if (now.has(g.uuid)) {
        if (memory.missing.includes(g.uuid))
          out.push({
            gpu: g,
            condition: 'gpu-missing',
            state: 'resolved',
            severity: 'info',
            message: `GPU ${g.uuid} is listed by NVML again`,
          });
        continue;
      }
      missing.push(g.uuid);
      if (!memory.missing.includes(g.uuid)) {
        out.push({
          gpu: g,
          condition: 'gpu-missing',
          state: 'firing',
          severity: 'critical',
          message:
            `GPU ${g.index} (${g.uuid}, PCI ${g.pciBusId}) was on this node and NVML no longer lists ` +
            `it: ${this.source.gpus.length} GPUs now, ${memory.gpus.length} before`,
          value: this.source.gpus.length,
          threshold: memory.gpus.length,
          unit: 'GPUs',
        });
      }
    }
    const known = new Set(memory.gpus.map((g) => g.uuid));
    const gpus = [
      ...memory.gpus,
      ...this.source.gpus
        .filter((g) => !known.has(g.uuid))
        .map((g) => ({ index: g.index, uuid: g.uuid, pciBusId: g.pciBusId, name: g.name })),
    ];
    try {
      replaceFile(path, JSON.stringify({ gpus, missing }));
    } catch (err) {
      this.log.warn('GPU memory not saved', { path, error: String(err) });
    }
    return out;
  }

  /**
   * NVML's GPU count against EXPECTED_GPUS. Firing each start while short (the functions deduplicate
   * it as one open incident); resolved at a start with enough, when the last start was short (kept
   * beside the GPU memory, or in the process only without it).
   */
  private compareCount(): HealthEvent[] {
    const expected = this.o.expectedGpus;
    const path = this.o.gpuMemoryPath ? `${this.o.gpuMemoryPath}.count` : undefined;
    let wasShort = false;
    try {
      wasShort = path !== undefined && readFileSync(path, 'utf8').trim() === 'short';
    } catch {
      // never short before
    }
    const seen = this.source.gpus.length + this.source.unnamed.length;
    const short = expected !== undefined && seen < expected;
    if (path && short !== wasShort) {
      try {
        replaceFile(path, short ? 'short' : 'ok');
      } catch (err) {
        this.log.warn('GPU count state not saved', { path, error: String(err) });
      }
    }
    if (short)
      return [
        {
          condition: 'gpu-count',
          state: 'firing',
          severity: 'critical',
          message:
            `NVML lists ${seen} GPU${seen === 1 ? '' : 's'}; this node should have ${expected} ` +
            `(EXPECTED_GPUS): ${expected! - seen} missing since before the agent started`,
          value: seen,
          threshold: expected,
          unit: 'GPUs',
        },
      ];
    return wasShort
      ? [
          {
            condition: 'gpu-count',
            state: 'resolved',
            severity: 'info',
            message: `NVML lists ${seen} GPUs again, as this node should have`,
            value: seen,
            unit: 'GPUs',
          },
        ]
      : [];
  }

  /** Writes the ECC counters when they moved (temporary file renamed over the old: never half a file). */
  private saveEcc(): void {
    const path = this.o.eccStatePath;
    const now = JSON.stringify(this.evaluator.eccMemory());
    if (!path || now === this.eccSaved) return;
    try {
      replaceFile(path, now);
      this.eccSaved = now;
    } catch (err) {
      this.log.warn('ECC counters not saved', { path, error: String(err) });
    }
  }

  /** A kernel-log line: an XID for a GPU of this node, or an NVSwitch SXid; anything else is ignored. */
  onKernelLine(line: string): OutgoingEvent[] {
    const k = parseXidLine(line);
    if (!k) {
      // NVSwitch errors have no NVML event: the kernel log is their only source.
      const sxid = parseSxidLine(line);
      return sxid ? this.emit([sxidEvent(this.o.nodeName, this.o.now(), sxid)]) : [];
    }
    const gpu = this.source.byPciBusId(k.pci);
    if (!gpu) {
      this.log.warn('kernel-log XID for a GPU NVML does not list; ignored', { pci: k.pci, xid: k.xid });
      return [];
    }
    const now = this.o.now();
    if (!this.dedupe.admit(k.pci, k.xid, 'kmsg')) {
      this.metrics.xidDuplicate('kmsg');
      return [];
    }
    if (k.xid === CONTAINED_ECC_XID) this.evaluator.containedEcc(gpu.uuid);
    const mig = this.migRef(gpu.uuid, k.gpuInstanceId);
    const recoveryAction = this.source.recoveryAction(gpu.index);
    const sharing = this.sharingOf(gpu.uuid);
    // Under MPS the kernel's pid may be the MPS server's (the control daemon's pod): no client is named.
    const culprit =
      describeXid(k.xid).fault === 'application' && sharing.sharing !== 'mps'
        ? podOfPidOnGpu(this.inventory, gpu.uuid, k.pid)
        : undefined;
    const event = xidEvent(this.o.nodeName, now, {
      gpu,
      xid: k.xid,
      via: 'kmsg',
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
      { gpuUuid: gpu.uuid, gpuInstanceId: k.gpuInstanceId, xid: k.xid, pid: k.pid },
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
    if (!this.aggregate.admit(o, event, now)) return this.emit(closed);
    this.metrics.xidPublished(via, now, o.gpuUuid, o.xid, this.source.gpus.find((g) => g.uuid === o.gpuUuid)?.index);
    return this.emit([...closed, event]);
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

  /** A utilization summary with the PodResources holders as last read; none when unknown. */
  private withHolders<S extends object>(summary: S): S & { holders?: DeviceHolder[] } {
    return this.holders ? { ...summary, holders: this.holders } : summary;
  }

  /** Shutdown: the utilization window so far, as one last summary, and every held XID repeat. */
  flush(nowMs: number = this.o.now()): OutgoingEvent[] {
    const summary = this.window.flush(nowMs);
    return this.emit([
      ...(summary ? [utilizationEvent(this.o.nodeName, nowMs, this.withHolders(summary))] : []),
      ...this.aggregate.due(nowMs, true),
    ]);
  }

  /** Stops event watching (lets an in-flight wait finish its slice). Call BEFORE `nvml.close()`. */
  async close(): Promise<void> {
    await this.sampling;
    await this.watcher?.close();
  }

  private emit(events: OutgoingEvent[]): OutgoingEvent[] {
    for (const e of events) this.o.sink.publish(e);
    return events;
  }
}
