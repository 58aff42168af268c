import { systemClock, type Clock as SharedClock } from '../../../events/clock.ts';

/**
 * Time for the local bus. Everything that waits (schedules, retry backoff, event age, Lambda
 * `getRemainingTimeInMillis`) reads an injected clock, so tests step time instead of sleeping.
 */
export type Clock = Pick<SharedClock, 'now'>;

/** The one virtual clock (events/clock.ts) under the bus's name for it; `set` and `advance` move it. */
export { VirtualClock as ManualClock } from '../../../events/clock.ts';

export { systemClock };

/**
 * A clock the bus can step: this module's ManualClock (`set`), or the other manual clocks in the
 * repository (`advance(ms)`, sync or async: infra/local/kube, functions/adapters), so one clock
 * can drive the bus, the simulated cluster and the functions together.
 */
export type SteppableClock = Clock & ({ set(t: number): void } | { advance(ms: number): void | Promise<void> });

export function isSteppable(c: Clock): c is SteppableClock {
  const o = c as Partial<{ set: unknown; advance: unknown }>;
  return typeof o.set === 'function' || typeof o.advance === 'function';
}

/** Moves a steppable clock forward to `t` (never backwards). */
export async function moveTo(c: SteppableClock, t: number): Promise<void> {
  const now = c.now();
  if (t <= now) return;
  if ('set' in c && typeof c.set === 'function') c.set(t);
  else await (c as { advance(ms: number): void | Promise<void> }).advance(t - now);
}

interface Timer {
  at: number;
  seq: number;
  run: () => void;
}

/**
 * Pending work keyed by due time. Ties run in the order they were added, so a run is
 * deterministic for a given sequence of calls.
 */
export class TimerQueue {
  private timers: Timer[] = [];
  private seq = 0;

  add(at: number, run: () => void): () => void {
    const t: Timer = { at, seq: this.seq++, run };
    this.timers.push(t);
    this.timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
    return () => {
      this.timers = this.timers.filter((x) => x !== t);
    };
  }

  /** Due time of the earliest timer, or undefined when none is pending. */
  nextAt(): number | undefined {
    return this.timers[0]?.at;
  }

  /** Removes and runs every timer due at or before `now`, earliest first. Returns how many ran. */
  runDue(now: number): number {
    let ran = 0;
    for (let t = this.timers[0]; t !== undefined && t.at <= now; t = this.timers[0]) {
      this.timers.shift();
      t.run();
      ran++;
    }
    return ran;
  }

  get size(): number {
    return this.timers.length;
  }

  clear(): void {
    this.timers = [];
  }
}

/**
 * A bus's `advance(ms)` on a steppable clock: what is pending is delivered, then the clock steps timer by timer to
 * `now + ms`, delivering after each, so a timer's work lands at its own time (both buses: index.ts, alibaba-bus.ts).
 */
export async function advanceThrough(
  clock: Clock,
  timers: TimerQueue,
  drain: () => Promise<void>,
  ms: number,
): Promise<void> {
  if (!isSteppable(clock))
    throw new Error('advance() needs a ManualClock (or a clock with advance(ms)); this bus runs on real time');
  if (!(ms >= 0)) throw new RangeError(`advance(ms): ms must be >= 0, got ${ms}`);
  const target = clock.now() + ms;
  await drain();
  for (let next = timers.nextAt(); next !== undefined && next <= target; next = timers.nextAt()) {
    await moveTo(clock, next);
    await drain();
  }
  await moveTo(clock, target);
  await drain();
}
