/**
 * The uncorrected-ECC rule (health.ts runs it at each sample): any new uncorrected error is critical,
 * except the rise that contained errors (XID 94, `contained`) explain; the counter's reset (it is
 * volatile, reset with the GPU) is what clears the condition.
 */
import { event, type HealthContext, type HealthEvent, type Level } from './health-level.ts';
import type { GpuReading, GpuRef } from './reading.ts';

export function eccUncorrected(
  h: HealthContext,
  contained: Map<string, number>,
  r: GpuReading,
  gpu: GpuRef,
): HealthEvent[] {
  const out: HealthEvent[] = [];
  const key = `${r.uuid}/ecc-uncorrected`;
  const prev = h.state.get(key) ?? { level: 0 as Level, last: 0 };
  const n = r.eccUncorrectedVolatile!;
  const rise = n - (prev.last ?? 0);
  const explained = Math.min(Math.max(0, rise), contained.get(r.uuid) ?? 0);
  if (explained > 0) contained.set(r.uuid, (contained.get(r.uuid) ?? 0) - explained);
  if (rise > 0 && rise === explained) {
    // Every new error was a contained one (XID 94): counted, not a GPU fault.
    h.state.set(key, { ...prev, last: n });
  } else if (rise > 0) {
    h.state.set(key, { level: 'critical', last: n });
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
    h.state.set(key, { level: 0, last: n });
    if (prev.level !== 0)
      out.push(event(gpu, 'ecc-uncorrected', 0, 'ECC counters reset', { value: n, unit: 'errors' }));
  }
  return out;
}
