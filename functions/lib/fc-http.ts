/**
 * Function Compute 3.0's HTTP and timer triggers in front of handlers written for AWS (issue #35):
 * chat's webhook (an API Gateway v2 handler) and the sweeps (schedule handlers) run unchanged.
 *
 * HTTP trigger, built-in runtimes ("Use an HTTP trigger to invoke a function",
 * https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/http-trigger-invoking-function):
 * the event is JSON `{version: "v1", rawPath, body, isBase64Encoded, headers, queryParameters,
 * requestContext{accountId, domainName, domainPrefix, http{method, path, protocol, sourceIp,
 * userAgent}, requestId, time, timeEpoch}}`; a header or parameter with several values is one
 * comma-joined string, and FC capitalises header names (`X-Slack-Signature`), where API Gateway v2
 * gives them in lower case — the adapter lowers them, as chat's signature checks read them. The
 * function answers `{statusCode, headers, isBase64Encoded, body}`, the page's response struct, which
 * is API Gateway v2's structured result as our handlers build it.
 *
 * Timer trigger ("Timer triggers",
 * https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/timer-triggers):
 * the event is JSON `{triggerTime, triggerName, payload}`; it becomes the Scheduled Event envelope
 * an EventBridge schedule hands a Lambda, which our schedule handlers take (and do not read).
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { createHash } from 'node:crypto';
import type { FcContext } from './fc-trigger.ts';
import { lambdaContext, parseFcEvent } from './fc-trigger.ts';
import type { HandlerOutcome } from './handler.ts';

export interface FcHttpEvent {
  version: 'v1';
  rawPath: string;
  body?: string;
  isBase64Encoded?: boolean;
  headers?: Record<string, string>;
  queryParameters?: Record<string, string>;
  requestContext?: {
    accountId?: string;
    domainName?: string;
    domainPrefix?: string;
    http?: { method?: string; path?: string; protocol?: string; sourceIp?: string; userAgent?: string };
    requestId?: string;
    time?: string;
    timeEpoch?: string;
  };
}

type HttpHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

/** FC's HTTP event as the API Gateway v2 event our HTTP handlers parse. */
export function apiGatewayEventOf(fc: FcHttpEvent): APIGatewayProxyEventV2 {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(fc.headers ?? {})) {
    const key = k.toLowerCase();
    headers[key] = headers[key] === undefined ? v : `${headers[key]},${v}`;
  }
  const query = fc.queryParameters ?? {};
  const http = fc.requestContext?.http ?? {};
  const method = (http.method ?? 'GET').toUpperCase();
  const timeEpoch = Number(fc.requestContext?.timeEpoch ?? 0);
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: fc.rawPath,
    rawQueryString: new URLSearchParams(query).toString(),
    headers,
    ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
    requestContext: {
      accountId: fc.requestContext?.accountId ?? '',
      apiId: fc.requestContext?.domainPrefix ?? '',
      domainName: fc.requestContext?.domainName ?? '',
      domainPrefix: fc.requestContext?.domainPrefix ?? '',
      http: {
        method,
        path: http.path ?? fc.rawPath,
        protocol: http.protocol ?? 'HTTP/1.1',
        sourceIp: http.sourceIp ?? '',
        userAgent: http.userAgent ?? headers['user-agent'] ?? '',
      },
      requestId: fc.requestContext?.requestId ?? '',
      routeKey: '$default',
      stage: '$default',
      time: fc.requestContext?.time ?? '',
      timeEpoch: Number.isFinite(timeEpoch) ? timeEpoch : 0,
    },
    ...(fc.body !== undefined ? { body: fc.body } : {}),
    isBase64Encoded: fc.isBase64Encoded === true,
  };
}

/**
 * `handler` (an API Gateway v2 handler) as an FC 3.0 HTTP-trigger handler. An event that is not
 * FC's HTTP event (no `version: v1` or `rawPath`) answers 400 naming what is missing: the trigger
 * is misconfigured, and a handler must never see a half-made request.
 */
export function fcHttpTrigger(handler: HttpHandler, now: () => number = Date.now) {
  return async (event: unknown, context: FcContext): Promise<APIGatewayProxyStructuredResultV2> => {
    const startedAt = now();
    let fc: unknown;
    try {
      fc = parseFcEvent(event);
    } catch {
      return refuse('the HTTP trigger delivered text that is not JSON');
    }
    const e = fc as Partial<FcHttpEvent> | null;
    if (e === null || typeof e !== 'object' || e.version !== 'v1' || typeof e.rawPath !== 'string')
      return refuse('not a Function Compute 3.0 HTTP trigger event (version "v1" and rawPath expected)');
    const result = await handler(apiGatewayEventOf(e as FcHttpEvent), lambdaContext(context, startedAt, now));
    return {
      statusCode: result.statusCode ?? 200,
      headers: result.headers ?? {},
      isBase64Encoded: result.isBase64Encoded ?? false,
      body: result.body ?? '',
    };
  };
}

const refuse = (error: string): APIGatewayProxyStructuredResultV2 => ({
  statusCode: 400,
  headers: { 'content-type': 'application/json' },
  isBase64Encoded: false,
  body: JSON.stringify({ error }),
});

type ScheduleHandler = (event: unknown, context: Context) => Promise<HandlerOutcome>;

/**
 * `handler` (a schedule handler) as an FC 3.0 timer-trigger handler. The envelope's id is derived
 * from the trigger and its time, so FC's retry of one tick is recognisably the same tick in the logs.
 */
export function fcTimerTrigger(handler: ScheduleHandler, now: () => number = Date.now) {
  return async (event: unknown, context: FcContext): Promise<HandlerOutcome> => {
    const startedAt = now();
    let timer: unknown;
    try {
      timer = parseFcEvent(event);
    } catch {
      return { status: 'dropped', reason: 'the timer trigger delivered text that is not JSON' };
    }
    const t = timer as { triggerTime?: unknown; triggerName?: unknown; payload?: unknown } | null;
    if (t === null || typeof t !== 'object' || typeof t.triggerTime !== 'string' || typeof t.triggerName !== 'string')
      return { status: 'dropped', reason: 'not a Function Compute timer event (triggerTime and triggerName expected)' };
    const at = new Date(t.triggerTime);
    if (Number.isNaN(at.getTime())) return { status: 'dropped', reason: `triggerTime: not a time (${t.triggerTime})` };
    const id = createHash('sha256').update(`${t.triggerName} ${t.triggerTime}`).digest('hex').slice(0, 32);
    const envelope = {
      version: '0',
      id: `${id.slice(0, 8)}-${id.slice(8, 12)}-${id.slice(12, 16)}-${id.slice(16, 20)}-${id.slice(20)}`,
      'detail-type': 'Scheduled Event',
      source: 'acs.fc.timer',
      account: '',
      time: at.toISOString().replace(/\.\d{3}Z$/, 'Z'),
      region: context.region ?? '',
      resources: [t.triggerName],
      detail: typeof t.payload === 'string' && t.payload !== '' ? { payload: t.payload } : {},
    };
    return handler(envelope, lambdaContext(context, startedAt, now));
  };
}
