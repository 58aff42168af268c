import type { Clock } from './types.ts';

/** A clock tests step by hand. Starts at a fixed instant so object timestamps are reproducible. */
export class ManualClock implements Clock {
  private t: number;
  constructor(start: number | string = '2026-01-01T00:00:00Z') {
    this.t = typeof start === 'number' ? start : Date.parse(start);
  }
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    if (!(ms >= 0)) throw new Error(`advance: ms must be a non-negative number (got ${ms})`);
    this.t += ms;
  }
}

/** The wall clock, for `cluster serve` and kubectl tests that must see grace periods end by themselves. */
export const wallClock: Clock = { now: () => Date.now() };
