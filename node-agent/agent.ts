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
 *  - `onKernelLine(line, record)`: a kernel-log XID, found by PCI bus id, named by its /dev/kmsg record.
 *
 * The XID path (one event per XID seen by NVML and in the kernel log, repeats held): agent-xids.ts; what is
 * compared at start and the ECC counters kept, agent-start-checks.ts; the options, agent-options.ts.
 */
import type { DeviceHolder } from '../events/common.ts';
import { noAgentMetrics, type AgentMetrics } from './agent-metrics.ts';
import { AGENT_EVENT_MASK, EVENT_SAMPLE_MIN_GAP_MS, KMSG_CATCH_UP_MS, type AgentOptions } from './agent-options.ts';
import { compareGpuCount, compareGpuMemory, EccFile } from './agent-start-checks.ts';
import { XidPath } from './agent-xids.ts';
import type { KernelRecord } from './kmsg/record.ts';
import { HealthEvaluator, type HealthEvent } from './collectors/health.ts';
import { buildInventory, inventoryKey, podsOnGpu, type Inventory } from './collectors/inventory.ts';
import { PodResolver } from './collectors/pods.ts';
import { holdersOfGpu, type GpuIdentity } from './collectors/pod-resources-source.ts';
import { HolderReader } from './agent-holders.ts';
import type { GpuReading } from './collectors/reading.ts';
import { UtilizationWindow } from './collectors/utilization.ts';
import { healthEvent, inventoryEvent, utilizationEvent, type OutgoingEvent } from './events.ts';
import { XID_AGGREGATE_WINDOW_MS } from './xid-aggregate.ts';
import type { NvmlEvent, NvmlEventWatcher } from './nvml/events.ts';
import { NvmlError } from './nvml/nvml.ts';
import { silentLog, type PublisherLog } from './publisher/types.ts';
import { MigModeWatch } from './collectors/mig-mode-watch.ts';
import { NvmlSource } from './sources/nvml-source.ts';

export {
  AGENT_EVENT_MASK,
  EVENT_SAMPLE_MIN_GAP_MS,
  KMSG_CATCH_UP_MS,
  type AgentOptions,
  type EventSink,
} from './agent-options.ts';
export { XID_DEDUPE_WINDOW_MS } from './agent-xids.ts';

export class Agent {
  readonly source: NvmlSource;
  readonly watcher: NvmlEventWatcher | undefined;
  private readonly evaluator: HealthEvaluator;
  private readonly window: UtilizationWindow;
  private readonly pods: PodResolver;
  /** XIDs and SXids from NVML and the kernel log, deduplicated and aggregated (agent-xids.ts). */
  private readonly xid: XidPath;
  private readonly metrics: AgentMetrics;
  private readonly log: PublisherLog;
  /** PodResources' holders, read at each sample (agent-holders.ts). */
  private readonly holderReader: HolderReader;
  private inventory: Inventory | undefined;
  /** Whether every GPU's MIG mode was read: unknown, no inventory is published (collectors/mig-mode-watch.ts). */
  private readonly migMode: MigModeWatch;
  /** Device holders by PodResources as of the last sample; undefined: unknown. */
  private holders: DeviceHolder[] | undefined;
  private readonly ecc: EccFile;
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
    this.holderReader = new HolderReader(o.podResources, this.log);
    this.migMode = new MigModeWatch(this.log);
    this.source = new NvmlSource(o.nvml);
    for (const index of this.source.unnamed)
      this.log.warn('GPU lost before the agent could name it; it is not monitored', { index });
    this.evaluator = new HealthEvaluator(o.thresholds);
    this.ecc = new EccFile(o.eccStatePath, this.evaluator, this.log);
    this.pendingGpuReport = [
      ...(o.gpuMemoryPath ? compareGpuMemory(o.gpuMemoryPath, this.source, this.log) : []),
      ...compareGpuCount(o.expectedGpus, o.gpuMemoryPath, this.source, this.log),
    ];
    this.window = new UtilizationWindow(o.utilizationWindowMs, o.now());
    this.pods = new PodResolver(o.procRoot);
    this.xid = new XidPath({
      nodeName: o.nodeName,
      now: o.now,
      source: this.source,
      evaluator: this.evaluator,
      metrics: this.metrics,
      log: this.log,
      aggregateWindowMs: o.xidAggregateWindowMs ?? XID_AGGREGATE_WINDOW_MS,
      view: () => ({ inventory: this.inventory, readings: this.readings, holders: this.holders }),
    });
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
    return this.migMode.known ? this.inventory : undefined;
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
      // Held XID repeats whose window closed go out all the same: they need no NVML, and a wedged driver is when
      // they matter (held on, they would wait for the driver to answer again, or be lost with the process).
      return this.emit([...crossings.map((h) => healthEvent(this.o.nodeName, nowMs, h)), ...this.xid.due(nowMs)]);
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
    this.holders = await this.holderReader.read(
      result.readings.map((r) => ({ uuid: r.uuid, ...(r.lost ? {} : { migDevices: r.migDevices ?? [] }) })),
    );
    this.metrics.holdersSampled(this.holders, (uuid) => this.source.gpus.find((g) => g.uuid === uuid)?.index);
    const inv = {
      ...buildInventory(this.source.system, live, podOfPid),
      ...(this.holders ? { holders: this.holders } : {}),
    };
    const key = inventoryKey(inv);
    this.inventory = inv;
    this.migMode.update(live);
    await this.metrics.gpusSampled({
      gpus: this.source.gpus,
      samples: result.samples,
      inventory: inv,
      driverVersion: this.source.system.driverVersion,
    });
    if (
      this.migMode.known &&
      (key !== this.inventoryKey || nowMs - this.inventorySentAt >= this.o.inventoryIntervalMs)
    ) {
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
    this.ecc.save();
    const summary = this.window.add(result.readings, nowMs);
    // With the holders as of this sample: idle-gpus tells whose allocation sat idle (absent: unknown).
    if (summary) out.push(utilizationEvent(this.o.nodeName, nowMs, this.withHolders(summary)));
    // Held XID repeats whose window closed (a quiet GPU sends no XID that would release them).
    out.push(...this.xid.due(nowMs));
    return this.emit(out);
  }

  /** The GPUs as of the last sample, with their MIG devices: what PodResources device IDs are matched to. */
  gpuIdentities(): GpuIdentity[] {
    return (this.inventory?.gpus ?? []).map((g) => ({ uuid: g.uuid, migDevices: g.migDevices ?? [] }));
  }

  /**
   * The XIDs this agent published for `gpuUuid` at or after `sinceMs` (the probe window's); `unknown` (why) when
   * none of them could reach it now: the GPU is not in NVML's event set for XIDs and no kernel log is read. An empty
   * list from a GPU nobody watches is no evidence that it raised none.
   */
  xidsSince(gpuUuid: string, sinceMs: number): number[] | { unknown: string } {
    const kmsg = this.o.kernelLog !== undefined && this.o.kernelLog.ended !== true;
    if (!kmsg && !this.watcher?.watchesXids(gpuUuid))
      return {
        unknown:
          'its XIDs reach the agent neither from NVML ' +
          `(${this.watcher ? 'the GPU is not in its event set' : 'no event set'}) ` +
          `nor from the kernel log (${this.o.kernelLog ? 'no longer read' : 'not read'})`,
      };
    return this.xid.since(gpuUuid, sinceMs);
  }

  /** The pod (UID) a GPU process belongs to, as the last inventory resolved it; undefined when unknown. */
  podOfPid(pid: number): string | undefined {
    return this.inventory?.gpus.flatMap((g) => g.processes).find((p) => p.pid === pid)?.podUid;
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
    if (event.kind === 'gpu-watched') {
      this.log.info('NVML events from this GPU again', { index: event.deviceIndex, uuid: event.uuid });
      return [];
    }
    if (event.xid !== undefined) {
      await this.o.kernelLog?.catchUp(KMSG_CATCH_UP_MS);
      return this.emit(this.xid.nvmlXid(event, event.xid, now));
    }
    // ECC, retirement, recovery action: the counters the sample reads just moved.
    return now - this.lastSampleAt >= EVENT_SAMPLE_MIN_GAP_MS ? this.sampleOnce(now) : [];
  }

  /** A kernel-log line (an XID of a GPU of this node, an SXid; else ignored), with its /dev/kmsg record's word. */
  onKernelLine(line: string, record?: KernelRecord): OutgoingEvent[] {
    return this.emit(this.xid.kernelLine(line, record));
  }

  /**
   * The first /dev/kmsg record (sequence number) of an XID repeat the agent holds and has not published; undefined:
   * none. The kernel-log cursor stays before it (kmsg/follow.ts): a kill must not lose what is held.
   */
  heldKernelRecord(): number | undefined {
    return this.xid.heldFromRecord();
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
      ...this.xid.due(nowMs, true),
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
