import type { EntryResult } from './types.ts';

/**
 * Retry decisions, as pure functions. The publisher owns the retry policy (the SDK's own retries
 * are off), so the rules live here in one place.
 */

export interface BackoffPolicy {
  baseMs: number;
  capMs: number;
}

/**
 * Exponential backoff with full jitter (AWS Architecture Blog, "Exponential Backoff And Jitter"):
 * a uniform draw in [0, min(cap, base * 2^attempt)). `attempt` counts failures so far, from 1.
 * Full jitter spreads a fleet of agents that lost the bus at the same moment.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number): number {
  const ceiling = Math.min(policy.capMs, policy.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.floor(random() * ceiling);
}

/**
 * Per-entry error codes worth retrying: the bus had a transient problem with that entry.
 * Anything else (MalformedDetail, InvalidArgument, NotAuthorizedForSourceException, ...) says
 * the entry itself is wrong; retrying would fail forever, so it is dead-lettered.
 */
const RETRYABLE_ENTRY_CODES = new Set([
  'InternalFailure',
  'InternalException',
  'ThrottlingException',
  'ServiceUnavailable',
  'ServiceUnavailableException',
  'ConcurrentModificationException',
]);

export function isRetryableEntryCode(code: string): boolean {
  return RETRYABLE_ENTRY_CODES.has(code);
}

/**
 * What a rejected call (the whole batch failed) means.
 * - `unavailable`: the bus could not be reached or would not take anything now (network error,
 *   timeout, 5xx, throttling, auth or missing bus, unknown). Retry, then spool and probe: the
 *   events are fine and will be sent once the bus recovers.
 * - `rejected`: the bus parsed the call and said the request is invalid (4xx validation). The
 *   same bytes will never pass; after the attempts, the batch is dead-lettered.
 */
export type CallFailure = 'unavailable' | 'rejected';

const REJECTED_CALL_NAMES = new Set(['ValidationException', 'SerializationException', 'InvalidParameterException']);

export function classifyCallError(err: unknown): { failure: CallFailure; code: string; status?: number } {
  const e = (err ?? {}) as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } };
  const code =
    typeof e.name === 'string' && e.name !== 'Error' ? e.name : typeof e.code === 'string' ? e.code : 'UnknownError';
  const status = typeof e.$metadata?.httpStatusCode === 'number' ? e.$metadata.httpStatusCode : undefined;
  const failure: CallFailure =
    REJECTED_CALL_NAMES.has(code) && (status === undefined || (status >= 400 && status < 500))
      ? 'rejected'
      : 'unavailable';
  return status === undefined ? { failure, code } : { failure, code, status };
}

/**
 * Sorts a call's per-entry results, matched by position as PutEvents answers them. A missing
 * slot is not a success we can prove, so it is retried.
 */
export function sortResults<T>(
  batch: readonly T[],
  results: readonly EntryResult[],
): { delivered: T[]; retry: T[]; dead: { record: T; code: string; message: string }[] } {
  const delivered: T[] = [];
  const retry: T[] = [];
  const dead: { record: T; code: string; message: string }[] = [];
  batch.forEach((record, i) => {
    const r = results[i] ?? { ok: false as const, code: 'InternalFailure', message: 'no result for this entry' };
    if (r.ok) delivered.push(record);
    else if (isRetryableEntryCode(r.code)) retry.push(record);
    else dead.push({ record, code: r.code, message: r.message });
  });
  return { delivered, retry, dead };
}
