/**
 * Alibaba Cloud EventBridge's data plane, as a simulator for the Alibaba target (issue #35): the
 * `PutEvents` a custom bus takes, its rules (Alibaba's pattern syntax, alibaba-pattern.ts) and
 * Function Compute targets invoked the way FC 3.0's EventBridge trigger invokes a function. Written
 * from Alibaba's documents and the request its official client sends; it imports nothing of the
 * product.
 *
 * The request (Alibaba's data-plane client `@alicloud/eventbridge` 1.3.2, src/client.ts `doRequest`
 * and `putEventsWithOptions`, with `@alicloud/eventbridge-util` 1.0.0 `getStringToSign`):
 * - `POST /openapi/putEvents`, `content-type: application/cloudevents-batch+json; charset=utf-8`,
 *   a JSON array of CloudEvents;
 * - headers `date` (RFC 1123), `x-acs-signature-method: HMAC-SHA1`, `x-acs-signature-version: 1.0`,
 *   `x-acs-signature-nonce`, with STS credentials `x-acs-accesskey-id` and `x-acs-security-token`;
 * - `authorization: acs:<AccessKeyId>:<signature>`, the signature base64(HMAC-SHA1(secret,
 *   stringToSign)) where stringToSign is `METHOD\nContent-MD5\nContent-Type\nDate\n`, then every
 *   `x-acs-*` header sorted by name as `name:value\n`, then the path (and sorted query). The body
 *   is not signed (the client sends no Content-MD5).
 *
 * What the bus checks of each event (PutEvents, https://help.aliyun.com/document_detail/164006.htm):
 * `id`, `source`, `type`, `specversion` 1.0 and `aliyuneventbusname` are required (`time` too in
 * the document; the official client does not set it, so a missing time is stamped, not refused);
 * `datacontenttype` is application/json. Limits from the same page: at most 16 events a call, an
 * event at most 64 KB, a call at most 256 KB (the quota page, document_detail/163289, gives larger
 * numbers; the simulator holds the stricter). The response is `RequestId`, `ResourceOwnerAccountId`,
 * `FailedEntryCount` and `EntryList[{EventId, TraceId} | {ErrorCode, ErrorMessage}]`; a refused call
 * answers `{code, message, requestId}` with a 4xx (what the client reads). Alibaba publishes no
 * PutEvents error-code list: the codes below are the simulator's own words, marked so.
 *
 * Delivery (FC 3.0 EventBridge trigger, eventSchema CloudEvents, runOptions.mode event-driven,
 * https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/eventbridge-triggers): each
 * matched event is stamped with `aliyunaccountid`, `aliyunregionid`, `aliyunpublishtime`,
 * `aliyunoriginalaccountid` and `aliyuneventbusname`, and the function receives it as a Buffer of
 * JSON. A target that throws is retried (BACKOFF_RETRY: 3 tries, https://help.aliyun.com/document_detail/433888.htm)
 * and then counted as failed.
 */ import { randomUUID } from 'node:crypto';
import { listen } from '../http-kit.ts';
import { createServer, type Server } from 'node:http';
import { alibabaPatternMatches } from './alibaba-pattern.ts';
import { authenticate, Refusal } from './alibaba-data-plane-auth.ts';

export { DATE_WINDOW_MS, dataPlaneStringToSign } from './alibaba-data-plane-auth.ts';

/** PutEvents' limits (document_detail/164006). */
export const MAX_EVENTS_PER_CALL = 16;
export const MAX_EVENT_BYTES = 64 * 1024;
export const MAX_CALL_BYTES = 256 * 1024;
/** BACKOFF_RETRY's tries for a target (document_detail/433888). */
export const TARGET_TRIES = 3;

export interface AlibabaRule {
  bus: string;
  name: string;
  /** Alibaba's pattern syntax (CloudEvent keys; `data` for the payload). */
  pattern: Record<string, unknown>;
  /** A function target: what FC's event-driven EventBridge trigger hands the function. */
  invoke: (event: Buffer) => Promise<unknown>;
}

export interface AlibabaEventBridgeOptions {
  /** AccessKey id → secret (a key of an STS pair too). */
  accessKeys: Record<string, string>;
  /** STS security tokens the bus accepts, by AccessKey id. */
  securityTokens?: Record<string, string>;
  buses: string[];
  rules?: AlibabaRule[];
  accountId?: string;
  regionId?: string;
  /** The bus's own time (the client signs `date` with the wall clock). */
  now?: () => number;
  /** The time accepted events are stamped with (default `now`): the embedded stack's one clock. */
  eventNow?: () => number;
  /**
   * Hands each accepted event to the caller instead of `rules` (the embedded stack's Alibaba target,
   * alibaba-bus.ts, routes and invokes on its own clock).
   */
  route?: (event: Record<string, unknown>) => void;
}

export interface Delivered {
  rule: string;
  event: Record<string, unknown>;
  outcome: 'delivered' | 'failed';
  tries: number;
  error?: string;
}

export interface AlibabaEventBridge {
  /** `host:port`, what the client's `endpoint` takes (it refuses a scheme). */
  endpoint: string;
  /** Every event the bus accepted, as stamped (empty with `route`: the caller keeps them). */
  accepted: Record<string, unknown>[];
  /** PutEvents calls that passed authentication. */
  readonly calls: number;
  deliveries: Delivered[];
  /** Waits until every accepted event's deliveries have finished. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

type Entry = { EventId: string; TraceId: string } | { ErrorCode: string; ErrorMessage: string };

function checkEvent(ce: unknown, buses: ReadonlySet<string>): string | undefined {
  if (ce === null || typeof ce !== 'object' || Array.isArray(ce)) return 'an event is a JSON object';
  const e = ce as Record<string, unknown>;
  for (const k of ['id', 'source', 'type', 'aliyuneventbusname'])
    if (typeof e[k] !== 'string' || e[k] === '') return `${k} is required`;
  if (e.specversion !== '1.0') return 'specversion must be 1.0';
  if (e.datacontenttype !== undefined && !String(e.datacontenttype).startsWith('application/json'))
    return 'datacontenttype must be application/json';
  if (!buses.has(e.aliyuneventbusname as string)) return `EventBusNotExist: no bus ${String(e.aliyuneventbusname)}`;
  if (Buffer.byteLength(JSON.stringify(e)) > MAX_EVENT_BYTES) return `an event is at most ${MAX_EVENT_BYTES} bytes`;
  return undefined;
}

/** Starts the simulated bus on a loopback port the OS chooses. */
export async function startAlibabaEventBridge(o: AlibabaEventBridgeOptions): Promise<AlibabaEventBridge> {
  const now = o.now ?? Date.now;
  const buses = new Set(o.buses);
  const seen = new Map<string, number>();
  const accepted: Record<string, unknown>[] = [];
  const deliveries: Delivered[] = [];
  const pending = new Set<Promise<void>>();
  let calls = 0;

  const deliver = async (rule: AlibabaRule, event: Record<string, unknown>): Promise<void> => {
    let error: string | undefined;
    for (let tries = 1; tries <= TARGET_TRIES; tries++) {
      try {
        await rule.invoke(Buffer.from(JSON.stringify(event)));
        deliveries.push({ rule: rule.name, event, outcome: 'delivered', tries });
        return;
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
    }
    deliveries.push({ rule: rule.name, event, outcome: 'failed', tries: TARGET_TRIES, ...(error ? { error } : {}) });
  };

  const putEvents = (body: string): Record<string, unknown> => {
    let list: unknown;
    try {
      list = JSON.parse(body);
    } catch {
      throw new Refusal(400, 'InvalidJSON', 'the body is not JSON (simulator code)');
    }
    if (!Array.isArray(list)) throw new Refusal(400, 'InvalidArgument', 'the body is a JSON array of CloudEvents');
    if (list.length === 0 || list.length > MAX_EVENTS_PER_CALL)
      throw new Refusal(400, 'InvalidArgument', `1 to ${MAX_EVENTS_PER_CALL} events a call (got ${list.length})`);
    const entries: Entry[] = [];
    for (const raw of list) {
      const problem = checkEvent(raw, buses);
      if (problem) {
        const [code, text] = problem.startsWith('EventBusNotExist:')
          ? ['EventBusNotExist', problem.slice(18)]
          : ['InvalidArgument', problem];
        entries.push({ ErrorCode: code, ErrorMessage: text });
        continue;
      }
      const at = new Date((o.eventNow ?? now)()).toISOString();
      const event: Record<string, unknown> = {
        ...(raw as Record<string, unknown>),
        time: (raw as Record<string, unknown>).time ?? at,
        aliyunaccountid: o.accountId ?? '1234567890123456',
        aliyunoriginalaccountid: o.accountId ?? '1234567890123456',
        aliyunregionid: o.regionId ?? 'cn-hangzhou',
        aliyunpublishtime: at,
      };
      // With `route`, the caller keeps the history (bounded: a long run must not grow this list).
      if (!o.route) accepted.push(event);
      entries.push({ EventId: String(event.id), TraceId: randomUUID() });
      if (o.route) {
        o.route(event);
        continue;
      }
      for (const rule of o.rules ?? [])
        if (rule.bus === event.aliyuneventbusname && alibabaPatternMatches(rule.pattern, event)) {
          const p = deliver(rule, event).finally(() => pending.delete(p));
          pending.add(p);
        }
    }
    return {
      RequestId: randomUUID(),
      ResourceOwnerAccountId: o.accountId ?? '1234567890123456',
      FailedEntryCount: entries.filter((e) => 'ErrorCode' in e).length,
      EntryList: entries,
    };
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_CALL_BYTES) chunks.push(c);
    });
    req.on('end', () => {
      const requestId = randomUUID();
      let status = 200;
      let out: Record<string, unknown>;
      try {
        if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== '/openapi/putEvents')
          throw new Refusal(404, 'ApiNotFound', `${req.method} ${req.url}: only POST /openapi/putEvents is served`);
        authenticate(req, o, seen, now());
        calls++;
        if (size > MAX_CALL_BYTES)
          throw new Refusal(413, 'InvalidArgument', `a call is at most ${MAX_CALL_BYTES} bytes (got ${size})`);
        out = putEvents(Buffer.concat(chunks).toString('utf8'));
      } catch (err) {
        if (!(err instanceof Refusal)) throw err;
        status = err.status;
        out = { code: err.code, message: err.message, requestId };
      }
      const text = JSON.stringify(out);
      res.writeHead(status, {
        'content-type': 'application/json;charset=utf-8',
        'x-eventbridge-request-id': requestId,
      });
      res.end(text);
    });
  });
  const port = await listen(server);
  return {
    endpoint: `127.0.0.1:${port}`,
    accepted,
    get calls() {
      return calls;
    },
    deliveries,
    async settled() {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
