/**
 * The one middy wrapper every EventBridge-triggered function uses: parse the event against the
 * catalog at the edge, then hand a typed detail to the function's core; decide the retry meaning
 * of a failure once, here (STYLE.md "Errors"):
 *   bad input  → dropped with a clear message, never retried (retrying cannot fix it);
 *   not found  → already done, acknowledged;
 *   retryable (conflict, throttling, transient, blocked) → thrown, so the platform retries;
 *   anything else → thrown (a bug should be visible and retried, then dead-lettered).
 */
import middy from '@middy/core';
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { EventEnvelopeSchema } from '../../events/envelope.ts';
import { problemsOf, validateDetail } from '../../events/validate.ts';
import { AdapterError, BadInputError, NotFoundError } from '../adapters/errors.ts';
import type { Logger } from './logger.ts';

export type HandlerOutcome = { status: 'done'; result?: unknown } | { status: 'dropped'; reason: string } | { status: 'already-done'; reason: string };

export interface TypedEvent<D> {
  id: string;
  detailType: string;
  source: string;
  time: string;
  detail: D;
}

export interface EventHandlerSpec<D> {
  name: string;
  /** Detail-types this function accepts; anything else is dropped as bad input. */
  detailTypes: readonly string[];
  /** A logger, or a function giving it (wiring that happens at the first invocation). */
  logger: Logger | (() => Logger);
  handle(event: TypedEvent<D>, ctx: { logger: Logger; context: Context }): Promise<unknown>;
}

class DropEvent extends Error {
  override name = 'DropEvent';
}

/** Parses an EventBridge event into a typed detail, or throws DropEvent naming every problem. */
export function parseEventBridgeEvent<D>(raw: unknown, detailTypes: readonly string[]): TypedEvent<D> {
  const env = EventEnvelopeSchema.safeParse(raw, { reportInput: true });
  if (!env.success) throw new DropEvent(problemsOf(env.error).map((p) => `${p.path}: ${p.message}`).join('; '));
  const e = env.data;
  if (!detailTypes.includes(e['detail-type'])) throw new DropEvent(`detail-type: "${e['detail-type']}" is not one of ${detailTypes.map((t) => `"${t}"`).join(', ')}`);
  const d = validateDetail(e['detail-type'], e.detail);
  if (!d.ok) throw new DropEvent(d.problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  return { id: e.id, detailType: e['detail-type'], source: e.source, time: e.time, detail: d.value as D };
}

export function eventHandler<D>(spec: EventHandlerSpec<D>) {
  return middy<EventBridgeEvent<string, unknown>, HandlerOutcome>().handler(async (raw, context) => {
    const base = typeof spec.logger === 'function' ? spec.logger() : spec.logger;
    const logger = base.child({ function: spec.name, requestId: context?.awsRequestId });
    let event: TypedEvent<D>;
    try {
      event = parseEventBridgeEvent<D>(raw, spec.detailTypes);
    } catch (err) {
      if (!(err instanceof DropEvent)) throw err;
      logger.warn('dropping bad event', { reason: err.message, eventId: (raw as { id?: unknown })?.id });
      return { status: 'dropped', reason: err.message };
    }
    try {
      const result = await spec.handle(event, { logger: logger.child({ eventId: event.id, detailType: event.detailType }), context });
      return { status: 'done', result };
    } catch (err) {
      return classify(err, logger);
    }
  });
}

/** The retry meaning of a failure, decided once. Returns an outcome to acknowledge, or throws to retry. */
export function classify(err: unknown, logger: Logger): HandlerOutcome {
  if (err instanceof BadInputError) {
    logger.warn('dropping: bad input', { error: err });
    return { status: 'dropped', reason: err.message };
  }
  if (err instanceof NotFoundError) {
    logger.info('already done: not found', { error: err });
    return { status: 'already-done', reason: err.message };
  }
  if (err instanceof AdapterError && err.retryable) logger.warn('retrying later', { error: err });
  else logger.error('failed', { error: err });
  throw err;
}
