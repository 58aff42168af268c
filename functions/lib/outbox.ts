/**
 * The outbox: events an invocation decided to publish are written with the state it writes (on
 * the node, in the same patch as its history — or, for a reflex whose state is a state-store key
 * rather than a node, in that key's record: `recordWithOutbox`, `flushStoreOutbox`), published,
 * and cleared once the bus accepted them (from the node as it is then: `rewriteOutbox`; from the record as it is
 * then: `flushStoreOutbox`).
 * A retry of an event already handled (the state says so) finds them still pending and publishes
 * them instead of answering "nothing to do"; so does the next sweep of that node. Event ids are
 * deterministic, so a consumer that saw the first attempt dedupes the second.
 */
import * as z from 'zod';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import type { Notice, Notifier } from '../adapters/chat/notifier.ts';
import type { Json } from '../adapters/kube/model.ts';
import type { NodeOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import { ConflictError } from '../adapters/errors.ts';

/** A chat notice waiting to be sent; `id` (from its content) keeps one copy per notice. */
export type PendingNotice = Notice & { id: string };

/** What a node's outbox holds. */
export interface Outbox {
  events: PublishedEvent[];
  notices: PendingNotice[];
}

export const OUTBOX_ANNOTATION = 'gpu-reflex.io/outbox';

/** Stay well inside the 256 KiB the API server allows for all of a node's annotations together. */
const MAX_BYTES = 64 * 1024;

const EventSchema = z.object({
  source: z.string(),
  detailType: z.string(),
  detail: z.record(z.string(), z.unknown()),
  resources: z.array(z.string()).optional(),
});
const NoticeSchema = z.object({
  id: z.string(),
  title: z.string(),
  text: z.string(),
  severity: z.enum(['info', 'warning', 'critical']),
  approval: z.object({ id: z.string() }).optional(),
});
const PendingSchema = z.object({ events: z.array(EventSchema), notices: z.array(NoticeSchema) });

/** What a node's outbox holds; a corrupt outbox reads as empty, with a warning (never throws). */
export function readOutbox(annotations: Readonly<Record<string, string>>): Outbox & { warning?: string } {
  const raw = annotations[OUTBOX_ANNOTATION];
  if (raw === undefined) return { events: [], notices: [] };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    json = undefined;
  }
  const parsed = PendingSchema.safeParse(json);
  if (!parsed.success)
    return { events: [], notices: [], warning: `${OUTBOX_ANNOTATION} is corrupt: its events are lost` };
  return {
    events: parsed.data.events.map((e) => ({
      source: e.source,
      detailType: e.detailType,
      detail: e.detail,
      ...(e.resources ? { resources: e.resources } : {}),
    })),
    notices: parsed.data.notices.map(({ approval, ...n }) => ({ ...n, ...(approval ? { approval } : {}) })),
  };
}

/** The annotation value (null removes it when empty). Oversized step lists are trimmed to fit. */
export function encodeOutbox(box: Outbox): string | null {
  if (box.events.length === 0 && box.notices.length === 0) return null;
  const text = JSON.stringify(box);
  if (Buffer.byteLength(text) <= MAX_BYTES) return text;
  const events = box.events.map((e) =>
    Array.isArray(e.detail.steps)
      ? {
          ...e,
          detail: {
            ...e.detail,
            steps: (e.detail.steps as { message?: string }[]).slice(0, 100).map(({ message: _m, ...s }) => s),
          },
        }
      : e,
  );
  return JSON.stringify({ events, notices: box.notices.map((n) => ({ ...n, text: n.text.slice(0, 1000) })) });
}

/** A notice with its id (FNV-1a of its content): the same notice twice is one. */
export function pendingNotice(n: Notice): PendingNotice {
  let h = 0x811c9dc5;
  const text = `${n.severity}\u0000${n.title}\u0000${n.text}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return { ...n, id: `ntc-${h.toString(16)}` };
}

export function mergeNotices(a: readonly PendingNotice[], b: readonly PendingNotice[]): PendingNotice[] {
  return [...new Map([...a, ...b].map((n) => [n.id, n])).values()];
}

/** An event's identity in an outbox: its detail-type and event id (what consumers dedupe by). */
export const eventKey = (e: PublishedEvent): string => `${e.detailType}\u0000${String(e.detail.eventId)}`;

/** Pending first, then the new ones; one entry per event id (the newest rendering wins). */
export function mergeOutbox(pending: readonly PublishedEvent[], next: readonly PublishedEvent[]): PublishedEvent[] {
  const byId = new Map<string, PublishedEvent>();
  for (const e of [...pending, ...next]) byId.set(eventKey(e), e);
  return [...byId.values()];
}

/**
 * Changes the node's outbox as it is now, not as this invocation wrote it: every function keeps its outbox in the
 * one annotation, each under a lock of its own (remediation's node lease, rebalance-mig's lease, idle-gpus' and
 * label-nodes' resourceVersion), so another may have recorded its own there since. Writing back what this one had
 * left (a blind patch) erased those: that function's retry then found the outbox empty, and its event was never
 * sent. Sent against the node as read; on a 409, read again; still conflicting, the outbox is left as it is (what
 * went goes again, under the same ids, which consumers dedupe).
 */
export async function rewriteOutbox(
  nodes: Pick<NodeOps, 'get' | 'update'>,
  node: string,
  change: (box: Outbox) => Outbox,
): Promise<void> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const now = await nodes.get(node);
    const box = readOutbox(now.annotations);
    const next = encodeOutbox(change(box));
    if (next === encodeOutbox(box)) return;
    try {
      await nodes.update(node, { annotations: { [OUTBOX_ANNOTATION]: next } }, { basis: now });
      return;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}

/** A state-store record that carries its own outbox. */
export interface WithOutbox {
  events?: PublishedEvent[];
  notices?: PendingNotice[];
}

/**
 * Writes `key`'s record as `change` makes it, with `events` and `notices` added to its outbox in the
 * same write (optimistic concurrency: store.update). Returns the record as written.
 */
export async function recordWithOutbox<R extends WithOutbox>(
  state: Pick<StateStore, 'update'>,
  key: string,
  change: (r: R) => R,
  events: readonly PublishedEvent[] = [],
  notices: readonly Notice[] = [],
): Promise<R> {
  const written = await state.update(key, (cur) => {
    const r = change({ ...((cur ?? {}) as R) });
    const ev = mergeOutbox(r.events ?? [], events);
    const nt = mergeNotices(r.notices ?? [], notices.map(pendingNotice));
    return {
      ...r,
      ...(ev.length > 0 ? { events: ev } : {}),
      ...(nt.length > 0 ? { notices: nt } : {}),
    } as unknown as Json;
  });
  return (written ?? {}) as R;
}

/**
 * Sends `key`'s outbox: notices best-effort (a failed one stays for the next round), then the events until the bus
 * takes them (a failure throws, the
 * events stay); then clears from the record what went. `r` is the record as just written or read.
 */
export async function flushStoreOutbox(
  ports: { state: Pick<StateStore, 'update'>; publisher: EventPublisher; notifier: Notifier; logger: Logger },
  key: string,
  r: WithOutbox,
): Promise<void> {
  if ((r.events ?? []).length === 0 && (r.notices ?? []).length === 0) return;
  const sent = new Set<string>();
  for (const n of r.notices ?? []) {
    try {
      await ports.notifier.notify({
        title: n.title,
        text: n.text,
        severity: n.severity,
        ...(n.approval ? { approval: n.approval } : {}),
      });
      sent.add(n.id);
    } catch (err) {
      ports.logger.warn('chat notice failed; kept for the next round', { key, title: n.title, error: err });
    }
  }
  const events = r.events ?? [];
  const clear = (published: ReadonlySet<string>) =>
    ports.state.update(key, (cur) => {
      const c = { ...((cur ?? {}) as WithOutbox & Record<string, unknown>) };
      const left = (c.events ?? []).filter((e) => !published.has(eventKey(e)));
      const notices = (c.notices ?? []).filter((n) => !sent.has(n.id));
      if (left.length > 0) c.events = left;
      else delete c.events;
      if (notices.length > 0) c.notices = notices;
      else delete c.notices;
      return Object.keys(c).length > 0 ? (c as unknown as Json) : undefined;
    });
  try {
    if (events.length > 0) await ports.publisher.publish(events);
  } catch (err) {
    // The events stay for the next round; the notices that went do not (never twice in chat).
    if (sent.size > 0) await clear(new Set()).catch(() => undefined);
    throw err;
  }
  await clear(new Set(events.map(eventKey)));
}
