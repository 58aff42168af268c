import { NVML, NvmlError } from './errors.ts';
import { decodeStruct } from './ffi.ts';
import { EventData } from './structs.ts';
import { NO_INSTANCE } from './device.ts';
import type { Nvml } from './nvml.ts';

/** nvmlEventType* bits (docs/xid-catalog.md). */
export const NVML_EVENT = {
  singleBitEcc: 0x1n,
  doubleBitEcc: 0x2n,
  pstate: 0x4n,
  xidCriticalError: 0x8n,
  clock: 0x10n,
  singleBitEccStorm: 0x200n,
  dramRetirement: 0x400n,
  dramRetirementFailure: 0x800n,
  fatalPoisonError: 0x2000n,
  gpuUnavailableError: 0x4000n,
  gpuRecoveryAction: 0x8000n,
} as const;

export type NvmlEvent =
  | {
      kind: 'event';
      deviceIndex: number;
      uuid: string;
      /** NVML's bus id (`00000000:3B:00.0`): the key shared with kernel-log XIDs (XidDeduper). */
      pciBusId: string;
      /** One nvmlEventType* bit. */
      eventType: number;
      /** nvmlEventData_t.eventData: the XID for XID events (999 = unknown), else type-specific. */
      eventData: number;
      /** Present for XID critical errors only. */
      xid?: number;
      /** MIG instance the event is attributed to; omitted when NVML says 0xFFFFFFFF. */
      gpuInstanceId?: number;
      computeInstanceId?: number;
    }
  /** nvmlEventSetWait_v2 said GPU_IS_LOST and probing found this GPU gone. Reported once per loss. */
  | { kind: 'gpu-lost'; deviceIndex: number; uuid: string; pciBusId: string }
  /** A GPU reported lost answers NVML again (a reset brought it back, found by its UUID): in the event set again. */
  | { kind: 'gpu-watched'; deviceIndex: number; uuid: string; pciBusId: string };

export interface NvmlEventWatcherOptions {
  /** Longest single native wait, so a worker thread is never held for long (default 100 ms). */
  sliceMs?: number;
  /** Monotonic milliseconds; injected by tests. */
  now?: () => number;
  /** How often, at most, GPUs found lost are looked for again (default 10 s). */
  rewatchMs?: number;
}

interface Registered {
  index: number;
  uuid: string;
  pciBusId: string;
  handle: bigint;
  /** The event types registered for it (once the set is built). */
  types?: bigint;
}

/**
 * Waits for NVML events without blocking the event loop: each `wait` runs nvmlEventSetWait_v2
 * through koffi's async call (libuv's thread pool, so raise UV_THREADPOOL_SIZE) with a short slice
 * timeout, in a loop until its own timeout. Only one wait runs at a time.
 *
 * Registers, per GPU, only the requested types that nvmlDeviceGetSupportedEventTypes reports; GPUs
 * that support none (or are lost at start) are listed in `skipped`. When the wait reports
 * GPU_IS_LOST, the watcher finds which GPUs are gone, reports each once as a `gpu-lost` event and
 * rebuilds its event set without them (events still queued in the old set are dropped). A lost GPU is
 * looked for again, by its UUID, at most every `rewatchMs` between waits: once it answers NVML (a reset
 * brought it back) it is registered in the set again (`gpu-watched`) — else its XIDs would reach the agent
 * only from the kernel log for the rest of the run, and, without one, a probe after its reset could never
 * count it as watched.
 */
export class NvmlEventWatcher {
  readonly registered: Registered[] = [];
  readonly skipped: { index: number; reason: string }[] = [];
  private set: bigint | undefined;
  private readonly pending: NvmlEvent[] = [];
  /** GPUs found lost, by UUID, until they answer NVML again. */
  private readonly lost = new Map<string, Registered>();
  private lostCheckedAt: number;
  private readonly rewatchMs: number;
  private inFlight: Promise<unknown> | undefined;
  private closed = false;
  private readonly data = Buffer.alloc(EventData.size);
  private readonly sliceMs: number;
  private readonly now: () => number;

  constructor(
    private readonly nvml: Nvml,
    readonly mask: bigint = NVML_EVENT.xidCriticalError,
    options: NvmlEventWatcherOptions = {},
  ) {
    this.sliceMs = options.sliceMs ?? 100;
    this.now = options.now ?? (() => performance.now());
    this.rewatchMs = options.rewatchMs ?? 10_000;
    this.lostCheckedAt = this.now();
    for (let index = 0; index < nvml.deviceCount(); index++) {
      try {
        const device = nvml.device(index);
        this.registered.push({ index, uuid: device.uuid(), pciBusId: device.pci().busId, handle: device.handle });
      } catch (err) {
        if (!(err instanceof NvmlError)) throw err;
        this.skipped.push({ index, reason: err.nvmlName });
      }
    }
    this.createSet();
  }

  private createSet(): void {
    const out: [bigint] = [0n];
    this.nvml.check('nvmlEventSetCreate', this.nvml.lib.nvmlEventSetCreate(out));
    this.set = BigInt(out[0]);
    const keep: Registered[] = [];
    for (const r of this.registered) {
      if (this.lost.has(r.uuid)) continue;
      const supported: [number | bigint] = [0];
      const src = this.nvml.lib.nvmlDeviceGetSupportedEventTypes(r.handle, supported);
      const types = src === NVML.SUCCESS ? BigInt(supported[0]) & this.mask : 0n;
      if (types === 0n) {
        if (!this.skipped.some((s) => s.index === r.index))
          this.skipped.push({
            index: r.index,
            reason: src === NVML.SUCCESS ? 'no requested event type supported' : this.nvml.lib.nvmlErrorString(src),
          });
        continue;
      }
      // One GPU refusing registration does not take the others down: NVML documents the set stays
      // usable. That GPU is skipped (its XIDs still come from the kernel log, its health from sampling).
      const rc = this.nvml.lib.nvmlDeviceRegisterEvents(r.handle, types, this.set);
      if (rc !== NVML.SUCCESS) {
        if (!this.skipped.some((s) => s.index === r.index))
          this.skipped.push({
            index: r.index,
            reason: `nvmlDeviceRegisterEvents: ${this.nvml.lib.nvmlErrorString(rc)}`,
          });
        continue;
      }
      keep.push({ ...r, types });
    }
    this.registered.splice(0, this.registered.length, ...keep);
  }

  /**
   * Whether this GPU's XIDs reach the watcher: registered for XID events, and not dropped from the set since (a
   * GPU found lost is not watched until it answers NVML again; one whose driver supports no XID events never was).
   */
  watchesXids(uuid: string): boolean {
    return this.registered.some((r) => r.uuid === uuid && ((r.types ?? 0n) & NVML_EVENT.xidCriticalError) !== 0n);
  }

  /** The next event, or null when `timeoutMs` passes with none (or the watcher is closed). */
  async wait(timeoutMs: number): Promise<NvmlEvent | null> {
    if (this.inFlight) throw new Error('NvmlEventWatcher.wait: another wait is in progress');
    const run = this.loop(timeoutMs);
    this.inFlight = run;
    try {
      return await run;
    } finally {
      this.inFlight = undefined;
    }
  }

  private async loop(timeoutMs: number): Promise<NvmlEvent | null> {
    const deadline = this.now() + Math.max(0, timeoutMs);
    this.rewatch();
    for (;;) {
      const queued = this.pending.shift();
      if (queued) return queued;
      if (this.closed || this.set === undefined) return null;
      const slice = Math.max(0, Math.min(this.sliceMs, Math.ceil(deadline - this.now())));
      const rc = await this.nvml.lib.nvmlEventSetWait_v2Async(this.set, this.data, slice);
      if (rc === NVML.SUCCESS) return this.decode();
      if (rc === NVML.GPU_IS_LOST) this.handleLost();
      else if (rc !== NVML.TIMEOUT) this.nvml.check('nvmlEventSetWait_v2', rc);
      if (this.pending.length === 0 && this.now() >= deadline) return null;
    }
  }

  private decode(): NvmlEvent | null {
    const raw = decodeStruct<{
      device: number | bigint;
      eventType: number | bigint;
      eventData: number | bigint;
      gpuInstanceId: number;
      computeInstanceId: number;
    }>(this.data, EventData);
    const device = BigInt(raw.device);
    const from = this.registered.find((r) => r.handle === device);
    if (!from) return null; // not ours (cannot happen with one set per watcher); treat as a spurious wake
    const eventType = Number(raw.eventType);
    const eventData = Number(raw.eventData);
    return {
      kind: 'event',
      deviceIndex: from.index,
      uuid: from.uuid,
      pciBusId: from.pciBusId,
      eventType,
      eventData,
      ...(BigInt(eventType) === NVML_EVENT.xidCriticalError ? { xid: eventData } : {}),
      ...(raw.gpuInstanceId === NO_INSTANCE ? {} : { gpuInstanceId: raw.gpuInstanceId }),
      ...(raw.computeInstanceId === NO_INSTANCE ? {} : { computeInstanceId: raw.computeInstanceId }),
    };
  }

  /** NVML does not say which GPU is lost: ask each one, then rebuild the set without the lost. */
  private handleLost(): void {
    for (const r of this.registered) {
      if (this.lost.has(r.uuid)) continue;
      const mem = {};
      if (this.nvml.lib.nvmlDeviceGetMemoryInfo(r.handle, mem) === NVML.GPU_IS_LOST) {
        this.lost.set(r.uuid, r);
        this.pending.push({ kind: 'gpu-lost', deviceIndex: r.index, uuid: r.uuid, pciBusId: r.pciBusId });
      }
    }
    this.freeSet();
    this.createSet();
  }

  /**
   * Lost GPUs that answer NVML again, found by UUID (their index may differ after a re-enumeration), are
   * registered in the current set: no rebuild, so nothing queued for the other GPUs is dropped. One that still
   * does not answer, or refuses registration, is looked for again later.
   */
  private rewatch(): void {
    if (this.lost.size === 0 || this.set === undefined || this.closed) return;
    if (this.now() - this.lostCheckedAt < this.rewatchMs) return;
    this.lostCheckedAt = this.now();
    let count: number;
    try {
      count = this.nvml.deviceCount();
    } catch (err) {
      if (!(err instanceof NvmlError)) throw err;
      return;
    }
    for (let index = 0; index < count && this.lost.size > 0; index++) {
      let found: { uuid: string; pciBusId: string; handle: bigint };
      try {
        const device = this.nvml.device(index);
        found = { uuid: device.uuid(), pciBusId: device.pci().busId, handle: device.handle };
      } catch (err) {
        if (!(err instanceof NvmlError)) throw err;
        continue; // still lost, or another GPU that does not answer
      }
      if (!this.lost.has(found.uuid)) continue;
      const supported: [number | bigint] = [0];
      if (this.nvml.lib.nvmlDeviceGetSupportedEventTypes(found.handle, supported) !== NVML.SUCCESS) continue;
      const types = BigInt(supported[0]) & this.mask;
      if (types === 0n || this.nvml.lib.nvmlDeviceRegisterEvents(found.handle, types, this.set) !== NVML.SUCCESS)
        continue;
      this.lost.delete(found.uuid);
      this.registered.push({ index, ...found, types });
      this.pending.push({ kind: 'gpu-watched', deviceIndex: index, uuid: found.uuid, pciBusId: found.pciBusId });
    }
  }

  private freeSet(): void {
    if (this.set !== undefined) this.nvml.lib.nvmlEventSetFree(this.set);
    this.set = undefined;
  }

  /** Lets a running wait finish its slice, then frees the event set. Idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    await this.inFlight?.catch(() => undefined);
    this.freeSet();
  }
}
