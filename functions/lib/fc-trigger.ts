/**
 * Function Compute 3.0's EventBridge trigger in front of a handler written for AWS (issue #35): the
 * handler and its decision code stay exactly as they are; this adapter turns what FC delivers into
 * the EventBridge envelope they parse (events/cloudevents.ts).
 *
 * What FC delivers (https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/eventbridge-triggers
 * and @alicloud/fc20230330's EventRunOptions): the event is a Buffer of JSON; the trigger's
 * `eventSchema` CloudEvents (default) gives the whole CloudEvent; `runOptions.mode` event-driven gives
 * one event, event-streaming an array of them. `RawData` (the `data` alone) carries no detail-type
 * and is refused with that reason. FC's context has `requestId` and `function.name`.
 */
import type { Context } from 'aws-lambda';
import { envelopeOfCloudEvent, NotACloudEventError } from '../../events/cloudevents.ts';
import type { EventEnvelope } from '../../events/envelope.ts';
import type { HandlerOutcome } from './handler.ts';

/**
 * What FC hands a function, as JSON: a Buffer or text is parsed (throws on text that is not JSON), an
 * object already parsed (fc-entry.ts parses once and passes it on) is taken as it is.
 */
export function parseFcEvent(event: unknown): unknown {
  const text = Buffer.isBuffer(event) ? event.toString('utf8') : event;
  return typeof text === 'string' ? (JSON.parse(text) as unknown) : text;
}

/** The parts of FC 3.0's context the adapter reads. */
export interface FcContext {
  requestId: string;
  function?: { name?: string; memorySize?: number; timeout?: number };
  region?: string;
}

type AwsShapedHandler = (event: EventEnvelope, context: Context) => Promise<HandlerOutcome>;

/** The Lambda context fields the handlers read, filled from FC's. */
export function lambdaContext(fc: FcContext, startedAt: number, now: () => number): Context {
  const timeoutMs = (fc.function?.timeout ?? 60) * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName: fc.function?.name ?? 'unknown',
    functionVersion: 'LATEST',
    invokedFunctionArn: '',
    memoryLimitInMB: String(fc.function?.memorySize ?? 512),
    awsRequestId: fc.requestId,
    logGroupName: '',
    logStreamName: '',
    getRemainingTimeInMillis: () => Math.max(0, startedAt + timeoutMs - now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

/**
 * `handler` as an FC 3.0 EventBridge-trigger handler. One event in, its outcome out; a batch
 * (event-streaming) in, the outcomes in order. What is not one of our CloudEvents is dropped with
 * its reason, as the AWS path drops what its envelope check refuses; a handler's throw (a retryable
 * failure) is thrown on, so FC retries the invocation as EventBridge retries a Lambda.
 */
export function fcEventTrigger(handler: AwsShapedHandler, now: () => number = Date.now) {
  return async (event: unknown, context: FcContext): Promise<HandlerOutcome | HandlerOutcome[]> => {
    const startedAt = now();
    let parsed: unknown;
    try {
      parsed = parseFcEvent(event);
    } catch {
      return { status: 'dropped', reason: 'the trigger delivered text that is not JSON' };
    }
    const one = async (raw: unknown): Promise<HandlerOutcome> => {
      let envelope: EventEnvelope;
      try {
        envelope = envelopeOfCloudEvent(raw);
      } catch (err) {
        if (!(err instanceof NotACloudEventError)) throw err;
        const raw_ = raw as Record<string, unknown> | null;
        const hint =
          raw_ && typeof raw_ === 'object' && !('specversion' in raw_)
            ? " (set the trigger's eventSchema to CloudEvents: RawData carries no detail-type)"
            : '';
        return { status: 'dropped', reason: `not one of our CloudEvents: ${err.message}${hint}` };
      }
      return handler(envelope, lambdaContext(context, startedAt, now));
    };
    if (!Array.isArray(parsed)) return one(parsed);
    const outcomes: HandlerOutcome[] = [];
    for (const raw of parsed) outcomes.push(await one(raw));
    return outcomes;
  };
}
