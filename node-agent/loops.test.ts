/**
 * The agent's loops on a virtual clock: runs happen exactly when the clock is moved past their time,
 * and never on the process's own timers (a loop that slept with setTimeout would not run at all here).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeClock } from './clock.ts';
import { Loop, runDueLoops, runLoops, type LoopSpec } from './loops.ts';
import type { PublisherLog } from './publisher/types.ts';

/** Lets the loops' promise chains settle (no time passes: only queued callbacks run). */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
}

function recorder(clock: FakeClock) {
  const t0 = clock.now();
  const runs: Record<string, number[]> = {};
  const spec = (name: string, everyMs: number, cadence: LoopSpec['cadence'], run?: () => Promise<unknown>) => ({
    name,
    everyMs,
    cadence,
    run: async () => {
      (runs[name] ??= []).push(clock.now() - t0);
      return run?.();
    },
  });
  return { runs, spec };
}

const errors: string[] = [];
const log: PublisherLog = { info() {}, warn() {}, error: (msg, f) => errors.push(`${msg}: ${String(f?.error)}`) };
afterEach(() => {
  errors.length = 0;
  vi.restoreAllMocks();
});

describe('runLoops', () => {
  it('runs each loop at once and then only when the injected clock reaches its time, never on a real timer', async () => {
    const realTimer = vi.spyOn(globalThis, 'setTimeout');
    const clock = new FakeClock();
    const { runs, spec } = recorder(clock);
    const stop = new AbortController();
    const done = runLoops([spec('sample', 5_000, 'rate'), spec('gpu actions', 2_000, 'delay')], {
      clock,
      stop: stop.signal,
      log,
    });
    await settle();
    expect(runs).toEqual({ sample: [0], 'gpu actions': [0] });
    for (let i = 0; i < 12; i++) {
      clock.advance(1_000);
      await settle();
    }
    expect(runs.sample).toEqual([0, 5_000, 10_000]);
    expect(runs['gpu actions']).toEqual([0, 2_000, 4_000, 6_000, 8_000, 10_000, 12_000]);
    stop.abort();
    await done;
    expect(clock.pendingTimers).toBe(0);
    expect(realTimer).not.toHaveBeenCalled();
  });

  it('keeps a fixed rate: a slow run skips the slots it overran instead of running them in a burst', async () => {
    const clock = new FakeClock();
    const { runs, spec } = recorder(clock);
    const stop = new AbortController();
    let slow = true;
    // The first run takes 12 s of clock time (a driver that hangs): the 5 s and 10 s slots pass meanwhile.
    const sample = spec('sample', 5_000, 'rate', async () => {
      if (slow) {
        slow = false;
        await clock.sleep(12_000);
      }
    });
    const done = runLoops([sample], { clock, stop: stop.signal, log });
    for (let i = 0; i < 20; i++) {
      clock.advance(1_000);
      await settle();
    }
    expect(runs.sample).toEqual([0, 15_000, 20_000]);
    stop.abort();
    await done;
  });

  it('logs a failing run and goes on', async () => {
    const clock = new FakeClock();
    const { runs, spec } = recorder(clock);
    const stop = new AbortController();
    const done = runLoops([spec('sample', 1_000, 'rate', () => Promise.reject(new Error('NVML gone')))], {
      clock,
      stop: stop.signal,
      log,
    });
    await settle();
    clock.advance(1_000);
    await settle();
    expect(runs.sample).toEqual([0, 1_000]);
    expect(errors).toEqual(['sample failed: NVML gone', 'sample failed: NVML gone']);
    stop.abort();
    await done;
  });
});

describe('runDueLoops (the embedded stack steps the same loops)', () => {
  it('runs the due loops in the order given, each on its own schedule', async () => {
    const clock = new FakeClock();
    const { runs, spec } = recorder(clock);
    const order: string[] = [];
    const loops = [
      new Loop(
        spec('sample', 1_000, 'rate', async () => order.push('sample')),
        clock,
        log,
      ),
      new Loop(
        spec('gpu actions', 5_000, 'delay', async () => order.push('gpu actions')),
        clock,
        log,
      ),
    ];
    for (let t = 0; t <= 6_000; t += 500) {
      clock.set(clock.now() + (t === 0 ? 0 : 500));
      await runDueLoops(loops, clock.now());
    }
    expect(runs.sample).toEqual([0, 1_000, 2_000, 3_000, 4_000, 5_000, 6_000]);
    expect(runs['gpu actions']).toEqual([0, 5_000]);
    expect(order.slice(0, 2)).toEqual(['sample', 'gpu actions']);
    expect(order.slice(-3)).toEqual(['sample', 'gpu actions', 'sample']);
  });
});
