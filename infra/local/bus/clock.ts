/**
 * Time for the local bus. Everything that waits (schedules, retry backoff, event age, Lambda
 * `getRemainingTimeInMillis`) reads an injected clock, so tests step time instead of sleeping.
 */
export interface Clock {
  now(): number;
}

/** A clock that only moves when told to. `advance` on the bus moves it through due timers. */
export class ManualClock implements Clock {
  constructor(private t: number = Date.UTC(2026, 0, 1)) {}
  now(): number {
    return this.t;
  }
  /** Time never runs backwards: setting an earlier instant is ignored. */
  set(t: number): void {
    if (t > this.t) this.t = t;
  }
}

export const systemClock: Clock = { now: () => Date.now() };

export function isManualClock(c: Clock): c is ManualClock {
  return c instanceof ManualClock;
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
