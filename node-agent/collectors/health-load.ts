/**
 * The health rules that read a GPU's load and its own limits (health.ts runs them at each sample):
 * sustained high utilization, and the temperatures this GPU warns and slows down at.
 */
import { event, type HealthContext, type HealthEvent } from './health-level.ts';
import type { GpuReading, GpuRef } from './reading.ts';

export function utilization(h: HealthContext, r: GpuReading, gpu: GpuRef, now: number): HealthEvent[] {
  const key = `${r.uuid}/utilization-high`;
  const s = h.state.get(key) ?? { level: 0 };
  const u = r.utilPercent!;
  if (s.level === 0) {
    if (u <= h.t.utilHighPercent) {
      h.state.set(key, { level: 0 });
      return [];
    }
    const since = s.since ?? now;
    if (now - since >= h.t.utilHighForMs) {
      h.state.set(key, { level: 'info' });
      return [
        event(
          gpu,
          'utilization-high',
          'info',
          `utilization above ${h.t.utilHighPercent}% for ${Math.round((now - since) / 60_000)} min`,
          { value: u, threshold: h.t.utilHighPercent, unit: '%' },
        ),
      ];
    }
    h.state.set(key, { level: 0, since });
    return [];
  }
  if (u < h.t.utilHighPercent - h.t.hysteresis) {
    h.state.set(key, { level: 0 });
    return [
      event(gpu, 'utilization-high', 0, `utilization back to ${u}%`, {
        value: u,
        threshold: h.t.utilHighPercent,
        unit: '%',
      }),
    ];
  }
  return [];
}

/** Warning and critical temperatures for this GPU, and whether they are its own. */
export function temperatureLimits(h: HealthContext, r: GpuReading): { warn: number; crit: number; own: boolean } {
  const own = r.temperatureLimits;
  if (h.t.temperatureFromGpu && own?.slowdownC) {
    const crit = own.slowdownC;
    return { warn: own.gpuMaxC && own.gpuMaxC < crit ? own.gpuMaxC : crit - 5, crit, own: true };
  }
  return { warn: h.t.temperatureWarnC, crit: h.t.temperatureCritC, own: false };
}
