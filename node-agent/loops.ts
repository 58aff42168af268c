/**
 * The agent's periodic loops — the GPU sample, the actuator's read of its Node — on the one injected
 * clock (clock.ts). A loop is data (what runs, how often, on which cadence) and its schedule; two
 * drivers run the same loops:
 *
 *  - `runLoops`: each loop on its own clock timers until `stop` (the agent's runtime, on the system
 *    clock in production; a test passes a VirtualClock and moves it). Loops do not wait for each
 *    other: a reset that takes the actuator a minute does not hold the next sample back.
 *  - `runDueLoops`: every loop that is due now, one after the other in the order given (the
 *    embedded stack's in-process agents, stepped on the virtual clock after their NVML clock and
 *    kernel log have moved, so that a replay is the same every time).
 *
 * A run that throws is logged (`<name> failed`) and the loop goes on: one bad sample must not stop
 * the agent watching its GPUs.
 */
import type { Clock } from './clock.ts';
import type { PublisherLog } from './publisher/types.ts';

export interface LoopSpec {
  /** Names the loop in its log line ("sample failed"). */
  name: string;
  everyMs: number;
  /**
   * `rate`: due on a fixed grid from the first run (a sample every SAMPLE_INTERVAL_MS however long
   * one took); a slot that passed while a run was slow is skipped, not made up in a burst.
   * `delay`: due `everyMs` after the last run ended (the actuator: a slow pass is not followed at once).
   */
  cadence: 'rate' | 'delay';
  run(): Promise<unknown>;
}

/** A loop and its schedule: when it is next due. The first run is due when the loop is made. */
export class Loop {
  private nextAt: number;

  constructor(
    readonly spec: LoopSpec,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly log: PublisherLog,
  ) {
    if (!(spec.everyMs > 0)) throw new RangeError(`loop ${spec.name}: everyMs must be > 0, got ${spec.everyMs}`);
    this.nextAt = clock.now();
  }

  /** When the next run is due (clock ms). */
  get dueAt(): number {
    return this.nextAt;
  }

  /** Runs once (a failure logged, never thrown) and sets when the next run is due. */
  async runOnce(): Promise<void> {
    const slot = this.nextAt;
    await this.spec.run().catch((err: unknown) => {
      this.log.error(`${this.spec.name} failed`, { error: err instanceof Error ? err.message : String(err) });
    });
    const now = this.clock.now();
    if (this.spec.cadence === 'delay') {
      this.nextAt = now + this.spec.everyMs;
      return;
    }
    let next = slot + this.spec.everyMs;
    if (next <= now) next += Math.floor((now - next) / this.spec.everyMs + 1) * this.spec.everyMs;
    this.nextAt = next;
  }
}

/** Resolves after `ms` of the clock's time, or at once when `stop` aborts (the timer cancelled). */
export function sleepOn(clock: Pick<Clock, 'setTimer'>, ms: number, stop?: AbortSignal): Promise<void> {
  if (stop?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = () => {
      cancel();
      stop?.removeEventListener('abort', done);
      resolve();
    };
    const cancel = clock.setTimer(ms, done);
    stop?.addEventListener('abort', done, { once: true });
  });
}

/** Each loop on the clock's timers, independently, until `stop` aborts; resolves once every loop ended. */
export async function runLoops(
  loops: readonly LoopSpec[],
  o: { clock: Pick<Clock, 'now' | 'setTimer'>; stop: AbortSignal; log: PublisherLog },
): Promise<void> {
  await Promise.all(
    loops.map(async (spec) => {
      const loop = new Loop(spec, o.clock, o.log);
      while (!o.stop.aborted) {
        await loop.runOnce();
        await sleepOn(o.clock, loop.dueAt - o.clock.now(), o.stop);
      }
    }),
  );
}

/** Runs, in order and one at a time, every loop due at `now`. */
export async function runDueLoops(loops: readonly Loop[], now: number): Promise<void> {
  for (const loop of loops) if (now >= loop.dueAt) await loop.runOnce();
}
