/**
 * What producers hand the publisher, and the port the publisher sends through.
 * Producers (XID watcher, health sampler, inventory, utilization) know nothing about batching,
 * retries or the spool; they call `publish(event)` and move on.
 */
import * as z from 'zod';
import type { OutgoingEvent, Priority } from '../events.ts';

export type { OutgoingEvent, Priority };

/**
 * critical = XID and health events, normal = inventory, bulk = utilization summaries.
 * `OutgoingEvent` itself is defined once, beside the producers (node-agent/events.ts): its
 * `detail.eventId` is deterministic so consumers can deduplicate, and the publisher never
 * changes it; replays carry the same bytes.
 */
export const PRIORITIES = ['bulk', 'normal', 'critical'] as const satisfies readonly Priority[];
/** Higher ranks are kept longer when the spool is full. (A new Priority fails to compile here.) */
export const priorityRank: Record<Priority, number> = { bulk: 0, normal: 1, critical: 2 };

/**
 * An event as the publisher keeps it: serialized once, at publish time, so every attempt and
 * every replay after a restart sends byte-identical Detail. `seq` orders records in one spool.
 */
export interface QueuedRecord {
  seq: number;
  priority: Priority;
  source: string;
  detailType: string;
  /** `JSON.stringify(event.detail)`, computed once. */
  detail: string;
  /** Epoch milliseconds. */
  time: number;
  resources?: string[];
  eventId: string;
}

/** One PutEvents entry, exactly the fields the SDK's `PutEventsRequestEntry` takes. */
export interface PutEntry {
  Time: Date;
  Source: string;
  DetailType: string;
  Detail: string;
  Resources?: string[];
  EventBusName: string;
}

/** The outcome of one entry, matched to the request by position (as PutEvents does). */
export type EntryResult = { ok: true; eventId: string } | { ok: false; code: string; message: string };

/**
 * The sending port: one PutEvents call.
 * Contract: resolves with one result per entry, in request order, when the call reached the bus
 * (a partial failure is still a resolved call). Rejects when the call as a whole failed (network
 * error, HTTP 5xx, throttling, auth): nothing in the batch can be assumed delivered, though a
 * rejected call may still have been applied by the bus (at-least-once). Must honour `signal`.
 */
export type PutEventsSender = (
  entries: readonly PutEntry[],
  options?: { signal?: AbortSignal },
) => Promise<EntryResult[]>;

/** Structured logs, one line each; the agent wires it to its logger. */
export interface PublisherLog {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export const silentLog: PublisherLog = { info() {}, warn() {}, error() {} };

/**
 * Checked on publish: a bad event is refused there with an error naming the field, instead of
 * becoming a spool line that fails its own schema on the next start (and is silently skipped).
 */
const OutgoingEventSchema = z.object({
  source: z.string().min(1),
  detailType: z.string().min(1),
  detail: z.looseObject({ eventId: z.string().min(1) }),
  time: z.date(),
  resources: z.array(z.string()).optional(),
  priority: z.enum(PRIORITIES),
});

export class MalformedEventError extends Error {
  override name = 'MalformedEventError';
}

/** Validates and serializes an event once; throws MalformedEventError naming the field. */
export function recordFromEvent(event: OutgoingEvent, seq: number): QueuedRecord {
  const parsed = OutgoingEventSchema.safeParse(event);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new MalformedEventError(
      `event ${String(event?.detail?.eventId)}: ${issue?.path.join('.') || 'event'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  try {
    return toRecord(event, seq);
  } catch (err) {
    throw new MalformedEventError(`event ${event.detail.eventId}: detail: not serializable as JSON (${String(err)})`);
  }
}

export function toRecord(event: OutgoingEvent, seq: number): QueuedRecord {
  const record: QueuedRecord = {
    seq,
    priority: event.priority,
    source: event.source,
    detailType: event.detailType,
    detail: JSON.stringify(event.detail),
    time: event.time.getTime(),
    eventId: event.detail.eventId,
  };
  if (event.resources !== undefined) record.resources = [...event.resources];
  return record;
}

export function toEntry(record: QueuedRecord, busName: string): PutEntry {
  const entry: PutEntry = {
    Time: new Date(record.time),
    Source: record.source,
    DetailType: record.detailType,
    Detail: record.detail,
    EventBusName: busName,
  };
  if (record.resources !== undefined) entry.Resources = record.resources;
  return entry;
}
