import { systemClock, VirtualClock } from '../../../events/clock.ts';
import type { Clock } from './types.ts';

/**
 * A clock tests step by hand: the one virtual clock (events/clock.ts), also accepting an ISO
 * start. Starts at a fixed instant so object timestamps are reproducible.
 */
export class ManualClock extends VirtualClock {
  constructor(start: number | string = '2026-01-01T00:00:00Z') {
    super(typeof start === 'number' ? start : Date.parse(start));
  }
}

/** The wall clock, for `cluster serve` and kubectl tests that must see grace periods end by themselves. */
export const wallClock: Clock = systemClock;
