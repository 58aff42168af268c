/**
 * The handler variants every function is built from: EventBridge events, schedules and HTTP (API
 * Gateway v2). Each is middy with the same three middlewares, so the meaning of a failure is
 * decided once, here (STYLE.md "Errors"):
 *
 *   logger context → parse the input at the edge → the function's core → classify errors
 *
 *   bad input  → dropped with a log line naming the problem, never retried (retrying cannot fix it);
 *   not found  → already done, acknowledged;
 *   retryable (conflict, throttling, transient, blocked) → thrown, so the platform retries;
 *   anything else, our own bugs included → thrown (visible, retried, then dead-lettered), never dropped.
 *
 * HTTP maps the same meanings onto status codes (400, 404, 503, 500) instead of throwing.
 *
 * Around each, `metered` writes the invocation's numbers once it ends, whatever the outcome
 * (lib/metrics.ts: CloudWatch EMF lines where METRICS_NAMESPACE is set).
 */
import middy from '@middy/core';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context, EventBridgeEvent } from 'aws-lambda';
import type * as z from 'zod';
import { EventEnvelopeSchema } from '../../events/envelope.ts';
import { problemsOf, validateDetail } from '../../events/validate.ts';
import { currentClock } from '../adapters/clock.ts';
import { AdapterError, BadInputError, NotFoundError } from '../adapters/errors.ts';
import type { Logger } from '../adapters/logger.ts';
import { InvocationMetrics, measuring, metricsNamespaceFromEnv, type MetricsOptions, type Outcome } from './metrics.ts';

export type HandlerOutcome =
  | { status: 'done'; result?: unknown }
  | { status: 'dropped'; reason: string }
  | { status: 'already-done'; reason: string };

export interface TypedEvent<D> {
  id: string;
  detailType: string;
  source: string;
  time: string;
  detail: D;
}

/** What the function's core gets besides its input: a logger with the invocation's context. */
export interface HandlerContext {
  logger: Logger;
  context: Context;
}

/** A logger, or a function giving it: the wiring's, which is built (asynchronously) at the first invocation. */
type LoggerSource = Logger | (() => Logger | Promise<Logger>);

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

/** What a handler variant's spec may say about its metrics (tests: a namespace and a sink). */
export interface MeteredSpec {
  metrics?: Partial<MetricsOptions>;
}

/**
 * The one place the functions' numbers are written: each invocation of `h` is measured (what it
 * publishes counted by the wiring's meteredPublisher) and its EMF line written when it ends, with
 * its outcome: the response's (`outcomeOf`), or the meaning of what it threw.
 */
function metered<E, R>(
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

const outcomeOfStatus = (r: HandlerOutcome): Outcome => r.status;
const outcomeOfHttp = (r: APIGatewayProxyStructuredResultV2): Outcome => {
  const s = r.statusCode ?? 200;
  return s === 503 ? 'retry' : s >= 500 ? 'bug' : s === 404 ? 'already-done' : s >= 400 ? 'dropped' : 'done';
};

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

/** The Lambda context, carrying the invocation's logger from the first middleware on. */
type Ctx = Context & { logger?: Logger };
type Req<E, R> = middy.Request<E, R, Error, Ctx>;
type Mw<E, R> = middy.MiddlewareObj<E, R, Error, Ctx>;

/** Middleware: a child logger named after the function and the request, for the core and errors. */
function loggerContext<E, R>(name: string, source: LoggerSource): Mw<E, R> {
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
function classifyErrors<E, R>(
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

/** Parses an EventBridge event into a typed detail, or throws DropEvent naming every problem. */
export function parseEventBridgeEvent<D>(raw: unknown, detailTypes: readonly string[]): TypedEvent<D> {
  const env = EventEnvelopeSchema.safeParse(raw, { reportInput: true });
  if (!env.success)
    throw new DropEvent(
      problemsOf(env.error)
        .map((p) => `${p.path}: ${p.message}`)
        .join('; '),
    );
  const e = env.data;
  if (!detailTypes.includes(e['detail-type']))
    throw new DropEvent(
      `detail-type: "${e['detail-type']}" is not one of ${detailTypes.map((t) => `"${t}"`).join(', ')}`,
    );
  const d = validateDetail(e['detail-type'], e.detail);
  if (!d.ok) throw new DropEvent(d.problems.map((p) => `${p.path}: ${p.message}`).join('; '));
  return { id: e.id, detailType: e['detail-type'], source: e.source, time: e.time, detail: d.value as D };
}

/** Middleware: the input parsed at the edge (the raw event is replaced by the typed one). */
function parseInput<E, R>(parse: (raw: unknown) => unknown): Mw<E, R> {
  return {
    before: (request: Req<E, R>) => {
      request.event = parse(request.event) as E;
    },
  };
}

export interface EventHandlerSpec<D> extends MeteredSpec {
  name: string;
  /** Detail-types this function accepts; anything else is dropped as bad input. */
  detailTypes: readonly string[];
  /** A logger, or a function giving it (wiring that happens at the first invocation). */
  logger: LoggerSource;
  handle(event: TypedEvent<D>, ctx: HandlerContext): Promise<unknown>;
}

/** EventBridge rule target: a typed event in, `HandlerOutcome` out. */
export function eventHandler<D>(spec: EventHandlerSpec<D>) {
  const h = middy<EventBridgeEvent<string, unknown>, HandlerOutcome, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(parseInput((raw) => parseEventBridgeEvent<D>(raw, spec.detailTypes)))
    .use(classifyErrors((o) => o))
    .handler(async (event, context) => {
      const typed = event as unknown as TypedEvent<D>;
      const logger = loggerOf(context).child({ eventId: typed.id, detailType: typed.detailType });
      return { status: 'done', result: await spec.handle(typed, { logger, context }) };
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfStatus);
}

export interface ScheduleHandlerSpec extends MeteredSpec {
  name: string;
  logger: LoggerSource;
  handle(ctx: HandlerContext): Promise<unknown>;
  /**
   * For a run that reads the whole cluster whatever woke it (rewrite-quotas): an event (a schedule
   * tick or a rule's event) older than the start of a run that completed in this container is
   * already covered, and is acknowledged without running again. A storm's hundreds of Remediation
   * events, queued behind reserved concurrency 1, so become a run or two, not hundreds.
   */
  coalesce?: boolean;
}

/**
 * When the event happened, rounded up to the end of its second: EventBridge's `time` has whole
 * seconds, so an event in the same second as a run's start may have come after it and is not covered.
 */
function eventTimeBound(event: unknown): number | undefined {
  const t = Date.parse(String((event as { time?: unknown } | null)?.time ?? ''));
  return Number.isFinite(t) ? Math.floor(t / 1000) * 1000 + 1000 : undefined;
}

/** Schedule target (`rate(1 minute)`): no input to parse; same classification. */
export function scheduleHandler(spec: ScheduleHandlerSpec) {
  const clock = currentClock();
  // The start of the last run that completed here (spec.coalesce): what happened before it, it read.
  let coveredUntil = -Infinity;
  const h = middy<unknown, HandlerOutcome, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(classifyErrors((o) => o))
    .handler(async (event, context): Promise<HandlerOutcome> => {
      const at = spec.coalesce ? eventTimeBound(event) : undefined;
      if (at !== undefined && at <= coveredUntil) {
        const since = new Date(coveredUntil).toISOString();
        loggerOf(context).info('coalesced: a run that started after this event read the cluster', { since });
        return { status: 'already-done', reason: `coalesced: covered by the run that started at ${since}` };
      }
      const startedAt = clock.now();
      const result = await spec.handle({ logger: loggerOf(context), context });
      coveredUntil = Math.max(coveredUntil, startedAt);
      return { status: 'done', result };
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfStatus);
}

export interface HttpHandlerSpec<B> extends MeteredSpec {
  name: string;
  logger: LoggerSource;
  /** The JSON body's schema; a body that fails it answers 400 naming every problem. */
  body: z.ZodType<B>;
  handle(body: B, ctx: HandlerContext & { request: APIGatewayProxyEventV2 }): Promise<unknown>;
}

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** API Gateway v2 (HTTP API): JSON body parsed at the edge; failures answered by their meaning. */
export function httpHandler<B>(spec: HttpHandlerSpec<B>) {
  const h = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(
      classifyErrors(
        (o) =>
          o.status === 'dropped'
            ? json(400, { error: o.reason })
            : o.status === 'already-done'
              ? json(404, { error: o.reason })
              : json(200, o),
        (_err, meaning) =>
          meaning === 'retry' ? json(503, { error: 'try again later' }) : json(500, { error: 'internal error' }),
      ),
    )
    .handler(async (request, context) => {
      let raw: unknown;
      try {
        const text =
          request.body === undefined
            ? ''
            : request.isBase64Encoded
              ? Buffer.from(request.body, 'base64').toString('utf8')
              : request.body;
        raw = JSON.parse(text || 'null');
      } catch (err) {
        throw new DropEvent(`body: not JSON (${(err as Error).message})`);
      }
      const parsed = spec.body.safeParse(raw);
      if (!parsed.success)
        throw new DropEvent(
          parsed.error.issues.map((i) => `body${i.path.length ? '.' + i.path.join('.') : ''}: ${i.message}`).join('; '),
        );
      const result = await spec.handle(parsed.data, { logger: loggerOf(context), context, request });
      return json(200, { status: 'done', result });
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfHttp);
}

export interface RawHttpHandlerSpec extends MeteredSpec {
  name: string;
  logger: LoggerSource;
  /** The raw body text (base64 undone) and the request: signed webhooks must see the bytes as sent. */
  handle(
    body: string,
    ctx: HandlerContext & { request: APIGatewayProxyEventV2 },
  ): Promise<APIGatewayProxyStructuredResultV2>;
}

/**
 * API Gateway v2 for webhooks that verify a signature over the raw body and answer in their
 * platform's shape (chat): the function builds its own response; failures are classified as for
 * every handler (retryable → 503, anything else → 500, logged).
 */
export function rawHttpHandler(spec: RawHttpHandlerSpec) {
  const h = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Ctx>()
    .use(loggerContext(spec.name, spec.logger))
    .use(
      classifyErrors(
        (o) => (o.status === 'dropped' ? json(400, { error: o.reason }) : json(200, o)),
        (_err, meaning) =>
          meaning === 'retry' ? json(503, { error: 'try again later' }) : json(500, { error: 'internal error' }),
      ),
    )
    .handler(async (request, context) => {
      const text =
        request.body === undefined
          ? ''
          : request.isBase64Encoded
            ? Buffer.from(request.body, 'base64').toString('utf8')
            : request.body;
      return spec.handle(text, { logger: loggerOf(context), context, request });
    });
  return metered(spec.name, spec, (e: Parameters<typeof h>[0], c: Context) => h(e, c), outcomeOfHttp);
}

function loggerOf(context: Ctx): Logger {
  if (!context.logger) throw new Error('loggerContext middleware did not run');
  return context.logger;
}
