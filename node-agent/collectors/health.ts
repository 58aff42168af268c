/**
 * Health: turns a stream of samples into `GPU Health Changed` details — one per threshold
 * crossing, never one per sample. Every condition has hysteresis (it clears only below the
 * threshold minus a margin) so a GPU hovering at 85 °C does not flap.
 * Defaults (docs/node-agent.md, Environment): util > 95% for 5 min, framebuffer > 90%,
 * temperature at the GPU's own max operating temperature warning / slowdown temperature critical
 * (80/85 °C where the GPU reports no limits), HBM at its limit, power > 90% of the enforced limit
 * (info: a busy GPU runs there), any uncorrected ECC error, pending page retirement or row remap,
 * a PCIe link below what it can do, a fabric that failed or stalled, the SRAM RMA threshold.
 *
 * Split by concept: thresholds (health-thresholds.ts), levels and events (health-level.ts), the link
 * rules (health-links.ts), load and temperature limits (health-load.ts).
 */
// Throttle reasons that mean hardware trouble; idle, app-clock and SW power cap are normal.
import { HW_THROTTLE_REASONS } from '../nvml/clock-reasons.ts';
import type { HealthCondition } from '../../events/catalog/gpu-health-changed.ts';
import {
  banded,
  event,
  round,
  type CondState,
  type EccMemory,
  type HealthContext,
  type HealthEvent,
  type Level,
} from './health-level.ts';
import { eccUncorrected } from './health-ecc.ts';
import { fabric, nvlink, nvlinkErrors, pcie } from './health-links.ts';
import { temperatureLimits, utilization } from './health-load.ts';
import { DEFAULT_THRESHOLDS, type HealthThresholds } from './health-thresholds.ts';
import { refOf, type GpuReading } from './reading.ts';

export { DEFAULT_THRESHOLDS, type HealthThresholds } from './health-thresholds.ts';
export type { EccMemory, HealthEvent } from './health-level.ts';

export class HealthEvaluator {
  private readonly state = new Map<string, CondState>();
  /** NVLink error totals seen in the last minute, per GPU UUID (oldest first). */
  private readonly linkHistory = new Map<string, { at: number; c: NonNullable<GpuReading['nvlinkErrors']> }[]>();
  /** What the rules of health-links.ts and health-load.ts read and keep: this evaluator's memory. */
  private readonly c: HealthContext;
  /** Contained uncorrected ECC errors (XID 94) not yet seen in the counter, per GPU UUID. */
  private readonly contained = new Map<string, number>();
  private failures = 0;
  private degraded = false;

  constructor(private readonly t: HealthThresholds = DEFAULT_THRESHOLDS) {
    this.c = { state: this.state, t, linkHistory: this.linkHistory };
  }

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
      const { warn, crit, own } = temperatureLimits(this.c, r);
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
    if (r.pcieLink) out.push(...pcie(this.c, r, gpu));
    if (r.fabric) out.push(...fabric(this.c, r, gpu, now));
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
    if (r.utilPercent !== undefined) out.push(...utilization(this.c, r, gpu, now));
    if (r.eccUncorrectedVolatile !== undefined) out.push(...eccUncorrected(this.c, this.contained, r, gpu));
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
    if (r.nvlinkActive) out.push(...nvlink(this.c, r, gpu));
    if (r.nvlinkErrors) out.push(...nvlinkErrors(this.c, r, gpu, now));
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
}
