import { describe, expect, it } from 'vitest';
import { UtilizationWindow } from './utilization.ts';
import type { GpuReading } from './reading.ts';

const gpu = (index: number, util: number, extra: Partial<GpuReading> = {}): GpuReading => ({
  index,
  uuid: `GPU-00000000-0000-4000-8000-00000000000${index}`,
  pciBusId: `00000000:${(0x18 + index).toString(16).toUpperCase()}:00.0`,
  name: 'NVIDIA H100 80GB HBM3',
  utilPercent: util,
  memoryUsedMiB: 40960,
  memoryTotalMiB: 81920,
  temperatureC: 60 + index,
  powerW: 300,
  ...extra,
});

describe('UtilizationWindow', () => {
  it('emits one summary per window with avg and max per GPU', () => {
    const w = new UtilizationWindow(60_000, 0);
    const out = [];
    for (let s = 0; s <= 60; s += 10) out.push(w.add([gpu(0, s), gpu(1, 100 - s)], s * 1000));
    const done = out.filter(Boolean);
    expect(done).toHaveLength(1);
    const summary = done[0]!;
    expect(summary.samples).toBe(6);
    expect(summary.windowStart).toBe('1970-01-01T00:00:00.000Z');
    expect(summary.windowEnd).toBe('1970-01-01T00:01:00.000Z');
    expect(summary.gpus[0]).toMatchObject({
      index: 0,
      utilPercent: { avg: 25, max: 50 },
      framebufferUsedPercent: { avg: 50, max: 50 },
    });
    expect(summary.gpus[1]).toMatchObject({ index: 1, utilPercent: { avg: 75, max: 100 } });
  });

  it('aggregates MIG devices by GPU instance', () => {
    const w = new UtilizationWindow(1000, 0);
    const mig = (used: number) => [
      {
        gpuInstanceId: 1,
        computeInstanceId: 0,
        profile: '3g.40gb',
        placement: { start: 4, size: 4 },
        memoryUsedMiB: used,
        memoryTotalMiB: 40000,
      },
    ];
    w.add([gpu(0, 10, { migDevices: mig(10000) })], 0);
    w.add([gpu(0, 10, { migDevices: mig(30000) })], 500);
    const s = w.flush(1000)!;
    expect(s.gpus[0]!.migDevices).toEqual([
      { gpuInstanceId: 1, profile: '3g.40gb', framebufferUsedPercent: { avg: 50, max: 75 } },
    ]);
  });

  it('gives no framebuffer for a MIG device whose memory NVML never reported in the window: unknown, not 0%', () => {
    // idle-gpus counts a MIG instance idle while its framebuffer stays empty (functions/idle/core/readings.ts):
    // an unread memory summarised as 0% would have a busy instance's pod reclaimed as idle.
    const w = new UtilizationWindow(1000, 0);
    const mig = (memoryUsedMiB?: number, memoryTotalMiB?: number) => ({
      gpuInstanceId: 1,
      computeInstanceId: 0,
      profile: '3g.40gb',
      placement: { start: 4, size: 4 },
      ...(memoryUsedMiB !== undefined ? { memoryUsedMiB } : {}),
      ...(memoryTotalMiB !== undefined ? { memoryTotalMiB } : {}),
    });
    w.add([gpu(0, 10, { migDevices: [mig()] })], 0);
    w.add([gpu(0, 10, { migDevices: [mig(undefined, 40000), { ...mig(0, 0), gpuInstanceId: 2 }] })], 500);
    const s = w.flush(1000)!;
    expect(s.gpus[0]!.migDevices).toEqual([
      { gpuInstanceId: 1, profile: '3g.40gb' },
      { gpuInstanceId: 2, profile: '3g.40gb' },
    ]);
  });

  it('omits what NVML did not report and skips lost GPUs', () => {
    const w = new UtilizationWindow(1000, 0);
    w.add(
      [
        { index: 0, uuid: 'GPU-00000000-0000-4000-8000-000000000000', pciBusId: '00000000:18:00.0', name: 'T4' },
        { ...gpu(1, 5), lost: true },
      ],
      0,
    );
    const s = w.flush(1000)!;
    expect(s.gpus).toEqual([
      {
        index: 0,
        uuid: 'GPU-00000000-0000-4000-8000-000000000000',
        migDevices: [],
      },
    ]);
  });

  it('never reports an unknown framebuffer as empty: a MIG device whose memory NVML did not give has none', () => {
    // idle-gpus counts a MIG device idle by its framebuffer alone: 0 % for "unknown" would reclaim a loaded model.
    const w = new UtilizationWindow(1000, 0);
    const instance = (memoryUsedMiB?: number) => ({
      gpuInstanceId: 1,
      computeInstanceId: 0,
      profile: '3g.40gb',
      placement: { start: 4, size: 4 },
      ...(memoryUsedMiB === undefined ? {} : { memoryUsedMiB, memoryTotalMiB: 40000 }),
    });
    w.add([gpu(0, 10, { memoryUsedMiB: undefined, migDevices: [instance()] })], 0);
    w.add([gpu(0, 10, { memoryUsedMiB: undefined, migDevices: [instance()] })], 500);
    const s = w.flush(1000)!;
    expect(s.gpus[0]!.framebufferUsedPercent).toBeUndefined();
    expect(s.gpus[0]!.migDevices).toEqual([{ gpuInstanceId: 1, profile: '3g.40gb' }]);
  });

  it('says how long a window went unsampled: a stall inside it is unknown time, never summarised as sampled', () => {
    // The agent's event loop blocked, NVML hung, the process was stopped: the next sample closes a window that spans
    // the stall with only the samples taken before it. idle-gpus read its max as the whole span's and counted minutes
    // nobody measured as idle (functions/idle/core/readings.ts); the window says so instead.
    const w = new UtilizationWindow(60_000, 0);
    for (let s = 0; s < 60; s += 5) expect(w.add([gpu(0, 0)], s * 1000)).toBeUndefined();
    expect(w.add([gpu(0, 0)], 60_000)).toMatchObject({ samples: 12, unsampledMs: 0 });
    for (let s = 65; s <= 80; s += 5) w.add([gpu(0, 0)], s * 1000);
    // No sample from 80 s to 380 s: the late one closes the window [60 s, 380 s].
    const stalled = w.add([gpu(0, 0)], 380_000)!;
    expect(stalled).toMatchObject({ windowEnd: '1970-01-01T00:06:20.000Z', samples: 5, unsampledMs: 300_000 });
    expect(stalled.gpus[0]!.utilPercent).toEqual({ avg: 0, max: 0 });
    // Sampling that failed (NVML errors: no sample added) is the same unknown time; the next window starts clean.
    const failing = new UtilizationWindow(60_000, 0);
    failing.add([gpu(0, 0)], 0);
    failing.add([gpu(0, 0)], 5_000);
    expect(failing.add([gpu(0, 0)], 135_000)).toMatchObject({ samples: 2, unsampledMs: 130_000 });
    expect(failing.flush(140_000)).toMatchObject({ samples: 1, unsampledMs: 0 });
  });

  it('holds a sample interval as long as the window, and a sample late by up to a window more, as on time', () => {
    // The embedded stack's scenarios sample every 60 s on 60 s windows, on a virtual clock that moves in steps: one
    // sample a window, now and then one 90 s after the last. A stall is a stretch longer than two windows.
    const w = new UtilizationWindow(60_000, 0);
    w.add([gpu(0, 0)], 0);
    expect(w.add([gpu(0, 0)], 60_000)).toMatchObject({ samples: 1, unsampledMs: 0 });
    expect(w.add([gpu(0, 0)], 150_000)).toMatchObject({ samples: 1, unsampledMs: 0 });
    expect(w.add([gpu(0, 0)], 270_000)).toMatchObject({ samples: 1, unsampledMs: 0 });
    expect(w.add([gpu(0, 0)], 390_001)).toMatchObject({ samples: 1, unsampledMs: 120_001 });
  });

  it('has nothing to say for a window without samples', () => {
    expect(new UtilizationWindow(1000, 0).flush(1000)).toBeUndefined();
  });
});
