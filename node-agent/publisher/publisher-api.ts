/**
 * The publisher's interface (publisher.ts): what it is given, and what publish, status and close answer.
 */
import type { Clock } from '../clock.ts';
import type { DeadLetterSink } from './dead-letter.ts';
import type { PublisherMetrics } from './publisher-metrics.ts';
import type { SpoolPort } from './spool.ts';
import type { OutgoingEvent, PublisherLog, PutEventsSender } from './types.ts';

export interface PublisherDeps {
  send: PutEventsSender;
  spool: SpoolPort;
  /**
   * The write-ahead journal for critical events (XIDs, health alarms): each is fsynced here the
   * moment it is published, before any send, and forgotten once the bus acknowledged it or the
   * spool holds it. openPublisher moves what a killed process left here into the spool.
   */
  journal?: SpoolPort;
  deadLetter: DeadLetterSink;
  /**
   * The catalog check (node-agent/events.ts `catalogProblems`): an event whose detail fails its
   * detail-type's schema is dead-lettered with a log line, never sent. Wired by openPublisherFromConfig;
   * unset, only the event's shape is checked (the publisher's own tests send schematic details).
   */
  check?: (event: OutgoingEvent) => readonly string[];
  clock: Clock;
  /** Uniform in [0, 1): the jitter source. */
  random: () => number;
  metrics?: PublisherMetrics;
  log?: PublisherLog;
}

export type PublishResult = { ok: true; seq: number } | { ok: false; error: Error };

export interface PublisherStatus {
  lastPublishAt: number | null;
  queued: number;
  spooledEvents: number;
  spoolBytes: number;
  busReachable: boolean;
}

export interface CloseReport {
  /** Events still in the spool when close returned (they are replayed on the next start). */
  spooled: number;
  deadlineHit: boolean;
}

export class PublisherClosedError extends Error {
  override name = 'PublisherClosedError';
}
