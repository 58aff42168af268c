/**
 * Utilization: one summary per window (default a minute) with avg/max per GPU and per MIG device,
 * instead of a stream of samples. The bus bills per event; the signal is the aggregate.
 *
 * A window closes at the first sample at or past its length, so a stall (the event loop blocked, NVML
 * hanging, the process stopped, or every sample failing) ends in a window that spans it with only the
 * samples taken before it. The window says so (`unsampledMs`): idle-gpus must not read minutes nobody
 * measured as idle. A stretch without a sample counts once it is longer than two windows: the agent knows
 * its window here, not its sample interval, which is at most a window (5 s by default; the embedded
 * stack's 60 s), and a sample may come late by up to one more window (a busy node's timers; the embedded
 * stack's virtual clock moves in steps) without the time between being unmeasured. Anything longer is a
 * window's worth of time no sample was taken in.
 */
import type { GpuUtilizationSummaryDetail } from '../../events/catalog/gpu-utilization-summary.ts';
import type { GpuReading } from './reading.ts';

type Summary = Omit<GpuUtilizationSummaryDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>;
type GpuRow = Summary['gpus'][number];

class Agg {
  private sum = 0;
  private n = 0;
  private mx = 0;
  add(v: number | undefined): void {
    if (v === undefined || !Number.isFinite(v)) return;
    this.sum += v;
    this.n++;
    if (v > this.mx) this.mx = v;
  }
  get empty(): boolean {
    return this.n === 0;
  }
  value(): { avg: number; max: number } {
    return { avg: Math.round((this.sum / this.n) * 10) / 10, max: Math.round(this.mx * 10) / 10 };
  }
}

interface GpuAcc {
  index: number;
  uuid: string;
  util: Agg;
  memUtil: Agg;
  fb: Agg;
  temp: Agg;
  power: Agg;
  mig: Map<number, { uuid?: string; profile: string; fb: Agg }>;
}

const pct = (used?: number, total?: number) => (used !== undefined && total ? (100 * used) / total : undefined);

export class UtilizationWindow {
  private gpus = new Map<string, GpuAcc>();
  private samples = 0;
  private start: number;
  /** The last sample's time (the window's start before its first). */
  private last: number;
  /** The stretches without a sample longer than two windows, summed. */
  private unsampled = 0;

  constructor(
    private readonly windowMs: number,
    startMs: number,
  ) {
    this.start = startMs;
    this.last = startMs;
  }

  /** The stretch since the last sample, up to `nowMs`, counted when longer than two windows. */
  private reach(nowMs: number): void {
    const stretch = nowMs - this.last;
    if (stretch > 2 * this.windowMs) this.unsampled += stretch;
    this.last = Math.max(this.last, nowMs);
  }

  /** Adds one sample; returns the finished window's summary when `nowMs` closes it. */
  add(readings: readonly GpuReading[], nowMs: number): Summary | undefined {
    let done: Summary | undefined;
    if (nowMs - this.start >= this.windowMs) done = this.flush(nowMs);
    else this.reach(nowMs);
    this.samples++;
    for (const r of readings) {
      if (r.lost) continue;
      let g = this.gpus.get(r.uuid);
      if (!g) {
        g = {
          index: r.index,
          uuid: r.uuid,
          util: new Agg(),
          memUtil: new Agg(),
          fb: new Agg(),
          temp: new Agg(),
          power: new Agg(),
          mig: new Map(),
        };
        this.gpus.set(r.uuid, g);
      }
      g.util.add(r.utilPercent);
      g.memUtil.add(r.memoryUtilPercent);
      g.fb.add(pct(r.memoryUsedMiB, r.memoryTotalMiB));
      g.temp.add(r.temperatureC);
      g.power.add(r.powerW);
      for (const m of r.migDevices ?? []) {
        let acc = g.mig.get(m.gpuInstanceId);
        if (!acc)
          g.mig.set(
            m.gpuInstanceId,
            (acc = { ...(m.uuid ? { uuid: m.uuid } : {}), profile: m.profile, fb: new Agg() }),
          );
        acc.fb.add(pct(m.memoryUsedMiB, m.memoryTotalMiB));
      }
    }
    return done;
  }

  /** Closes the current window (also on shutdown); undefined when it saw no sample. */
  flush(nowMs: number): Summary | undefined {
    this.reach(nowMs);
    const gpus = [...this.gpus.values()].sort((a, b) => a.index - b.index);
    const summary: Summary | undefined = this.samples
      ? {
          windowStart: new Date(this.start).toISOString(),
          windowEnd: new Date(nowMs).toISOString(),
          samples: this.samples,
          unsampledMs: this.unsampled,
          gpus: gpus.map((g): GpuRow => ({
            index: g.index,
            uuid: g.uuid,
            ...(g.util.empty ? {} : { utilPercent: g.util.value() }),
            ...(g.memUtil.empty ? {} : { memoryUtilPercent: g.memUtil.value() }),
            // No memory reading is unknown, never 0 %: idle-gpus would count a loaded model idle.
            ...(g.fb.empty ? {} : { framebufferUsedPercent: g.fb.value() }),
            ...(g.temp.empty ? {} : { temperatureC: g.temp.value() }),
            ...(g.power.empty ? {} : { powerW: g.power.value() }),
            migDevices: [...g.mig.entries()]
              .sort(([a], [b]) => a - b)
              .map(([gi, m]) => ({
                ...(m.uuid ? { uuid: m.uuid } : {}),
                gpuInstanceId: gi,
                profile: m.profile,
                ...(m.fb.empty ? {} : { framebufferUsedPercent: m.fb.value() }),
              })),
          })),
        }
      : undefined;
    this.gpus = new Map();
    this.samples = 0;
    this.unsampled = 0;
    this.start = nowMs;
    this.last = nowMs;
    return summary;
  }
}
