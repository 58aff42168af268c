import type middy from '@middy/core';
import type { APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { currentClock } from '../adapters/clock.ts';
import type { Logger } from '../adapters/logger.ts';
import { classify, meaningOf, type HandlerOutcome, type Meaning } from './failure-meaning.ts';
import { InvocationMetrics, measuring, metricsNamespaceFromEnv, type MetricsOptions, type Outcome } from './metrics.ts';

// The middlewares every handler variant (handler.ts, http-handler.ts) is built from, and its metering.
/** What the function's core gets besides its input: a logger with the invocation's context. */
export interface HandlerContext {
  logger: Logger;
  context: Context;
}

/** A logger, or a function giving it: the wiring's, which is built (asynchronously) at the first invocation. */
export type LoggerSource = Logger | (() => Logger | Promise<Logger>);

/** What a handler variant's spec may say about its metrics (tests: a namespace and a sink). */
export interface MeteredSpec {
  metrics?: Partial<MetricsOptions>;
}

/**
 * The one place the functions' numbers are written: each invocation of `h` is measured (what it
 * publishes counted by the wiring's meteredPublisher) and its EMF line written when it ends, with
 * its outcome: the response's (`outcomeOf`), or the meaning of what it threw.
 */
export function metered<E, R>(
  name: string,
  spec: MeteredSpec,
  h: (event: E, context: Context) => Promise<R>,
  outcomeOf: (response: R) => Outcome,
): (event: E, context: Context) => Promise<R> {
  const clock = currentClock();
  const opts: MetricsOptions = { namespace: metricsNamespaceFromEnv(), now: () => clock.now(), ...spec.metrics };
  return async (event, context) => {
    const m = new InvocationMetrics(name, opts);
    let outcome: Outcome = 'bug';
    try {
      const response = await measuring(m, () => h(event, context));
      outcome = outcomeOf(response);
      return response;
    } catch (err) {
      outcome = meaningOf(err) === 'retry' ? 'retry' : 'bug'; // thrown: a failure, whatever it was
      throw err;
    } finally {
      m.flush(outcome);
    }
  };
}

export const outcomeOfStatus = (r: HandlerOutcome): Outcome => r.status;
export const outcomeOfHttp = (r: APIGatewayProxyStructuredResultV2): Outcome => {
  const s = r.statusCode ?? 200;
  return s === 503 ? 'retry' : s >= 500 ? 'bug' : s === 404 ? 'already-done' : s >= 400 ? 'dropped' : 'done';
};

/** The Lambda context, carrying the invocation's logger from the first middleware on. */
export type Ctx = Context & { logger?: Logger };
type Req<E, R> = middy.Request<E, R, Error, Ctx>;
type Mw<E, R> = middy.MiddlewareObj<E, R, Error, Ctx>;

/** Middleware: a child logger named after the function and the request, for the core and errors. */
export function loggerContext<E, R>(name: string, source: LoggerSource): Mw<E, R> {
  return {
    before: async (request: Req<E, R>) => {
      const base = typeof source === 'function' ? await source() : source;
      request.context = Object.assign(request.context ?? ({} as Ctx), {
        logger: base.child({ function: name, requestId: request.context?.awsRequestId }),
      });
    },
  };
}

/** Middleware: the shared classification; `respond` turns an acknowledged outcome into the response. */
export function classifyErrors<E, R>(
  respond: (outcome: HandlerOutcome) => R,
  onThrow?: (err: unknown, meaning: Meaning) => R | undefined,
): Mw<E, R> {
  return {
    onError: (request: Req<E, R>) => {
      const logger = request.context?.logger;
      if (!logger) return; // failed before any context: let it throw
      try {
        request.response = respond(classify(request.error, logger));
      } catch (err) {
        const r = onThrow?.(err, meaningOf(err));
        if (r === undefined) throw err;
        request.response = r;
      }
    },
  };
}

/** Middleware: the input parsed at the edge (the raw event is replaced by the typed one). */
export function parseInput<E, R>(parse: (raw: unknown) => unknown): Mw<E, R> {
  return {
    before: (request: Req<E, R>) => {
      request.event = parse(request.event) as E;
    },
  };
}

export function loggerOf(context: Ctx): Logger {
  if (!context.logger) throw new Error('loggerContext middleware did not run');
  return context.logger;
}
