/**
 * Utilization: one summary per window (default a minute) with avg/max per GPU and per MIG device,
 * instead of a stream of samples. The bus bills per event; the signal is the aggregate.
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

  constructor(
    private readonly windowMs: number,
    startMs: number,
  ) {
    this.start = startMs;
  }

  /** Adds one sample; returns the finished window's summary when `nowMs` closes it. */
  add(readings: readonly GpuReading[], nowMs: number): Summary | undefined {
    const done = nowMs - this.start >= this.windowMs ? this.flush(nowMs) : undefined;
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
      g.fb.add(pct(r.memoryUsedMiB, r.memoryTotalMiB) ?? 0);
      g.temp.add(r.temperatureC);
      g.power.add(r.powerW);
      for (const m of r.migDevices ?? []) {
        let acc = g.mig.get(m.gpuInstanceId);
        if (!acc)
          g.mig.set(
            m.gpuInstanceId,
            (acc = { ...(m.uuid ? { uuid: m.uuid } : {}), profile: m.profile, fb: new Agg() }),
          );
        // Unread memory adds nothing (unknown is not 0%: idle-gpus reads an empty instance as idle).
        acc.fb.add(pct(m.memoryUsedMiB, m.memoryTotalMiB));
      }
    }
    return done;
  }

  /** Closes the current window (also on shutdown); undefined when it saw no sample. */
  flush(nowMs: number): Summary | undefined {
    const gpus = [...this.gpus.values()].sort((a, b) => a.index - b.index);
    const summary: Summary | undefined = this.samples
      ? {
          windowStart: new Date(this.start).toISOString(),
          windowEnd: new Date(nowMs).toISOString(),
          samples: this.samples,
          gpus: gpus.map((g): GpuRow => ({
            index: g.index,
            uuid: g.uuid,
            ...(g.util.empty ? {} : { utilPercent: g.util.value() }),
            ...(g.memUtil.empty ? {} : { memoryUtilPercent: g.memUtil.value() }),
            framebufferUsedPercent: g.fb.empty ? { avg: 0, max: 0 } : g.fb.value(),
            ...(g.temp.empty ? {} : { temperatureC: g.temp.value() }),
            ...(g.power.empty ? {} : { powerW: g.power.value() }),
            // A MIG device whose memory no sample read is left out, as an unread GPU measure is: the
            // contract requires its framebuffer, and idle-gpus reads a device it does not find as unknown.
            migDevices: [...g.mig.entries()]
              .filter(([, m]) => !m.fb.empty)
              .sort(([a], [b]) => a - b)
              .map(([gi, m]) => ({
                ...(m.uuid ? { uuid: m.uuid } : {}),
                gpuInstanceId: gi,
                profile: m.profile,
                framebufferUsedPercent: m.fb.value(),
              })),
          })),
        }
      : undefined;
    this.gpus = new Map();
    this.samples = 0;
    this.start = nowMs;
    return summary;
  }
}
