/**
 * The outbox: events an invocation decided to publish are written with the state it writes (on
 * the node, in the same patch as its history), published, and cleared once the bus accepted them.
 * A retry of an event already handled (the state says so) finds them still pending and publishes
 * them instead of answering "nothing to do"; so does the next sweep of that node. Event ids are
 * deterministic, so a consumer that saw the first attempt dedupes the second.
 */
import { z } from 'zod';
import type { PublishedEvent } from '../adapters/bus.ts';

export const OUTBOX_ANNOTATION = 'gpu-reflex.io/outbox';

/** Stay well inside the 256 KiB the API server allows for all of a node's annotations together. */
const MAX_BYTES = 64 * 1024;

const PendingSchema = z.array(
  z.object({ source: z.string(), detailType: z.string(), detail: z.record(z.string(), z.unknown()), resources: z.array(z.string()).optional() }),
);

/** Pending events on a node; a corrupt outbox reads as empty, with a warning (never throws). */
export function readOutbox(annotations: Readonly<Record<string, string>>): { events: PublishedEvent[]; warning?: string } {
  const raw = annotations[OUTBOX_ANNOTATION];
  if (raw === undefined) return { events: [] };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  const parsed = PendingSchema.safeParse(json);
  if (!parsed.success) return { events: [], warning: `${OUTBOX_ANNOTATION} is corrupt: its events are lost` };
  return { events: parsed.data.map((e) => ({ source: e.source, detailType: e.detailType, detail: e.detail, ...(e.resources ? { resources: e.resources } : {}) })) };
}

/** The annotation value for `events` (null removes it). Oversized step lists are trimmed to fit. */
export function encodeOutbox(events: readonly PublishedEvent[]): string | null {
  if (events.length === 0) return null;
  let text = JSON.stringify(events);
  if (Buffer.byteLength(text) <= MAX_BYTES) return text;
  const slim = events.map((e) => (Array.isArray(e.detail.steps) ? { ...e, detail: { ...e.detail, steps: (e.detail.steps as { message?: string }[]).slice(0, 100).map(({ message: _m, ...s }) => s) } } : e));
  text = JSON.stringify(slim);
  return text;
}

/** Pending first, then the new ones; one entry per event id (the newest rendering wins). */
export function mergeOutbox(pending: readonly PublishedEvent[], next: readonly PublishedEvent[]): PublishedEvent[] {
  const byId = new Map<string, PublishedEvent>();
  for (const e of [...pending, ...next]) byId.set(`${e.detailType}\u0000${String(e.detail.eventId)}`, e);
  return [...byId.values()];
}
