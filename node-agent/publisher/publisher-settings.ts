/** The publisher's knobs (the agent sets them from its config) and their defaults. */
import type { BackoffPolicy } from './retry-policy.ts';

export interface PublisherSettings {
  busName: string;
  /** Flush a partial batch this long after its first event arrived. */
  batchDelayMs: number;
  /**
   * Send a batch holding a critical event (XID, health alarm) at once instead of waiting out the
   * batch window: the window saves calls for inventory and utilization, not for alarms.
   */
  criticalImmediately: boolean;
  /**
   * Write a critical event (and what is queued before it) to the spool, fsynced, before its first
   * send, and drop it from there on the bus's acknowledgement: a kill at any moment loses none.
   */
  writeAheadCritical: boolean;
  /** Attempts for one batch before it is spooled (bus unreachable) or dead-lettered (rejected). */
  maxAttempts: number;
  backoff: BackoffPolicy;
  /** While the bus is unreachable, one replay attempt per interval (jittered: 50-100% of it). */
  probeIntervalMs: number;
  /** Events held in memory while retrying before they are moved to the spool. */
  maxQueuedEvents: number;
}

export const DEFAULT_PUBLISHER_SETTINGS: Omit<PublisherSettings, 'busName'> = {
  batchDelayMs: 200,
  criticalImmediately: true,
  writeAheadCritical: true,
  maxAttempts: 5,
  backoff: { baseMs: 100, capMs: 5_000 },
  probeIntervalMs: 10_000,
  maxQueuedEvents: 1_000,
};
