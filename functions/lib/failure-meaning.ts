import { AdapterError, BadInputError, NotFoundError } from '../adapters/errors.ts';
import type { Logger } from '../adapters/logger.ts';

/** The retry meaning of a failure, decided once for every handler variant (handler.ts). */
export type HandlerOutcome =
  | { status: 'done'; result?: unknown }
  | { status: 'dropped'; reason: string }
  | { status: 'already-done'; reason: string };

/** Input that failed its schema at the edge: bad input, with every problem named. */
export class DropEvent extends BadInputError {
  override name = 'DropEvent';
}

/** The retry meaning of a failure, decided once. */
export type Meaning = 'dropped' | 'already-done' | 'retry' | 'bug';

export function meaningOf(err: unknown): Meaning {
  // Only the event itself can be bad input: it failed its schema at the edge. A BadInputError from
  // further in (the API server refusing a patch we built with 400/422, a state key we derived) is
  // our own bug, and a bug is thrown and retried into the dead-letter queue, never dropped quietly.
  if (err instanceof DropEvent) return 'dropped';
  if (err instanceof NotFoundError) return 'already-done';
  if (err instanceof AdapterError && err.retryable) return 'retry';
  return 'bug';
}

/** Logs a failure by its meaning; returns the outcome to acknowledge, or throws to retry. */
export function classify(err: unknown, logger: Logger): HandlerOutcome {
  const meaning = meaningOf(err);
  const message = (err as Error).message;
  if (meaning === 'dropped') {
    logger.warn(err instanceof DropEvent ? 'dropping bad event' : 'dropping: bad input', {
      reason: message,
      error: err,
    });
    return { status: 'dropped', reason: message };
  }
  if (meaning === 'already-done') {
    logger.info('already done: not found', { error: err });
    return { status: 'already-done', reason: message };
  }
  if (meaning === 'retry') logger.warn('retrying later', { error: err });
  else logger.error('failed', { error: err });
  throw err;
}
