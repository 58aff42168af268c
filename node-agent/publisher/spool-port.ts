/**
 * The spool as the publisher sees it (spool.ts implements it): the port, what append answers, what a
 * start recovered, and how one is opened.
 */
import type { Priority, PublisherLog, QueuedRecord } from './types.ts';

export interface DroppedEvent {
  seq: number;
  eventId: string;
  detailType: string;
  priority: Priority;
}

export interface AppendOutcome {
  /** Events that were not kept: incoming ones refused and older ones evicted to make room. */
  dropped: DroppedEvent[];
  /** True when critical events pushed the spool past `maxBytes`. */
  overBound: boolean;
}

export interface SpoolRecovery {
  events: number;
  corruptLines: number;
  tornBytes: number;
}

export interface SpoolOptions {
  path: string;
  maxBytes: number;
  log?: PublisherLog;
}

/**
 * The port the publisher uses. Contract: `append` resolves once the kept records are fsynced; a
 * rejected `append` kept none of them (the file is cut back). `ack` forgets records (idempotent,
 * unknown seqs ignored). `readHead` returns live records oldest first.
 */
export interface SpoolPort {
  readonly events: number;
  readonly bytes: number;
  readonly lastSeq: number;
  append(records: readonly QueuedRecord[]): Promise<AppendOutcome>;
  readHead(max: number): Promise<QueuedRecord[]>;
  ack(seqs: readonly number[]): Promise<void>;
  close(): Promise<void>;
}
