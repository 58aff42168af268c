/**
 * The reflex core's skeleton (ARCHITECTURE.md "The reflex core"), shared by every function:
 *
 *   lock (Lease) → gather facts (read-only ports) → plan (pure) → record the outbox with the state
 *   → apply (applyActions) → publish the outbox → report
 *
 * `withLease` is the lock; `carryOut` is everything after the plan. The function supplies the
 * facts and the planner; the rest is here, once.
 */
import type { Clock } from '../adapters/clock.ts';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import { BlockedError } from '../adapters/errors.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import type { LeaseOps, NodeOps } from '../adapters/kube/ports.ts';
import { applyActions, type ActionPorts, type Applied, type RecordCodec } from './apply.ts';
import type { Logger } from './logger.ts';
import { mergeOutbox, OUTBOX_ANNOTATION } from './outbox.ts';
import { emptyEdit, type Actions } from './plan.ts';

export interface LeasePorts {
  leases: LeaseOps;
  clock: Clock;
  logger: Logger;
  /** Who holds the lease: the invocation's request id. */
  holder: string;
}

/**
 * Runs `work` holding the lease `name` (an exclusive section across invocations). A lease held by
 * another invocation throws BlockedError (the platform retries), unless `onBusy` says otherwise.
 */
export async function withLease<T>(name: string, durationS: number, ports: LeasePorts, work: () => Promise<T>, onBusy?: () => T): Promise<T> {
  const got = await ports.leases.tryAcquire(name, ports.holder, durationS, ports.clock);
  if (!got.acquired) {
    if (onBusy) return onBusy();
    throw new BlockedError(`${name} is held by another invocation`, { what: `lease ${name}` });
  }
  try {
    return await work();
  } finally {
    await ports.leases.release(name, ports.holder).catch((err: unknown) => ports.logger.warn('releasing lease', { lease: name, error: err }));
  }
}

export interface CarryOutPorts extends ActionPorts {
  nodes: Pick<NodeOps, 'update'>;
  publisher: EventPublisher;
}

export interface CarryOut<R> {
  /** The node whose metadata holds the state and the outbox. */
  node: string;
  /** Events an earlier invocation recorded and that were never acknowledged (readOutbox). */
  pending: readonly PublishedEvent[];
  actions: Actions<R>;
  /**
   * The events this plan publishes. Called with no outcome before acting (the copy recorded in
   * the outbox) and with it after (the copy sent): the same events with the same ids.
   */
  events(applied?: Applied): PublishedEvent[];
  codec?: RecordCodec<R>;
  /** The node as read for this plan: the state patch is sent against it, without another read. */
  basis?: NodeInfo;
}

/**
 * Records the plan's events with its node edit (one patch), applies the rest, publishes what is
 * pending and new, and clears the outbox once the bus accepted it. A publish failure throws (the
 * platform retries); the events stay recorded, and the retry, or the next sweep, sends them.
 */
export async function carryOut<R>(c: CarryOut<R>, ports: CarryOutPorts): Promise<{ applied: Applied; published: PublishedEvent[] }> {
  const decided = c.events();
  const recorded = decided.length > 0 ? { ...c.actions, nodeEdit: { ...(c.actions.nodeEdit ?? emptyEdit<R>(c.node)), outbox: mergeOutbox(c.pending, decided) } } : c.actions;
  const applied = await applyActions(recorded, ports, c.codec, c.basis);
  const send = mergeOutbox(c.pending, decided.length > 0 ? c.events(applied) : []);
  if (send.length === 0) return { applied, published: [] };
  await ports.publisher.publish(send);
  // Acknowledged: a second, small write, blind (removing our own annotation needs no read). Should
  // it fail, the events go out again under the same ids, which consumers dedupe.
  await ports.nodes.update(c.node, { annotations: { [OUTBOX_ANNOTATION]: null } }, { blind: true });
  return { applied, published: send };
}
