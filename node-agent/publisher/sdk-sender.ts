/**
 * The EventBridge adapter: the only publisher file that imports the AWS SDK.
 * Needs IAM `events:PutEvents` on the bus.
 *
 * The default client is built with no endpoint options, so `AWS_ENDPOINT_URL_EVENTBRIDGE` (or
 * the region's endpoint) decides where it goes. The SDK's own retries are off (`maxAttempts: 1`):
 * the publisher owns the retry policy, and two layers of retries would multiply (5 x 3 attempts)
 * and hide the bus's state from the spool logic. Timeouts keep a hung bus from stalling the pump.
 */
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import type { EntryResult, PutEntry, PutEventsSender } from './types.ts';

/**
 * `throwOnRequestTimeout` matters: without it this SDK version only logs a warning when
 * `requestTimeout` passes and keeps waiting, so a bus that accepts and never answers would stall
 * the publisher for good (measured against a silent loopback server).
 */
export function defaultEventBridgeClient(): EventBridgeClient {
  return new EventBridgeClient({
    maxAttempts: 1,
    requestHandler: { connectionTimeout: 3_000, requestTimeout: 10_000, throwOnRequestTimeout: true },
  });
}

export function sdkSender(client: EventBridgeClient = defaultEventBridgeClient()): PutEventsSender {
  return async (entries: readonly PutEntry[], options?: { signal?: AbortSignal }): Promise<EntryResult[]> => {
    const out = await client.send(
      new PutEventsCommand({ Entries: entries.map((e) => ({ ...e })) }),
      options?.signal ? { abortSignal: options.signal } : {},
    );
    const slots = out.Entries ?? [];
    return entries.map((_, i): EntryResult => {
      const slot = slots[i];
      if (slot?.EventId) return { ok: true, eventId: slot.EventId };
      // A missing slot is not a success we can prove: treat it as a transient failure.
      if (!slot) return { ok: false, code: 'InternalFailure', message: 'response carried no result for this entry' };
      return { ok: false, code: slot.ErrorCode ?? 'InternalFailure', message: slot.ErrorMessage ?? '' };
    });
  };
}
