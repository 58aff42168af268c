import { randomUUID } from 'node:crypto';
import { jsonTextDepth, MAX_JSON_DEPTH } from '../../../events/json-depth.ts';
import { isoSeconds, type EventEnvelope } from './envelope.ts';
import { AwsRequestError, type EntryErrorCode } from './errors.ts';
import { DEFAULT_HISTORY_SIZE, Ring } from './history.ts';

/**
 * PutEvents semantics, shared by the HTTP server and the in-process `bus.put`: the request-level
 * checks (entry count, total size, bus exists), the per-entry checks, the envelope EventBridge
 * builds, and the per-entry fault injection tests use. No I/O here.
 */

/** One request entry as the SDK serializes it (`Time` in epoch seconds, `Detail` a JSON string). */
export interface PutEventsRequestEntry {
  Time?: number | string | Date;
  Source?: string;
  Resources?: string[];
  DetailType?: string;
  Detail?: string;
  EventBusName?: string;
  TraceHeader?: string;
}

export type EntryFailure = { ErrorCode: string; ErrorMessage: string };
export type PutEventsResultEntry = { EventId: string } | EntryFailure;

export interface PutEventsResponse {
  FailedEntryCount: number;
  Entries: PutEventsResultEntry[];
}

/** AWS quotas: 10 entries per call; 256 KB for the whole request (entry sizes summed). */
export const MAX_ENTRIES = 10;
export const MAX_REQUEST_BYTES = 256 * 1024;

/**
 * Entry size as AWS documents it ("Calculating PutEvents event entry size"): Time counts 14 bytes
 * when present; Source, DetailType, Detail and each Resources item count their UTF-8 bytes.
 */
export function entrySize(entry: PutEventsRequestEntry): number {
  const bytes = (s: unknown): number => (typeof s === 'string' ? Buffer.byteLength(s, 'utf8') : 0);
  let size = entry.Time !== undefined && entry.Time !== null ? 14 : 0;
  size += bytes(entry.Source) + bytes(entry.DetailType) + bytes(entry.Detail);
  for (const r of entry.Resources ?? []) size += bytes(r);
  return size;
}

export interface AcceptedEvent {
  busName: string;
  envelope: EventEnvelope;
}

export interface IngestOptions {
  account: string;
  region: string;
  /** Names of buses that exist; `default` always does. */
  busNames: () => Iterable<string>;
  now: () => number;
  newId?: () => string;
  /** Accepted events kept for `events` (the last N); default DEFAULT_HISTORY_SIZE. */
  historySize?: number;
}

interface PendingFailure {
  code: 'InternalFailure' | 'ThrottlingException';
}

const FAULT_MESSAGES: Record<PendingFailure['code'], string> = {
  InternalFailure: 'Internal Failure',
  ThrottlingException: 'Rate exceeded',
};

/** Validates and accepts PutEvents requests; remembers the last accepted events in order, and counts all. */
export class PutEventsIngest {
  private readonly history: Ring<AcceptedEvent>;
  /** Accepted events per detail-type since the start, beyond what `events` keeps. */
  readonly countsByDetailType = new Map<string, number>();
  private readonly pendingFailures: PendingFailure[] = [];
  private readonly newId: () => string;

  constructor(
    private readonly opts: IngestOptions,
    private readonly onAccepted: (event: AcceptedEvent) => void,
  ) {
    this.newId = opts.newId ?? randomUUID;
    this.history = new Ring(opts.historySize ?? DEFAULT_HISTORY_SIZE);
  }

  /** The last accepted events (at most historySize), oldest first. */
  get events(): AcceptedEvent[] {
    return this.history.toArray();
  }

  /** Events accepted since the start, kept or not. */
  get acceptedCount(): number {
    return this.history.total;
  }

  /** The next `n` otherwise-valid entries fail with `code` (a retryable per-entry error). */
  failNext(n: number, fault: PendingFailure = { code: 'InternalFailure' }): void {
    for (let i = 0; i < n; i++) this.pendingFailures.push(fault);
  }

  /** Throws AwsRequestError for request-level failures; otherwise answers per entry. */
  put(body: unknown): PutEventsResponse {
    const entries = requestEntries(body);
    const total = entries.reduce((sum, e) => sum + entrySize(e), 0);
    if (total > MAX_REQUEST_BYTES) {
      throw new AwsRequestError('ValidationException', 'Total size of the entries in the request is over the limit.');
    }
    // A missing bus fails the whole call before any entry is accepted: nothing half-applied.
    const known = new Set(['default', ...this.opts.busNames()]);
    for (const e of entries) {
      const name = busNameOf(e.EventBusName);
      if (!known.has(name)) {
        throw new AwsRequestError('ResourceNotFoundException', `Event bus ${name} does not exist.`);
      }
    }
    const results: PutEventsResultEntry[] = entries.map((e) => this.one(e));
    const failed = results.filter((r) => 'ErrorCode' in r).length;
    return { FailedEntryCount: failed, Entries: results };
  }

  private one(entry: PutEventsRequestEntry): PutEventsResultEntry {
    const checked = checkEntry(entry);
    if ('ErrorCode' in checked) return checked;
    const fault = this.pendingFailures.shift();
    if (fault) return { ErrorCode: fault.code, ErrorMessage: FAULT_MESSAGES[fault.code] };
    const envelope: EventEnvelope = {
      version: '0',
      id: this.newId(),
      'detail-type': entry.DetailType as string,
      source: entry.Source as string,
      account: this.opts.account,
      time: isoSeconds(entryTimeMs(entry.Time) ?? this.opts.now()),
      region: this.opts.region,
      resources: [...(entry.Resources ?? [])],
      detail: checked.detail,
    };
    const accepted = { busName: busNameOf(entry.EventBusName), envelope };
    this.history.push(accepted);
    this.countsByDetailType.set(
      envelope['detail-type'],
      (this.countsByDetailType.get(envelope['detail-type']) ?? 0) + 1,
    );
    this.onAccepted(accepted);
    return { EventId: envelope.id };
  }
}

function requestEntries(body: unknown): PutEventsRequestEntry[] {
  if (typeof body !== 'object' || body === null || !('Entries' in body)) {
    throw new AwsRequestError(
      'ValidationException',
      "1 validation error detected: Value null at 'entries' failed to satisfy constraint: Member must not be null",
    );
  }
  const entries = (body as { Entries: unknown }).Entries;
  if (!Array.isArray(entries) || entries.some((e) => typeof e !== 'object' || e === null)) {
    throw new AwsRequestError('SerializationException', 'Entries must be a list of PutEventsRequestEntry objects');
  }
  if (entries.length < 1 || entries.length > MAX_ENTRIES) {
    const bound = entries.length < 1 ? 'greater than or equal to 1' : `less than or equal to ${MAX_ENTRIES}`;
    throw new AwsRequestError(
      'ValidationException',
      `1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length ${bound}`,
    );
  }
  return entries as PutEventsRequestEntry[];
}

/** EventBusName may be a name or an ARN (`arn:aws:events:<region>:<account>:event-bus/<name>`). */
export function busNameOf(nameOrArn: string | undefined): string {
  if (nameOrArn === undefined || nameOrArn === '') return 'default';
  const slash = nameOrArn.startsWith('arn:') ? nameOrArn.lastIndexOf('/') : -1;
  return slash >= 0 ? nameOrArn.slice(slash + 1) : nameOrArn;
}

function invalidArgument(field: string, reason: string): EntryFailure {
  return {
    ErrorCode: 'InvalidArgument' satisfies EntryErrorCode,
    ErrorMessage: `Parameter ${field} is not valid. Reason: ${reason}`,
  };
}

const MALFORMED_DETAIL = {
  ErrorCode: 'MalformedDetail' satisfies EntryErrorCode,
  ErrorMessage: 'Detail is malformed.',
};

/** Per-entry checks in the order AWS reports them; the parsed Detail when the entry is acceptable. */
function checkEntry(e: PutEventsRequestEntry): EntryFailure | { detail: Record<string, unknown> } {
  for (const field of ['Source', 'DetailType', 'Detail'] as const) {
    const v = e[field];
    if (v === undefined || v === null || v === '') return invalidArgument(field, `${field} is a required argument.`);
    if (typeof v !== 'string') return invalidArgument(field, `${field} must be a string.`);
  }
  const source = e.Source as string;
  const detailType = e.DetailType as string;
  if (source.length > 256) return invalidArgument('Source', 'Source exceeds the maximum length of 256.');
  if (detailType.length > 128) return invalidArgument('DetailType', 'DetailType exceeds the maximum length of 128.');
  if (source.startsWith('aws.')) {
    return {
      ErrorCode: 'NotAuthorizedForSourceException',
      ErrorMessage: `Not authorized for the source ${source}.`,
    };
  }
  if (e.Resources !== undefined && (!Array.isArray(e.Resources) || e.Resources.some((r) => typeof r !== 'string'))) {
    return invalidArgument('Resources', 'Resources must be a list of strings.');
  }
  if (e.Time !== undefined && e.Time !== null && entryTimeMs(e.Time) === undefined) {
    return invalidArgument('Time', 'Time is not a valid timestamp.');
  }
  // Depth is measured before parsing, in one pass: everything after (matching, cloning for
  // delivery, JSON.stringify in logs and reports) may then walk the detail without risk.
  if (jsonTextDepth(e.Detail as string) > MAX_JSON_DEPTH) {
    return {
      ErrorCode: 'MalformedDetail',
      ErrorMessage: `Detail is malformed: nested more than ${MAX_JSON_DEPTH} levels deep.`,
    };
  }
  // Detail must be a JSON object: arrays, scalars and broken JSON are all "malformed".
  let detail: unknown;
  try {
    detail = JSON.parse(e.Detail as string);
  } catch {
    return MALFORMED_DETAIL;
  }
  if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) return MALFORMED_DETAIL;
  return { detail: detail as Record<string, unknown> };
}

/** The SDK sends epoch seconds (possibly fractional); in-process callers may pass a Date or ISO string. */
function entryTimeMs(t: PutEventsRequestEntry['Time']): number | undefined {
  if (t === undefined || t === null) return undefined;
  const ms = t instanceof Date ? t.getTime() : typeof t === 'number' ? t * 1000 : Date.parse(t);
  // Beyond ±8.64e15 ms a Date cannot be written out: treat it as not a timestamp.
  return Number.isFinite(ms) && Math.abs(ms) <= 8.64e15 ? ms : undefined;
}
