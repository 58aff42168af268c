/**
 * PutEvents limits, computed the way AWS documents them ("Calculating PutEvents event entry
 * size"): 14 bytes for Time, plus the UTF-8 lengths of Source, DetailType, Detail and each
 * Resource. EventBusName is not counted. A call carries at most 10 entries and 256 KB.
 */
import { entrySize, MAX_ENTRY_BYTES } from '../../events/envelope.ts';
import type { QueuedRecord } from './types.ts';

export const MAX_ENTRIES_PER_CALL = 10;
/** One entry alone may use the whole call's 256 KB; the rule is the catalog's (events/envelope.ts). */
export const MAX_CALL_BYTES = MAX_ENTRY_BYTES;
export { entrySize };

/** Thrown (and counted, never sent) for an event that alone exceeds the per-call limit. */
export class EventTooLargeError extends Error {
  override name = 'EventTooLargeError';
  constructor(
    readonly eventId: string,
    readonly detailType: string,
    readonly size: number,
  ) {
    super(`event ${eventId} (${detailType}) is ${size} bytes, over the PutEvents limit of ${MAX_CALL_BYTES}`);
  }
}

/**
 * How many records from the head of `records` fit in one call. Always at least one when
 * `records` is non-empty (oversized events never get this far: they are rejected on publish).
 */
export function takeBatch<T extends Pick<QueuedRecord, 'source' | 'detailType' | 'detail' | 'resources'>>(
  records: readonly T[],
): T[] {
  const batch: T[] = [];
  let bytes = 0;
  for (const r of records) {
    if (batch.length === MAX_ENTRIES_PER_CALL) break;
    const size = entrySize(r);
    if (batch.length > 0 && bytes + size > MAX_CALL_BYTES) break;
    batch.push(r);
    bytes += size;
  }
  return batch;
}
