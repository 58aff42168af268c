/**
 * The reflex core's skeleton (ARCHITECTURE.md "The reflex core"), shared by every function:
 *
 *   lock (Lease) → gather facts (read-only ports) → plan (pure) → record the outbox (events and
 *   chat notices) with the state → apply (applyActions) → notify, publish the outbox → report
 *
 * The lock is lease.ts `withLease`; `carryOut` here is everything after the plan. The function supplies
 * the facts and the planner; the rest is here, once.
 */
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import { AdapterError } from '../adapters/errors.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { NodeOps } from '../adapters/kube/ports.ts';
import { applyActions, type ActionPorts, type Applied, type RecordCodec, type StepOutcome } from './apply.ts';
import type { Logger } from '../adapters/logger.ts';
import {
  eventKey,
  mergeNotices,
  mergeOutbox,
  pendingNotice,
  rewriteOutbox,
  type Outbox,
  type PendingNotice,
} from './outbox.ts';
import { emptyEdit, type Actions } from './plan.ts';

export interface CarryOutPorts extends ActionPorts {
  /** `get`: what went is cleared from the outbox as the node holds it then (clearSent). */
  nodes: Pick<NodeOps, 'get' | 'update' | 'setCondition'>;
  publisher: EventPublisher;
  logger: Logger;
}

export interface CarryOut<R> {
  /** The node whose metadata holds the state and the outbox. */
  node: string;
  /** What an earlier invocation recorded and never got acknowledged (readOutbox). */
  pending: Outbox;
  actions: Actions<R>;
  /**
   * The events this plan publishes. Called with no outcome before acting (the copy recorded in
   * the outbox) and with it after (the copy sent): the same events with the same ids.
   */
  events(applied?: Applied): PublishedEvent[];
  codec?: RecordCodec<R>;
  /** The node as read for this plan: the state patch is sent against it, without another read. */
  basis?: NodeInfo;
  /**
   * The label a periodic pass finds this node's outbox by (remediation's sweep lists STATE_LABEL). With it
   * (and `basis`), the outbox is never left where that pass cannot see it — the label is written with the
   * outbox when the node has none — and a refused publish is not this invocation's failure: the events stay
   * recorded for the pass, so the platform neither retries nor dead-letters an event the outbox delivers later
   * (issue #29). Without it, a refused publish throws and the platform's retry sends the outbox.
   */
  sweptBy?: { label: string; value: string };
  /**
   * The caller's own periodic pass sends this node's outbox every round (rebalance-mig sends every MIG node's): as
   * with `sweptBy`, a refusal the bus may lift is not this invocation's failure; the events stay recorded for that
   * pass, so a throttled or unavailable bus holds no reflex up.
   */
  resentEachRound?: boolean;
}

/**
 * Records the plan's events and chat notices with its node edit (one patch), applies the rest,
 * sends the notices, publishes the events, and clears what was delivered from the outbox.
 *
 * A publish failure throws (the platform retries): the events stay recorded, and the retry, or
 * the next sweep of the node, publishes them — unless the node is one the sweep finds (`sweptBy`):
 * then it returns them as `deferred`, logged, and the sweep alone sends them. A notice that fails is
 * logged, stays in the outbox for the next invocation or sweep, and never fails anything; one that was
 * sent leaves the outbox even when the publish then fails, so a retry does not repeat it in chat.
 */
export async function carryOut<R>(
  c: CarryOut<R>,
  ports: CarryOutPorts,
): Promise<{ applied: Applied; published: PublishedEvent[]; deferred: PublishedEvent[] }> {
  const decided = c.events();
  const mine = c.actions.notices.map(pendingNotice);
  const fresh = decided.length > 0 || mine.length > 0;
  const box: Outbox = {
    events: mergeOutbox(c.pending.events, decided),
    notices: mergeNotices(c.pending.notices, mine),
  };
  const swept = c.sweptBy && c.basis ? c.sweptBy : undefined;
  const edit = fresh ? { nodeEdit: { ...(c.actions.nodeEdit ?? emptyEdit<R>(c.node)), outbox: box } } : {};
  if (edit.nodeEdit && swept && !(swept.label in c.basis!.labels) && !(swept.label in edit.nodeEdit.labels))
    edit.nodeEdit.labels = { ...edit.nodeEdit.labels, [swept.label]: swept.value };
  const applied = await applyActions({ ...c.actions, ...edit, notices: [] }, ports, c.codec, c.basis);

  const unsent: PendingNotice[] = [];
  const outcome = new Map<string, StepOutcome>();
  for (const n of box.notices) {
    if (ports.notifier.skipReason) {
      outcome.set(n.id, { result: 'skipped', message: ports.notifier.skipReason });
      continue;
    }
    try {
      await ports.notifier.notify({
        title: n.title,
        text: n.text,
        severity: n.severity,
        ...(n.approval ? { approval: n.approval } : {}),
      });
      outcome.set(n.id, { result: 'done' });
    } catch (err) {
      unsent.push(n);
      outcome.set(n.id, { result: 'failed', message: (err as Error).message.slice(0, 512) });
      ports.logger.warn('notice not sent: kept in the outbox for the next try', {
        node: c.node,
        title: n.title,
        error: err,
      });
    }
  }
  applied.notices = mine.map((n) => outcome.get(n.id) ?? { result: 'done' });

  // The copy sent: the decided events rendered with their outcome (same ids as recorded), after what was pending.
  const rendered = decided.length > 0 ? c.events(applied) : [];
  const send = mergeOutbox(c.pending.events, rendered);
  if (send.length === 0 && box.notices.length === 0) return { applied, published: [], deferred: [] };
  const told = new Set(box.notices.filter((n) => !unsent.includes(n)).map((n) => n.id));
  try {
    if (send.length > 0) await ports.publisher.publish(send);
  } catch (err) {
    // Best effort: forget the notices already sent; the events stay for the retry, as rendered after acting.
    if (told.size > 0) {
      const sent = new Map(send.map((e) => [eventKey(e), e]));
      await rewriteOutbox(ports.nodes, c.node, (box) => ({
        events: box.events.map((e) => sent.get(eventKey(e)) ?? e),
        notices: box.notices.filter((n) => !told.has(n.id)),
      })).catch(() => undefined);
    }
    // Recorded where the sweep looks: it sends them; nothing for the platform to retry or dead-letter.
    // A refusal the bus may lift (throttling, outage) only: a bug (an invalid event) still throws.
    const seen = (swept && (swept.label in c.basis!.labels || fresh)) || c.resentEachRound === true;
    if (!seen || !(err instanceof AdapterError && err.retryable)) throw err;
    ports.logger.error('events not published: the outbox keeps them for the next sweep or round', {
      node: c.node,
      events: send.length,
      error: err,
    });
    return { applied, published: [], deferred: send };
  }
  // Acknowledged: a second, small write. Should it fail, the events go out again under the same
  // ids, which consumers dedupe.
  const sent = new Set(send.map(eventKey));
  await rewriteOutbox(ports.nodes, c.node, (box) => ({
    events: box.events.filter((e) => !sent.has(eventKey(e))),
    notices: box.notices.filter((n) => !told.has(n.id)),
  }));
  return { applied, published: send, deferred: [] };
}
