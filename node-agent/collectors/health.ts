/**
 * Health: turns a stream of samples into `GPU Health Changed` details — one per threshold
 * crossing, never one per sample. Every condition has hysteresis (it clears only below the
 * threshold minus a margin) so a GPU hovering at 85 °C does not flap.
 * Defaults (docs/node-agent.md, Environment): util > 95% for 5 min, framebuffer > 90%,
 * temperature at the GPU's own max operating temperature warning / slowdown temperature critical
 * (80/85 °C where the GPU reports no limits), HBM at its limit, power > 90% of the enforced limit
 * (info: a busy GPU runs there), any uncorrected ECC error, pending page retirement or row remap,
 * a PCIe link below what it can do, a fabric that failed or stalled, the SRAM RMA threshold.
 */
import { HW_THROTTLE_REASONS } from '../nvml/clock-reasons.ts';
import type { GpuHealthChangedDetail, HealthCondition } from '../../events/catalog/gpu-health-changed.ts';
import { refOf, type GpuReading, type GpuRef } from './reading.ts';

export interface HealthThresholds {
  utilHighPercent: number;
  utilHighForMs: number;
  framebufferHighPercent: number;
  /** Used where the GPU reports no limits of its own, or always when `temperatureFromGpu` is false. */
  temperatureWarnC: number;
  temperatureCritC: number;
  /**
   * Follow each GPU's own limits (nvmlDeviceGetTemperatureThreshold): warning at its max operating
   * temperature, critical at its slowdown temperature. False when TEMP_WARN_C/TEMP_CRIT_C are set.
   */
  temperatureFromGpu: boolean;
  /** HBM limit where the GPU does not report one (95 °C, what an H200 reports). */
  memoryTemperatureMaxC: number;
  /**
   * PCIe generation below the link's maximum counts only while the GPU is this busy (an idle link slows down on
   * purpose).
   */
  pcieBusyPercent: number;
  /** How long a fabric probe may stay not-started/in-progress before it is reported. */
  fabricGraceMs: number;
  /** NVLink CRC errors (flit + data, all links) per minute above which the links are degrading. */
  nvlinkCrcPerMinute: number;
  /** NVLink replays per minute above which the links are degrading. */
  nvlinkReplayPerMinute: number;
  powerHighPercent: number;
  /** Margin below a threshold before a condition clears (percent points or °C). */
  hysteresis: number;
  /** Consecutive failed samples before the agent reports it cannot see the GPUs. */
  monitoringFailures: number;
}

export const DEFAULT_THRESHOLDS: HealthThresholds = {
  utilHighPercent: 95,
  utilHighForMs: 5 * 60_000,
  framebufferHighPercent: 90,
  temperatureWarnC: 80,
  temperatureCritC: 85,
  temperatureFromGpu: true,
  memoryTemperatureMaxC: 95,
  pcieBusyPercent: 50,
  fabricGraceMs: 5 * 60_000,
  // gpu-reflex's defaults, not NVIDIA's (NVIDIA publishes no rate): a healthy link counts few or none.
  nvlinkCrcPerMinute: 100,
  nvlinkReplayPerMinute: 100,
  powerHighPercent: 90,
  hysteresis: 5,
  monitoringFailures: 3,
};

type Severity = GpuHealthChangedDetail['severity'];
/** 0 = clear; otherwise the severity it fires with. */
type Level = 0 | Severity;
const RANK: Record<string, number> = { 0: 0, info: 1, warning: 2, critical: 3 };

/** Throttle reasons that mean hardware trouble; idle, app-clock and SW power cap are normal. */

interface CondState {
  level: Level;
  /** For conditions that must hold for a while (utilization): when the raw signal started. */
  since?: number;
  /** For counters (ECC): the last value seen. */
  last?: number;
  /** recovery-action: the action NVML named last (every change is an event). */
  action?: string;
}

export type HealthEvent = Omit<GpuHealthChangedDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>;

/** Per-node evaluator. Keeps the last level of every (GPU, condition); pure apart from that memory. */
/** The ECC counters last seen per GPU UUID: kept across agent restarts (the agent's health state file). */
export type EccMemory = Record<string, number>;

export class HealthEvaluator {
  private readonly state = new Map<string, CondState>();
  /** NVLink error totals seen in the last minute, per GPU UUID (oldest first). */
  private readonly linkHistory = new Map<string, { at: number; c: NonNullable<GpuReading['nvlinkErrors']> }[]>();
  /** Contained uncorrected ECC errors (XID 94) not yet seen in the counter, per GPU UUID. */
  private readonly contained = new Map<string, number>();
  private failures = 0;
  private degraded = false;

  constructor(private readonly t: HealthThresholds = DEFAULT_THRESHOLDS) {}

  /**
   * The last uncorrected-ECC counts, to be kept across restarts: without them every restart sees the
   * counter "rise" from 0 and re-fires ecc-uncorrected (which quarantines the GPU again).
   */
  eccMemory(): EccMemory {
    const out: EccMemory = {};
    for (const [key, s] of this.state)
      if (key.endsWith('/ecc-uncorrected') && s.last !== undefined)
        out[key.slice(0, -'/ecc-uncorrected'.length)] = s.last;
    return out;
  }

  /** Restores what eccMemory() returned before a restart (the condition's level is not restored). */
  restoreEcc(memory: EccMemory): void {
    for (const [uuid, last] of Object.entries(memory))
      if (Number.isFinite(last) && last >= 0) this.state.set(`${uuid}/ecc-uncorrected`, { level: 0, last });
  }

  /**
   * A contained uncorrected ECC error (XID 94) on `uuid`: NVIDIA's answer is to restart the
   * application, which the driver already killed. It also bumps the uncorrected counter; that rise
   * is this error, not a new one, and must not quarantine the GPU (the uncontained one is XID 95).
   */
  containedEcc(uuid: string): void {
    this.contained.set(uuid, (this.contained.get(uuid) ?? 0) + 1);
  }

  /** Evaluates one sample of every GPU taken at `nowMs`; returns the crossings. */
  evaluate(readings: readonly GpuReading[], nowMs: number): HealthEvent[] {
    const out: HealthEvent[] = [];
    if (this.degraded) {
      this.degraded = false;
      out.push({
        condition: 'monitoring-degraded',
        state: 'resolved',
        severity: 'info',
        message: 'NVML answers again',
      });
    }
    this.failures = 0;
    for (const r of readings) out.push(...this.evaluateGpu(r, nowMs));
    return out;
  }

  /** A whole sample failed (NVML hung or erroring). Reported as monitoring trouble, never as a GPU fault. */
  sampleFailed(reason: string): HealthEvent[] {
    this.failures++;
    if (this.degraded || this.failures < this.t.monitoringFailures) return [];
    this.degraded = true;
    return [
      {
        condition: 'monitoring-degraded',
        state: 'firing',
        severity: 'warning',
        message: `cannot read GPUs: ${reason} (${this.failures} samples in a row)`,
      },
    ];
  }

  private evaluateGpu(r: GpuReading, now: number): HealthEvent[] {
    const gpu = refOf(r);
    const out: HealthEvent[] = [];
    const step = (cond: HealthCondition, level: Level, message: string, extra: Partial<HealthEvent> = {}) => {
      const key = `${r.uuid}/${cond}`;
      const prev = this.state.get(key) ?? { level: 0 };
      if (prev.level === level) return;
      this.state.set(key, { ...prev, level });
      out.push(event(gpu, cond, level, message, extra));
    };
    const levelOf = (cond: HealthCondition): Level => this.state.get(`${r.uuid}/${cond}`)?.level ?? 0;

    step('gpu-lost', r.lost ? 'critical' : 0, r.lost ? 'GPU is lost: NVML answers GPU_IS_LOST' : 'GPU answers again');
    if (r.lost) return out;

    if (r.temperatureC !== undefined) {
      const t = r.temperatureC;
      const { warn, crit, own } = this.temperatureLimits(r);
      // A GPU's own limit is reached AT its value (integer °C), the configured ones are exceeded.
      const edge = own ? 1 : 0;
      const lvl = banded(
        t,
        levelOf('temperature'),
        [
          [crit - edge, 'critical'],
          [warn - edge, 'warning'],
        ],
        this.t.hysteresis,
      );
      const limit = lvl === 'critical' ? crit : warn;
      const what = own
        ? lvl === 'critical'
          ? "this GPU's slowdown temperature"
          : "this GPU's max operating temperature"
        : 'the configured limit';
      step(
        'temperature',
        lvl,
        lvl ? `temperature ${t} °C ${own ? 'reached' : 'above'} ${what} (${limit} °C)` : `temperature back to ${t} °C`,
        {
          value: t,
          threshold: limit,
          unit: 'C',
        },
      );
    }
    if (r.memoryTemperatureC !== undefined) {
      const t = r.memoryTemperatureC;
      const max = r.temperatureLimits?.memMaxC ?? this.t.memoryTemperatureMaxC;
      const lvl = banded(
        t,
        levelOf('memory-temperature'),
        [
          [max - 1, 'critical'],
          [max - 6, 'warning'],
        ],
        this.t.hysteresis,
      );
      step(
        'memory-temperature',
        lvl,
        lvl
          ? `memory (HBM) temperature ${t} °C ${lvl === 'critical' ? 'reached' : 'within 5 °C of'} its limit ` +
              `(${max} °C)`
          : `memory temperature back to ${t} °C`,
        {
          value: t,
          threshold: lvl === 'warning' ? max - 5 : max,
          unit: 'C',
        },
      );
    }
    if (r.powerW !== undefined && r.powerLimitW) {
      // Information, not an alarm: a busy GPU runs at its power limit (a healthy H200 under load
      // read 99% of 700 W), and the hardware enforces the cap itself.
      const pct = (100 * r.powerW) / r.powerLimitW;
      const lvl = banded(pct, levelOf('power'), [[this.t.powerHighPercent, 'info']], this.t.hysteresis);
      step(
        'power',
        lvl,
        lvl
          ? `power ${r.powerW} W is ${pct.toFixed(0)}% of the ${r.powerLimitW} W limit`
          : `power back to ${pct.toFixed(0)}% of the limit`,
        {
          value: round(pct),
          threshold: this.t.powerHighPercent,
          unit: '%',
        },
      );
    }
    if (r.pcieLink) out.push(...this.pcie(r, gpu));
    if (r.fabric) out.push(...this.fabric(r, gpu, now));
    if (r.sramThresholdExceeded !== undefined) {
      step(
        'sram-threshold-exceeded',
        r.sramThresholdExceeded ? 'critical' : 0,
        r.sramThresholdExceeded
          ? "SRAM uncorrectable errors exceed NVIDIA's field-diagnostic threshold: replace the GPU (RMA)"
          : 'SRAM errors below the RMA threshold',
      );
    }
    if (r.memoryUsedMiB !== undefined && r.memoryTotalMiB) {
      const pct = (100 * r.memoryUsedMiB) / r.memoryTotalMiB;
      const lvl = banded(
        pct,
        levelOf('framebuffer-high'),
        [[this.t.framebufferHighPercent, 'warning']],
        this.t.hysteresis,
      );
      step(
        'framebuffer-high',
        lvl,
        lvl ? `framebuffer ${pct.toFixed(0)}% used` : `framebuffer back to ${pct.toFixed(0)}% used`,
        {
          value: round(pct),
          threshold: this.t.framebufferHighPercent,
          unit: '%',
        },
      );
    }
    if (r.utilPercent !== undefined) out.push(...this.utilization(r, gpu, now));
    if (r.eccUncorrectedVolatile !== undefined) {
      const key = `${r.uuid}/ecc-uncorrected`;
      const prev = this.state.get(key) ?? { level: 0 as Level, last: 0 };
      const n = r.eccUncorrectedVolatile;
      const rise = n - (prev.last ?? 0);
      const explained = Math.min(Math.max(0, rise), this.contained.get(r.uuid) ?? 0);
      if (explained > 0) this.contained.set(r.uuid, (this.contained.get(r.uuid) ?? 0) - explained);
      if (rise > 0 && rise === explained) {
        // Every new error was a contained one (XID 94): counted, not a GPU fault.
        this.state.set(key, { ...prev, last: n });
      } else if (rise > 0) {
        this.state.set(key, { level: 'critical', last: n });
        out.push(
          event(
            gpu,
            'ecc-uncorrected',
            'critical',
            `${rise - explained} new uncorrected ECC error(s) (${n} since last ` +
              `reset${explained ? `; ${explained} more were contained, XID 94` : ''})`,
            { value: n, threshold: 0, unit: 'errors' },
          ),
        );
      } else if (n < (prev.last ?? 0) || (n === 0 && prev.level !== 0)) {
        // Volatile counters reset with the GPU: the reset is what clears the condition.
        this.state.set(key, { level: 0, last: n });
        if (prev.level !== 0)
          out.push(event(gpu, 'ecc-uncorrected', 0, 'ECC counters reset', { value: n, unit: 'errors' }));
      }
    }
    if (r.retiredPagesPending !== undefined)
      step(
        'retired-pages-pending',
        r.retiredPagesPending ? 'warning' : 0,
        r.retiredPagesPending ? 'page retirement pending: the GPU needs a reset' : 'no page retirement pending',
      );
    if (r.remappedRows) {
      step(
        'row-remap-pending',
        r.remappedRows.pending ? 'warning' : 0,
        r.remappedRows.pending ? 'row remap pending: the GPU needs a reset to apply it' : 'no row remap pending',
        { value: r.remappedRows.uncorrectable, unit: 'rows' },
      );
      step(
        'row-remap-failure',
        r.remappedRows.failure ? 'critical' : 0,
        r.remappedRows.failure ? 'row remapping failed: no spare rows left' : 'row remapping healthy',
      );
    }
    if (r.throttleReasons) {
      const hw = r.throttleReasons.filter((x) => HW_THROTTLE_REASONS.has(x));
      step(
        'throttling',
        hw.length ? 'warning' : 0,
        hw.length ? `clocks throttled: ${hw.join(', ')}` : 'clocks no longer throttled by hardware',
      );
    }
    if (r.nvlinkActive) out.push(...this.nvlink(r, gpu));
    if (r.nvlinkErrors) out.push(...this.nvlinkErrors(r, gpu, now));
    if (r.recoveryAction !== undefined) {
      // Every change of the value is news (gpu-reset → node-reboot is not "still firing"), so the
      // state remembers the action itself, not only whether one is asked.
      const act = r.recoveryAction;
      const key = `${r.uuid}/recovery-action`;
      const prev = this.state.get(key);
      const level: Level = act === 'none' ? 0 : 'critical';
      if (prev === undefined ? level !== 0 : prev.action !== act) {
        this.state.set(key, { level, action: act });
        out.push(
          event(
            gpu,
            'recovery-action',
            level,
            act === 'none'
              ? 'no recovery action needed'
              : `NVML asks for recovery ` +
                  `action ${act}${prev?.action && prev.action !== 'none' ? ` (was ${prev.action})` : ''}`,
            { recoveryAction: act },
          ),
        );
      }
    }
    return out;
  }

  private utilization(r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
    const key = `${r.uuid}/utilization-high`;
    const s = this.state.get(key) ?? { level: 0 };
    const u = r.utilPercent!;
    if (s.level === 0) {
      if (u <= this.t.utilHighPercent) {
        this.state.set(key, { level: 0 });
        return [];
      }
      const since = s.since ?? now;
      if (now - since >= this.t.utilHighForMs) {
        this.state.set(key, { level: 'info' });
        return [
          event(
            gpu,
            'utilization-high',
            'info',
            `utilization above ${this.t.utilHighPercent}% for ${Math.round((now - since) / 60_000)} min`,
            { value: u, threshold: this.t.utilHighPercent, unit: '%' },
          ),
        ];
      }
      this.state.set(key, { level: 0, since });
      return [];
    }
    if (u < this.t.utilHighPercent - this.t.hysteresis) {
      this.state.set(key, { level: 0 });
      return [
        event(gpu, 'utilization-high', 0, `utilization back to ${u}%`, {
          value: u,
          threshold: this.t.utilHighPercent,
          unit: '%',
        }),
      ];
    }
    return [];
  }

  /** Warning and critical temperatures for this GPU, and whether they are its own. */
  private temperatureLimits(r: GpuReading): { warn: number; crit: number; own: boolean } {
    const own = r.temperatureLimits;
    if (this.t.temperatureFromGpu && own?.slowdownC) {
      const crit = own.slowdownC;
      return { warn: own.gpuMaxC && own.gpuMaxC < crit ? own.gpuMaxC : crit - 5, crit, own: true };
    }
    return { warn: this.t.temperatureWarnC, crit: this.t.temperatureCritC, own: false };
  }

  private pcie(r: GpuReading, gpu: GpuRef): HealthEvent[] {
    const key = `${r.uuid}/pcie-link-degraded`;
    const s = this.state.get(key) ?? { level: 0 as Level };
    const { gen, maxGen, width, maxWidth } = r.pcieLink!;
    const narrow = width < maxWidth;
    const slow = gen < maxGen;
    // An idle GPU lowers its link speed on purpose, so a slow link is a finding only while the GPU
    // is busy; once found, it stays until the link runs at full speed again (idle says nothing).
    const busy = (r.utilPercent ?? 0) >= this.t.pcieBusyPercent;
    const level: Level = narrow || (slow && (busy || s.level !== 0)) ? 'warning' : 0;
    if (level === s.level) return [];
    this.state.set(key, { level });
    const parts = [narrow ? `x${width} of x${maxWidth}` : '', slow ? `Gen${gen} of Gen${maxGen}` : ''].filter(Boolean);
    return [
      event(
        gpu,
        'pcie-link-degraded',
        level,
        level
          ? `PCIe link degraded: ${parts.join(', ')}${slow && busy ? ` at ${r.utilPercent}% utilization` : ''}`
          : `PCIe link back to Gen${gen} x${width}`,
        { value: width, threshold: maxWidth, unit: 'lanes' },
      ),
    ];
  }

  private fabric(r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
    const key = `${r.uuid}/fabric`;
    const s = this.state.get(key) ?? { level: 0 as Level };
    const f = r.fabric!;
    let level: Level = 0;
    let message = 'fabric registered';
    let since: number | undefined;
    if (f.state === 'completed') {
      if (f.status !== undefined && f.status !== 0) {
        level = 'critical';
        message =
          `fabric registration failed: ${f.statusName ?? `NVML error ${f.status}`} (is ` +
          `nvidia-fabricmanager running?)`;
      } else if (f.degradedBandwidth) {
        level = 'warning';
        message = 'fabric registered with degraded NVLink bandwidth';
      }
    } else {
      since = s.since ?? now;
      const waited = now - since;
      if (waited >= this.t.fabricGraceMs) {
        level = 'critical';
        message =
          `fabric not ready for ${Math.round(waited / 60_000)} min (probe ${f.state}): CUDA work fails on ` +
          `this GPU until it registers`;
      } else {
        level = s.level; // still within the grace time: no news either way
      }
    }
    this.state.set(key, { level, ...(since === undefined ? {} : { since }) });
    if (level === s.level) return [];
    return [event(gpu, 'fabric', level, message)];
  }

  /**
   * NVLink error rates over the last minute: any link recovery (a link went down and came back), or
   * CRC errors or replays above their per-minute limits. Counters that went down (a GPU reset clears
   * them) start a new count; the condition clears when a whole minute is quiet again.
   */
  private nvlinkErrors(r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
    const c = r.nvlinkErrors!;
    // The samples of the last minute, and the newest one before it: the count's baseline.
    const all = this.linkHistory.get(r.uuid) ?? [];
    const seen = all.slice(
      Math.max(
        0,
        all.findLastIndex((h) => now - h.at > 60_000),
      ),
    );
    const last = seen.at(-1);
    if (
      last &&
      (c.crcFlit < last.c.crcFlit ||
        c.crcData < last.c.crcData ||
        c.replay < last.c.replay ||
        c.recovery < last.c.recovery)
    )
      seen.length = 0;
    seen.push({ at: now, c });
    this.linkHistory.set(r.uuid, seen);
    const first = seen[0]!;
    const crc = c.crcFlit + c.crcData - (first.c.crcFlit + first.c.crcData);
    const replay = c.replay - first.c.replay;
    const recovery = c.recovery - first.c.recovery;
    const parts = [
      recovery > 0 ? `${recovery} link recover${recovery === 1 ? 'y' : 'ies'} (a link went down and came back)` : '',
      crc > this.t.nvlinkCrcPerMinute ? `${crc} CRC errors (limit ${this.t.nvlinkCrcPerMinute})` : '',
      replay > this.t.nvlinkReplayPerMinute ? `${replay} replays (limit ${this.t.nvlinkReplayPerMinute})` : '',
    ].filter(Boolean);
    const key = `${r.uuid}/nvlink-errors`;
    const prev = this.state.get(key) ?? { level: 0 as Level };
    const level: Level = parts.length > 0 ? 'warning' : 0;
    // Cleared only by a quiet minute: the window must span one before "no errors" means anything.
    if (level === 0 && prev.level !== 0 && now - first.at < 60_000) return [];
    if (level === prev.level) return [];
    this.state.set(key, { level });
    return [
      event(
        gpu,
        'nvlink-errors',
        level,
        level ? `NVLink errors in the last minute: ${parts.join(', ')}` : 'NVLink error rates back to normal',
        { value: crc + replay + recovery, unit: 'errors/min' },
      ),
    ];
  }

  private nvlink(r: GpuReading, gpu: GpuRef): HealthEvent[] {
    // Only links that were ever up count: unused links are always inactive.
    const key = `${r.uuid}/nvlink-down`;
    const s = this.state.get(key) ?? { level: 0 as Level, last: 0 };
    let everUp = s.last ?? 0;
    r.nvlinkActive!.forEach((up, i) => {
      if (up) everUp |= 1 << i;
    });
    const down = r.nvlinkActive!.flatMap((up, i) => (!up && everUp & (1 << i) ? [i] : []));
    const level: Level = down.length ? 'critical' : 0;
    this.state.set(key, { level, last: everUp });
    if (level === s.level) return [];
    return [
      event(gpu, 'nvlink-down', level, down.length ? `NVLink ${down.join(', ')} down` : 'all NVLinks up again', {
        value: down.length,
        unit: 'links',
      }),
    ];
  }
}

/** Level for a value against descending [threshold, level] bands, with hysteresis on the way down. */
function banded(v: number, current: Level, bands: [number, Severity][], hysteresis: number): Level {
  for (const [threshold, level] of bands) {
    if (v > threshold) return level;
    // Staying at (or above) this band until the value drops below threshold - hysteresis.
    if (RANK[current]! >= RANK[level]! && v >= threshold - hysteresis) return level;
  }
  return 0;
}

const round = (n: number) => Math.round(n * 10) / 10;

function event(
  gpu: GpuRef,
  condition: HealthCondition,
  level: Level,
  message: string,
  extra: Partial<HealthEvent> = {},
): HealthEvent {
  return { gpu, condition, state: level ? 'firing' : 'resolved', severity: level || 'info', message, ...extra };
}
