/**
 * The one clock of gpu-reflex. Everything that reads time or waits — the agent's loops and
 * publisher, the functions (leases, windows, cooldowns, quiet periods, approval expiry), the local
 * bus (schedules, retries) and the simulated cluster (grace periods) — takes a `Clock` injected at
 * its wiring. Production passes `systemClock`; `simulate` passes one `VirtualClock` to all of them,
 * so hours of scenario replay in seconds with the same code.
 *
 * It lives in `events/` because that folder is the one contract the agent and the functions both
 * import; the infra simulators import it from here too.
 *
 * Contract: `now()` never runs backwards. `setTimer` calls `fn` once, no earlier than `delayMs`
 * after it was set, unless cancelled first (cancelling twice or after firing is harmless).
 * `sleep(ms)` resolves once `ms` of this clock's time has passed.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  setTimer(delayMs: number, fn: () => void): () => void;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(delayMs, fn) {
    const t = setTimeout(fn, Math.max(0, delayMs));
    // A pending retry or probe must not keep a finished process alive.
    t.unref();
    return () => clearTimeout(t);
  },
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

interface PendingTimer {
  at: number;
  order: number;
  fn: () => void;
}

/** The default start of a virtual clock: a fixed instant, so runs are reproducible. */
export const VIRTUAL_EPOCH = Date.UTC(2026, 0, 1);

/**
 * A clock that only moves when told to. Timers due at the same instant fire in the order they were
 * set; a timer set by a firing timer fires in the same move if it falls due before its end.
 * `sleep` is a timer, so code that awaits it resumes when time is moved past it.
 */
export class VirtualClock implements Clock {
  private current: number;
  private timers: PendingTimer[] = [];
  private order = 0;

  constructor(startMs: number = VIRTUAL_EPOCH) {
    if (!Number.isFinite(startMs)) throw new RangeError(`clock start must be a finite number of ms, got ${startMs}`);
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimer(delayMs: number, fn: () => void): () => void {
    const timer: PendingTimer = { at: this.current + Math.max(0, delayMs), order: this.order++, fn };
    this.timers.push(timer);
    return () => {
      this.timers = this.timers.filter((t) => t !== timer);
    };
  }

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimer(ms, resolve));
  }

  /** Moves time forward by `ms`, firing every timer that falls due on the way. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`clock advance must be >= 0 ms, got ${ms}`);
    this.moveTo(this.current + ms);
  }

  /** Moves time forward to `t` (never backwards: an earlier instant is ignored), firing due timers. */
  set(t: number): void {
    if (t > this.current) this.moveTo(t);
  }

  /** When the earliest pending timer is due, or undefined when none is. */
  nextDue(): number | undefined {
    let best: number | undefined;
    for (const t of this.timers) if (best === undefined || t.at < best) best = t.at;
    return best;
  }

  /** How many timers are waiting: lets a test assert that nothing is scheduled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  private moveTo(target: number): void {
    for (;;) {
      const next = this.earliest(target);
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      if (next.at > this.current) this.current = next.at;
      next.fn();
    }
    this.current = target;
  }

  private earliest(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.timers) {
      if (t.at > limit) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.order < best.order)) best = t;
    }
    return best;
  }
}
