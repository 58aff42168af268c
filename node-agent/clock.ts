/**
 * Time as a port. Everything in the agent that waits (batch windows, backoff, recovery probes,
 * shutdown deadlines) asks a Clock, so tests step time instead of sleeping.
 *
 * Contract: `setTimer` calls `fn` once, no earlier than `delayMs` after it was set, unless the
 * returned cancel function was called first. Cancelling twice or after firing is harmless.
 */
export interface Clock {
  now(): number;
  setTimer(delayMs: number, fn: () => void): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(delayMs, fn) {
    const t = setTimeout(fn, Math.max(0, delayMs));
    // A pending retry or probe must not keep a finished process alive.
    t.unref();
    return () => clearTimeout(t);
  },
};

interface PendingTimer {
  at: number;
  order: number;
  fn: () => void;
}

/** A clock that only moves when told to. Timers due at the same instant fire in the order set. */
export class FakeClock implements Clock {
  private current: number;
  private timers: PendingTimer[] = [];
  private order = 0;

  constructor(startMs = Date.UTC(2026, 0, 1)) {
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

  /** Moves time forward, firing every timer that falls due on the way (including ones they set). */
  advance(ms: number): void {
    const target = this.current + ms;
    for (;;) {
      const next = this.nextDue(target);
      if (!next) break;
      this.timers = this.timers.filter((t) => t !== next);
      this.current = next.at;
      next.fn();
    }
    this.current = target;
  }

  /** How many timers are waiting: lets a test assert that nothing is scheduled. */
  get pendingTimers(): number {
    return this.timers.length;
  }

  private nextDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.timers) {
      if (t.at > limit) continue;
      if (!best || t.at < best.at || (t.at === best.at && t.order < best.order)) best = t;
    }
    return best;
  }
}
