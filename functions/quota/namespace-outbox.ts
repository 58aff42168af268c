import type { PublishedEvent } from '../adapters/bus.ts';
import type { Json } from '../adapters/kube/model.ts';
import { mergeOutbox } from '../lib/outbox.ts';
import type { QuotaDeps } from './deps.ts';

/** A namespace's outbox, kept in the state store under `quota.<namespace>` (the outbox rule). */
export const key = (ns: string) => `quota.${ns}`;

/**
 * Publishes what a namespace's outbox holds (`send`: those of `pending` still news), then clears `pending` (the
 * outbox rule).
 */
export async function flush(
  deps: QuotaDeps,
  ns: string,
  pending: PublishedEvent[],
  send: PublishedEvent[] = pending,
): Promise<void> {
  if (pending.length === 0) return;
  if (send.length > 0) await deps.publisher.publish(send);
  const sent = new Set(pending.map((e) => String(e.detail.eventId)));
  await deps.state.update(key(ns), (cur) => {
    const left = (((cur ?? {}) as { events?: PublishedEvent[] }).events ?? []).filter(
      (e) => !sent.has(String(e.detail.eventId)),
    );
    return left.length > 0 ? ({ events: left } as unknown as Json) : undefined;
  });
}

export async function record(
  deps: Pick<QuotaDeps, 'state'>,
  ns: string,
  event: PublishedEvent,
): Promise<PublishedEvent[]> {
  const written = (await deps.state.update(
    key(ns),
    (cur) =>
      ({
        events: mergeOutbox(((cur ?? {}) as { events?: PublishedEvent[] }).events ?? [], [event]),
      }) as unknown as Json,
  )) as { events?: PublishedEvent[] } | undefined;
  return written?.events ?? [event];
}
