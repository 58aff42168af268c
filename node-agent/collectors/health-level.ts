/**
 * The health evaluator's vocabulary (health.ts): a condition's level (0 = clear, else the severity it
 * fires with), the memory kept per (GPU, condition), the crossing it reports, and the helpers every
 * condition's rule uses: banded levels with hysteresis and the crossing's event.
 */
import type { GpuHealthChangedDetail, HealthCondition } from '../../events/catalog/gpu-health-changed.ts';
import type { HealthThresholds } from './health-thresholds.ts';
import type { GpuReading, GpuRef } from './reading.ts';

export type Severity = GpuHealthChangedDetail['severity'];
/** 0 = clear; otherwise the severity it fires with. */
export type Level = 0 | Severity;
export const RANK: Record<string, number> = { 0: 0, info: 1, warning: 2, critical: 3 };

export interface CondState {
  level: Level;
  /** For conditions that must hold for a while (utilization): when the raw signal started. */
  since?: number;
  /** For counters (ECC): the last value seen. */
  last?: number;
  /** recovery-action: the action NVML named last (every change is an event). */
  action?: string;
}

export type HealthEvent = Omit<GpuHealthChangedDetail, 'schemaVersion' | 'eventId' | 'node' | 'observedAt'>;

/** The ECC counters last seen per GPU UUID: kept across agent restarts (the agent's health state file). */
export type EccMemory = Record<string, number>;

/** What a condition's rule reads and keeps: the evaluator's memory and thresholds. */
export interface HealthContext {
  readonly state: Map<string, CondState>;
  readonly t: HealthThresholds;
  /** NVLink error totals seen in the last minute, per GPU UUID (oldest first). */
  readonly linkHistory: Map<string, { at: number; c: NonNullable<GpuReading['nvlinkErrors']> }[]>;
}

/** Level for a value against descending [threshold, level] bands, with hysteresis on the way down. */
export function banded(v: number, current: Level, bands: [number, Severity][], hysteresis: number): Level {
  for (const [threshold, level] of bands) {
    if (v > threshold) return level;
    // Staying at (or above) this band until the value drops below threshold - hysteresis.
    if (RANK[current]! >= RANK[level]! && v >= threshold - hysteresis) return level;
  }
  return 0;
}

export const round = (n: number) => Math.round(n * 10) / 10;

export function event(
  gpu: GpuRef,
  condition: HealthCondition,
  level: Level,
  message: string,
  extra: Partial<HealthEvent> = {},
): HealthEvent {
  return { gpu, condition, state: level ? 'firing' : 'resolved', severity: level || 'info', message, ...extra };
}
