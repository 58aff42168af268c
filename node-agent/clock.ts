/**
 * The agent's view of the one clock (events/clock.ts): what it reads and the timers it sets
 * (batch windows, backoff, recovery probes, shutdown deadlines). Tests and `simulate` pass a
 * VirtualClock and step it instead of sleeping.
 */
import type { Clock as SharedClock } from '../events/clock.ts';

export type Clock = Pick<SharedClock, 'now' | 'setTimer'>;
export { systemClock } from '../events/clock.ts';

/** The virtual clock under the name the agent's tests know it by. */
export { VirtualClock as FakeClock } from '../events/clock.ts';
