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
import type { Context, EventBridgeEvent } from 'aws-lambda';
import { currentClock } from '../adapters/clock.ts';
import { parseEventBridgeEvent, type TypedEvent } from './event-input.ts';
import { classifyErrors, loggerContext, loggerOf, metered, outcomeOfStatus, parseInput } from './middleware.ts';
import type { Ctx, HandlerContext, LoggerSource, MeteredSpec } from './middleware.ts';
import type { HandlerOutcome } from './failure-meaning.ts';

// Importable from here as before.
export { parseEventBridgeEvent, type TypedEvent } from './event-input.ts';
export { classify, DropEvent, meaningOf, type HandlerOutcome, type Meaning } from './failure-meaning.ts';
export { httpHandler, rawHttpHandler, type HttpHandlerSpec, type RawHttpHandlerSpec } from './http-handler.ts';
export type { HandlerContext, MeteredSpec } from './middleware.ts';

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
