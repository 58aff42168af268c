import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { open } from 'node:fs/promises';
import { describeXid } from '../../events/xid.ts';
import type { Clock } from '../../node-agent/clock.ts';
import { HealthEvaluator } from '../../node-agent/collectors/health.ts';
import { buildInventory, inventoryKey } from '../../node-agent/collectors/inventory.ts';
import { PodResolver } from '../../node-agent/collectors/pods.ts';
import type { GpuReading, GpuRef } from '../../node-agent/collectors/reading.ts';
import { healthEvent, inventoryEvent, xidEvent, type OutgoingEvent } from '../../node-agent/events.ts';
import { XidDeduper } from '../../node-agent/kmsg/dedupe.ts';
import { parseXidLine } from '../../node-agent/kmsg/parse-xid.ts';
import { loadMockNvmlControls, type MockNvmlControls } from '../../node-agent/nvml/ffi.ts';
import { NVML_EVENT, type NvmlEventWatcher } from '../../node-agent/nvml/events.ts';
import { Nvml } from '../../node-agent/nvml/nvml.ts';
import { sampleDevice, type GpuSampleResult } from '../../node-agent/nvml/sample.ts';
import { openPublisher } from '../../node-agent/publisher/open-publisher.ts';
import type { Publisher } from '../../node-agent/publisher/publisher.ts';
import { sdkSender } from '../../node-agent/publisher/sdk-sender.ts';
import type { NodeFiles } from './node-files.ts';

/**
 * One node's agent, in-process, stepped by the stack: the stand-in for the agent's own main loop
 * until `gpu-reflex agent` exists (branch `agent`). It is built only from the agent's modules —
 * the koffi NVML binding on this node's copy of the mock library, the NVML event watcher, the
 * kernel-log XID parser and deduper, pid → cgroup → pod resolution, the health evaluator, the
 * catalog event builders and the real publisher (spool, batching, the AWS SDK's PutEvents to the
 * bus) — so every event on the bus came through the same code a DaemonSet pod runs.
 *
 * Time: the mock library runs on its manual clock; `step(ms)` moves it (and fires the scenario's
 * faults), then the host drains NVML events, reads new kernel-log lines and samples when due.
 */
export interface AgentHostOptions {
  files: NodeFiles;
  busUrl: string;
  busName: string;
  region: string;
  sampleIntervalMs: number;
  /** The publisher's clock (batch windows, retries): a FakeClock the stack advances, or systemClock. */
  clock: Clock;
  /** Seen by the stack's log, e.g. "NVML opened: 8 GPUs". */
  log?: (line: string) => void;
}

const MASK = NVML_EVENT.xidCriticalError | NVML_EVENT.doubleBitEcc | NVML_EVENT.dramRetirement | NVML_EVENT.dramRetirementFailure | NVML_EVENT.gpuRecoveryAction;

function toReading(s: GpuSampleResult, ref: GpuRef): GpuReading {
  if (s.state === 'lost') return { ...ref, lost: true };
  return {
    ...ref,
    ...(s.utilization ? { utilPercent: s.utilization.gpu, memoryUtilPercent: s.utilization.memory } : {}),
    ...(s.memory ? { memoryUsedMiB: s.memory.usedMiB, memoryTotalMiB: s.memory.totalMiB } : {}),
    ...(s.temperatureC !== undefined ? { temperatureC: s.temperatureC } : {}),
    ...(s.powerW !== undefined ? { powerW: s.powerW } : {}),
    ...(s.powerLimitW !== undefined ? { powerLimitW: s.powerLimitW } : {}),
    ...(s.ecc ? { eccUncorrectedVolatile: s.ecc.volatileUncorrected } : {}),
    ...(s.retiredPagesPending !== undefined ? { retiredPagesPending: s.retiredPagesPending } : {}),
    ...(s.remappedRows ? { remappedRows: s.remappedRows } : {}),
    ...(s.clockEventReasons ? { throttleReasons: s.clockEventReasons.reasons } : {}),
    ...(s.nvlinks ? { nvlinkActive: s.nvlinks.map((l) => l.active) } : {}),
    ...(s.recoveryAction?.action ? { recoveryAction: s.recoveryAction.action } : {}),
    migMode: s.migMode ? (s.migMode.current ? 'enabled' : 'disabled') : 'unsupported',
    ...(s.migDevices
      ? { migDevices: s.migDevices.map((m) => ({ uuid: m.uuid, gpuInstanceId: m.gpuInstanceId, computeInstanceId: m.computeInstanceId, profile: m.profile ?? 'unknown', placement: m.placement ?? { start: 0, size: 0 }, ...(m.memoryMiB !== undefined ? { memoryTotalMiB: m.memoryMiB } : {}) })) }
      : {}),
    ...(s.processes ? { processes: s.processes.map((p) => ({ pid: p.pid, ...(p.usedMiB !== undefined ? { usedMiB: p.usedMiB } : {}), ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId } : {}) })) } : {}),
  };
}

export class LocalAgentHost {
  private readonly refs: GpuRef[] = [];
  private readonly lastReadings = new Map<number, GpuReading>();
  private readonly health = new HealthEvaluator();
  private readonly pods: PodResolver;
  private readonly dedupe: XidDeduper;
  private lastSampleAt = -Infinity;
  private lastInventory = '';
  private kmsgOffset = 0;
  private sampleNow = false;
  private closed = false;
  readonly published: OutgoingEvent[] = [];

  private constructor(
    private readonly o: AgentHostOptions,
    private readonly mock: MockNvmlControls,
    private readonly nvml: Nvml,
    private readonly watcher: NvmlEventWatcher,
    private readonly publisher: Publisher,
  ) {
    this.pods = new PodResolver(o.files.procRoot);
    this.dedupe = new XidDeduper({ windowMs: 10_000, now: () => o.clock.now() });
    for (const d of nvml.devices()) this.refs.push({ index: d.index, uuid: d.uuid(), pciBusId: d.pci().busId, name: d.name() });
  }

  static async start(o: AgentHostOptions): Promise<LocalAgentHost> {
    const mock = loadMockNvmlControls(o.files.libraryPath);
    mock.setScenario(o.files.scenarioPath);
    mock.setManualClock(true);
    const nvml = Nvml.open({ libraryPath: o.files.libraryPath });
    const watcher = nvml.events(MASK, { sliceMs: 0 });
    const client = new EventBridgeClient({ endpoint: o.busUrl, region: o.region, maxAttempts: 1, credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
    const publisher = await openPublisher({ busName: o.busName, spoolPath: o.files.spoolPath, spoolMaxBytes: 64 * 1024 * 1024, deadLetterPath: o.files.deadLetterPath, send: sdkSender(client), clock: o.clock });
    const host = new LocalAgentHost(o, mock, nvml, watcher, publisher);
    o.log?.(`NVML ${nvml.driverVersion()}: ${host.refs.length} GPUs (${host.refs[0]?.name ?? 'none'})`);
    await host.sample();
    return host;
  }

  /** Mock NVML milliseconds since the agent started (= scenario time). */
  get mockNowMs(): number {
    return this.mock.nowMs();
  }

  /** Moves this node's NVML time by `ms`, then does what the agent's loops would have done. */
  async step(ms: number): Promise<void> {
    if (ms > 0) this.mock.advanceMs(ms);
    for (let e = await this.watcher.wait(0); e !== null; e = await this.watcher.wait(0)) {
      if (e.kind === 'gpu-lost' || e.xid === undefined) {
        this.sampleNow = true; // lost, ECC, page retirement, recovery action: the sample reports it
        continue;
      }
      if (!this.dedupe.admit(e.pciBusId, e.xid, 'nvml')) continue;
      const ref = this.refs[e.deviceIndex];
      if (!ref) continue;
      const podUids = await this.podsOnGpu(e.deviceIndex, e.gpuInstanceId);
      const mig = e.gpuInstanceId !== undefined ? { gpuInstanceId: e.gpuInstanceId, ...(e.computeInstanceId !== undefined ? { computeInstanceId: e.computeInstanceId } : {}) } : undefined;
      this.publish(xidEvent(this.o.files.node, this.o.clock.now(), { gpu: ref, xid: e.xid, via: 'nvml', pid: null, process: null, message: `XID ${e.xid}: ${describeXid(e.xid).meaning}`, ...(mig ? { mig } : {}), podUids }));
    }
    await this.readKernelLog();
    if (this.sampleNow || this.o.clock.now() - this.lastSampleAt >= this.o.sampleIntervalMs) await this.sample();
  }

  private async podsOnGpu(index: number, gpuInstanceId?: number): Promise<string[]> {
    const procs = (this.lastReadings.get(index)?.processes ?? []).filter((p) => gpuInstanceId === undefined || p.gpuInstanceId === gpuInstanceId);
    const uids = await this.pods.resolve(procs.map((p) => p.pid));
    return [...new Set([...uids.values()].filter((u): u is string => u !== undefined))];
  }

  private async readKernelLog(): Promise<void> {
    const fh = await open(this.o.files.kmsgPath, 'r');
    try {
      const { size } = await fh.stat();
      if (size <= this.kmsgOffset) return;
      const buf = Buffer.alloc(size - this.kmsgOffset);
      await fh.read(buf, 0, buf.length, this.kmsgOffset);
      const text = buf.toString('utf8');
      const end = text.lastIndexOf('\n') + 1; // a half-written line waits for the next read
      this.kmsgOffset += Buffer.byteLength(text.slice(0, end));
      for (const line of text.slice(0, end).split('\n')) {
        const x = parseXidLine(line);
        if (!x || !this.dedupe.admit(x.pci, x.xid, 'kmsg')) continue;
        const ref = this.refs.find((r) => r.pciBusId.toUpperCase() === x.pci.toUpperCase());
        if (!ref) continue;
        const uid = x.pid !== null ? (await this.pods.resolve([x.pid])).get(x.pid) : undefined;
        const podUids = uid ? [uid] : await this.podsOnGpu(ref.index, x.gpuInstanceId);
        this.publish(xidEvent(this.o.files.node, this.o.clock.now(), { gpu: ref, xid: x.xid, via: 'kmsg', pid: x.pid, process: x.process, message: line.slice(line.indexOf('NVRM:')), ...(x.gpuInstanceId !== undefined ? { mig: { gpuInstanceId: x.gpuInstanceId } } : {}), podUids }));
      }
    } finally {
      await fh.close();
    }
  }

  private async sample(): Promise<void> {
    const now = this.o.clock.now();
    this.lastSampleAt = now;
    this.sampleNow = false;
    const readings = this.refs.map((ref) => toReading(sampleDevice(this.nvml, ref.index), ref));
    for (const r of readings) if (!r.lost) this.lastReadings.set(r.index, r);
    for (const h of this.health.evaluate(readings, now)) {
      const uids = h.gpu ? await this.podsOnGpu(h.gpu.index) : [];
      this.publish(healthEvent(this.o.files.node, now, h, uids));
    }
    const live = readings.filter((r) => !r.lost);
    const podOfPid = await this.pods.resolve(live.flatMap((r) => r.processes ?? []).map((p) => p.pid));
    const inv = buildInventory({ driverVersion: this.nvml.driverVersion() }, live, podOfPid);
    const key = inventoryKey(inv);
    if (key !== this.lastInventory) {
      this.lastInventory = key;
      this.publish(inventoryEvent(this.o.files.node, now, inv));
    }
  }

  private publish(e: OutgoingEvent): void {
    this.published.push(e);
    const r = this.publisher.publish(e);
    if (!r.ok) this.o.log?.(`publish refused: ${r.error.message}`);
  }

  /** Resolves once the publisher has nothing in flight (what it could send was sent). */
  whenIdle(): Promise<void> {
    return this.publisher.whenIdle();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.publisher.close({ deadlineMs: 2_000 });
    await this.watcher.close();
    this.nvml.close();
  }
}
