import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { HealthEvaluator, DEFAULT_THRESHOLDS } from './health.ts';
import type { GpuReading } from './reading.ts';

const base: GpuReading = {
  index: 0,
  uuid: 'GPU-5f2c3a1e-8d41-4b7a-9e0f-1c2d3e4f5a6b',
  pciBusId: '00000000:3B:00.0',
  name: 'NVIDIA A100-SXM4-80GB',
};
const at = (s: number) => s * 1000;

/** Feeds a series of partial readings one second apart and returns [second, condition, state, severity] per event. */
function run(series: Partial<GpuReading>[], ev = new HealthEvaluator()) {
  return series.flatMap((r, i) =>
    ev.evaluate([{ ...base, ...r }], at(i)).map((e) => [i, e.condition, e.state, e.severity] as const),
  );
}

describe('HealthEvaluator', () => {
  it('fires once on a temperature crossing, escalates to critical, and clears only below the hysteresis margin', () => {
    const temps = [70, 81, 82, 86, 84, 81, 79, 76, 74, 74];
    expect(run(temps.map((temperatureC) => ({ temperatureC })))).toEqual([
      [1, 'temperature', 'firing', 'warning'],
      [3, 'temperature', 'firing', 'critical'],
      [6, 'temperature', 'firing', 'warning'],
      [8, 'temperature', 'resolved', 'info'],
    ]);
  });

  it('does not flap when the temperature hovers around the threshold', () => {
    const temps = [79, 81, 79, 81, 78, 80.5, 77];
    expect(run(temps.map((temperatureC) => ({ temperatureC })))).toEqual([[1, 'temperature', 'firing', 'warning']]);
  });

  it('reports power above 90% of the enforced limit, as information (a busy GPU runs at its limit)', () => {
    expect(
      run([
        { powerW: 300, powerLimitW: 400 },
        { powerW: 380, powerLimitW: 400 },
        { powerW: 330, powerLimitW: 400 },
      ]),
    ).toEqual([
      [1, 'power', 'firing', 'info'],
      [2, 'power', 'resolved', 'info'],
    ]);
  });

  it('needs utilization above 95% for five minutes before it says so', () => {
    const ev = new HealthEvaluator();
    const events: string[] = [];
    for (let s = 0; s <= 400; s += 10) {
      for (const e of ev.evaluate([{ ...base, utilPercent: s < 350 ? 99 : 50 }], at(s)))
        events.push(`${s}:${e.condition}:${e.state}`);
    }
    expect(events).toEqual(['300:utilization-high:firing', '350:utilization-high:resolved']);
  });

  it('resets the five-minute clock when utilization dips', () => {
    const ev = new HealthEvaluator();
    const events: string[] = [];
    for (let s = 0; s <= 520; s += 10) {
      for (const e of ev.evaluate([{ ...base, utilPercent: s === 200 ? 10 : 99 }], at(s)))
        events.push(`${s}:${e.state}`);
    }
    // The dip at 200 s restarts the clock at 210 s: five minutes later is 510 s.
    expect(events).toEqual(['510:firing']);
  });

  it('fires on every new uncorrected ECC error and clears when the counters reset', () => {
    expect(
      run([
        { eccUncorrectedVolatile: 0 },
        { eccUncorrectedVolatile: 1 },
        { eccUncorrectedVolatile: 1 },
        { eccUncorrectedVolatile: 3 },
        { eccUncorrectedVolatile: 0 },
      ]),
    ).toEqual([
      [1, 'ecc-uncorrected', 'firing', 'critical'],
      [3, 'ecc-uncorrected', 'firing', 'critical'],
      [4, 'ecc-uncorrected', 'resolved', 'info'],
    ]);
  });

  it('reports pending row remaps and remap failures', () => {
    const rows = (pending: boolean, failure: boolean) => ({
      remappedRows: { correctable: 0, uncorrectable: 1, pending, failure },
    });
    expect(run([rows(false, false), rows(true, false), rows(true, true), rows(false, false)])).toEqual([
      [1, 'row-remap-pending', 'firing', 'warning'],
      [2, 'row-remap-failure', 'firing', 'critical'],
      [3, 'row-remap-pending', 'resolved', 'info'],
      [3, 'row-remap-failure', 'resolved', 'info'],
    ]);
  });

  it('ignores normal clock reasons and reports hardware throttling', () => {
    expect(
      run([
        { throttleReasons: ['gpuIdle'] },
        { throttleReasons: ['swPowerCap'] },
        { throttleReasons: ['hwSlowdown'] },
        { throttleReasons: [] },
      ]),
    ).toEqual([
      [2, 'throttling', 'firing', 'warning'],
      [3, 'throttling', 'resolved', 'info'],
    ]);
  });

  it('counts only NVLinks that were up as down', () => {
    expect(
      run([
        { nvlinkActive: [true, true, false] },
        { nvlinkActive: [true, false, false] },
        { nvlinkActive: [true, true, false] },
      ]),
    ).toEqual([
      [1, 'nvlink-down', 'firing', 'critical'],
      [2, 'nvlink-down', 'resolved', 'info'],
    ]);
  });

  it('turns GPU_IS_LOST into one gpu-lost event and nothing else for that GPU', () => {
    expect(run([{ temperatureC: 60 }, { lost: true, temperatureC: 99 }, { lost: true }])).toEqual([
      [1, 'gpu-lost', 'firing', 'critical'],
    ]);
  });

  it('reports the recovery action NVML asks for', () => {
    const ev = new HealthEvaluator();
    ev.evaluate([{ ...base, recoveryAction: 'none' }], 0);
    expect(ev.evaluate([{ ...base, recoveryAction: 'drain-and-reset' }], 1000)).toEqual([
      expect.objectContaining({ condition: 'recovery-action', state: 'firing', recoveryAction: 'drain-and-reset' }),
    ]);
  });

  it('reports failing samples as monitoring trouble, never as a GPU fault, and clears it', () => {
    const ev = new HealthEvaluator({ ...DEFAULT_THRESHOLDS, monitoringFailures: 3 });
    expect(ev.sampleFailed('NVML_ERROR_UNKNOWN')).toEqual([]);
    expect(ev.sampleFailed('NVML_ERROR_UNKNOWN')).toEqual([]);
    const fired = ev.sampleFailed('NVML_ERROR_UNKNOWN');
    expect(fired).toEqual([expect.objectContaining({ condition: 'monitoring-degraded', state: 'firing' })]);
    expect(fired[0]!.gpu).toBeUndefined();
    expect(ev.sampleFailed('again')).toEqual([]);
    expect(ev.evaluate([base], 0)).toEqual([
      expect.objectContaining({ condition: 'monitoring-degraded', state: 'resolved' }),
    ]);
  });

  it('alternates firing and resolved per condition, whatever the input', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            temperatureC: fc.integer({ min: 0, max: 120 }),
            utilPercent: fc.integer({ min: 0, max: 100 }),
            powerW: fc.integer({ min: 0, max: 500 }),
          }),
          { maxLength: 60 },
        ),
        (series) => {
          const ev = new HealthEvaluator();
          const last = new Map<string, string>();
          series.forEach((r, i) => {
            for (const e of ev.evaluate([{ ...base, ...r, powerLimitW: 400 }], at(i * 30))) {
              const prev = last.get(e.condition) ?? 'resolved';
              // A resolved event only ever follows a firing one.
              if (e.state === 'resolved') expect(prev).toBe('firing');
              last.set(e.condition, e.state);
            }
          });
        },
      ),
    );
  });
});
