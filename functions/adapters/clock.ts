/**
 * Time as a port. Production uses `systemClock`; tests use `manualClock`, whose `sleep` moves
 * time forward at once, so loops driven by a clock (drain, lease renewals) run without waiting.
 */
import { systemClock, type Clock as SharedClock } from '../../events/clock.ts';

/** The functions' view of the one clock (events/clock.ts): read time, and wait. */
export type Clock = Pick<SharedClock, 'now' | 'sleep'>;
export { systemClock };

/**
 * Where an injected clock is kept: on globalThis under a registered symbol rather than in a module
 * variable, because a host and the handlers it loads can hold two instances of this module (a CJS
 * host importing ESM handlers, a test runner's module graph); both must see one clock.
 */
const INJECTED = Symbol.for('gpu-reflex.functions.clock');
const slot = globalThis as { [INJECTED]?: Clock };
const active = (): Clock => slot[INJECTED] ?? systemClock;

/**
 * The clock the functions' wiring uses: the system clock in Lambda, or the one a host injected
 * (the embedded stack under `simulate` injects its virtual clock so functions, bus, cluster and
 * agents share one time). Read on every `now()` and `sleep()`, so wiring done before the
 * injection follows it too.
 */
export function currentClock(): Clock {
  return {
    now: () => active().now(),
    sleep: (ms) => active().sleep(ms),
  };
}

/** Makes `currentClock()` follow `clock` in this process; `undefined` goes back to the system clock. */
export function injectClock(clock: Clock | undefined): void {
  if (clock) slot[INJECTED] = clock;
  else delete slot[INJECTED];
}

export interface ManualClock extends Clock {
  /** Moves time forward by `ms` (also what `sleep` does), running the `onAdvance` hook. */
  advance(ms: number): Promise<void>;
}

/**
 * A clock that only moves when told. `onAdvance` lets a test move a simulator's clock in step
 * (for example the simulated cluster's `advance`, so terminating pods finish their grace period).
 */
export function manualClock(
  startMs = Date.UTC(2026, 0, 1),
  onAdvance?: (ms: number) => void | Promise<void>,
): ManualClock {
  let t = startMs;
  const advance = async (ms: number): Promise<void> => {
    if (!(ms >= 0)) throw new RangeError(`clock advance must be >= 0, got ${ms}`);
    t += ms;
    await onAdvance?.(ms);
  };
  return { now: () => t, sleep: advance, advance };
}
