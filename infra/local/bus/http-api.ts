import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

import type { Clock } from './clock.ts';
import { HandlerLoader, invoke, lambdaContext } from './handler-loader.ts';
import { listen } from '../http-kit.ts';
import type { HttpRoute } from './rules.ts';

/**
 * The `httpApi` routes of serverless.yml on a loopback server: each request becomes an API
 * Gateway HTTP API payload v2.0 event, the handler runs in-process, and its result is mapped back
 * the way API Gateway maps it (`{statusCode, headers, body, isBase64Encoded, cookies}`, or any
 * other value as a 200 JSON body). Unmatched → 404 `{"message":"Not Found"}`; a throwing handler
 * → 500 `{"message":"Internal Server Error"}`.
 */
export interface HttpApiServer {
  url: string;
  close(): Promise<void>;
}

export interface HttpApiOptions {
  clock: Clock;
  region: string;
  account: string;
  onInvoke?: (info: {
    routeKey: string;
    function: string;
    event: unknown;
    at: number;
    statusCode: number;
    error?: Error;
  }) => void;
}

/** API Gateway's payload limit. */
const MAX_PAYLOAD_BYTES = 10 * 1024 * 1024;

interface Compiled {
  route: HttpRoute;
  regex: RegExp;
  params: string[];
  /** Higher wins: literal segments beat parameters beat greedy `{proxy+}` beat the catch-all. */
  rank: number;
}

function compile(route: HttpRoute): Compiled {
  if (route.path === '*') return { route, regex: /^.*$/, params: [], rank: -1 };
  const params: string[] = [];
  let rank = 0;
  const parts = route.path.split('/').map((seg) => {
    const greedy = /^\{(\w+)\+\}$/.exec(seg);
    if (greedy) {
      params.push(greedy[1] as string);
      return '(.+)';
    }
    const param = /^\{(\w+)\}$/.exec(seg);
    if (param) {
      params.push(param[1] as string);
      rank += 1;
      return '([^/]+)';
    }
    rank += 100;
    return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  });
  return { route, regex: new RegExp(`^${parts.join('/')}$`), params, rank };
}

/** Text stays text; anything else travels base64, as API Gateway does (form posts included). */
function isText(contentType: string | undefined): boolean {
  const ct = (contentType ?? '').toLowerCase();
  return ct === '' || ct.startsWith('text/') || /json|xml|javascript/.test(ct);
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** API Gateway's requestContext.time: 21/Nov/2026:20:11:11 +0000. */
export function apiGatewayTime(ms: number): string {
  const d = new Date(ms);
  const p = (n: number) => String(n).padStart(2, '0');
  return (
    `${p(d.getUTCDate())}/${MONTHS[d.getUTCMonth()]}/${d.getUTCFullYear()}:${p(d.getUTCHours())}:` +
    `${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
  );
}

export async function startHttpApi(
  routes: HttpRoute[],
  opts: HttpApiOptions,
  host = '127.0.0.1',
  port = 0,
): Promise<HttpApiServer> {
  const compiled = routes.map(compile).sort((a, b) => b.rank - a.rank);
  const loader = new HandlerLoader();

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) =>
      send(res, 500, { 'content-type': 'application/json' }, JSON.stringify({ message: String(err) })),
    );
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > MAX_PAYLOAD_BYTES)
        return send(res, 413, { 'content-type': 'application/json' }, '{"message":"Request Entity Too Large"}');
      chunks.push(c as Buffer);
    }
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? '/', 'http://local');
    const method = (req.method ?? 'GET').toUpperCase();
    let hit: { c: Compiled; m: RegExpExecArray } | undefined;
    for (const c of compiled) {
      if (c.route.method !== 'ANY' && c.route.method !== method) continue;
      const m = c.regex.exec(url.pathname);
      if (m) {
        hit = { c, m };
        break;
      }
    }
    if (!hit) return send(res, 404, { 'content-type': 'application/json' }, '{"message":"Not Found"}');
    const { route, params } = hit.c;
    const now = opts.clock.now();
    const headers: Record<string, string> = {};
    const cookies: string[] = [];
    for (const [k, v] of Object.entries(req.headers)) {
      if (v === undefined) continue;
      if (k === 'cookie') cookies.push(...String(v).split(/;\s*/));
      else headers[k] = Array.isArray(v) ? v.join(',') : v;
    }
    const query: Record<string, string> = {};
    for (const [k, v] of url.searchParams) query[k] = k in query ? `${query[k]},${v}` : v;
    const pathParameters = Object.fromEntries(params.map((p, i) => [p, decodeURIComponent(hit.m[i + 1] ?? '')]));
    const text = isText(headers['content-type']);
    const requestId = randomUUID();
    const event = {
      version: '2.0',
      routeKey: route.routeKey,
      rawPath: url.pathname,
      rawQueryString: url.search.replace(/^\?/, ''),
      ...(cookies.length > 0 ? { cookies } : {}),
      headers,
      ...(Object.keys(query).length > 0 ? { queryStringParameters: query } : {}),
      ...(params.length > 0 ? { pathParameters } : {}),
      requestContext: {
        accountId: opts.account,
        apiId: 'local',
        domainName: headers.host ?? 'localhost',
        domainPrefix: (headers.host ?? 'localhost').split('.')[0],
        http: {
          method,
          path: url.pathname,
          protocol: `HTTP/${req.httpVersion}`,
          sourceIp: req.socket.remoteAddress ?? '127.0.0.1',
          userAgent: headers['user-agent'] ?? '',
        },
        requestId,
        routeKey: route.routeKey,
        stage: '$default',
        time: apiGatewayTime(now),
        timeEpoch: now,
      },
      ...(body.length > 0 ? { body: text ? body.toString('utf8') : body.toString('base64') } : {}),
      isBase64Encoded: body.length > 0 && !text,
    };
    const report = (statusCode: number, error?: Error) =>
      opts.onInvoke?.({
        routeKey: route.routeKey,
        function: route.fn.key,
        event,
        at: now,
        statusCode,
        ...(error ? { error } : {}),
      });
    let result: unknown;
    try {
      const handler = await loader.load(route.fn);
      result = await invoke(
        handler,
        structuredClone(event),
        lambdaContext(route.fn, opts.clock, opts.region, opts.account),
        route.fn.timeoutSeconds,
      );
    } catch (raw) {
      report(500, raw instanceof Error ? raw : new Error(String(raw)));
      return send(res, 500, { 'content-type': 'application/json' }, '{"message":"Internal Server Error"}');
    }
    const out = toResponse(result);
    report(out.status);
    send(res, out.status, out.headers, out.body);
  }

  const bound = await listen(server, port, host);
  return {
    url: `http://${host}:${bound}`,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

interface Structured {
  statusCode: number;
  headers?: Record<string, string | number | boolean>;
  multiValueHeaders?: Record<string, (string | number | boolean)[]>;
  cookies?: string[];
  body?: string;
  isBase64Encoded?: boolean;
}

function toResponse(result: unknown): {
  status: number;
  headers: Record<string, string | string[]>;
  body: Buffer | string;
} {
  if (typeof result === 'object' && result !== null && typeof (result as Structured).statusCode === 'number') {
    const r = result as Structured;
    const headers: Record<string, string | string[]> = {};
    for (const [k, v] of Object.entries(r.headers ?? {})) headers[k.toLowerCase()] = String(v);
    for (const [k, v] of Object.entries(r.multiValueHeaders ?? {})) headers[k.toLowerCase()] = v.map(String).join(',');
    if (r.cookies && r.cookies.length > 0) headers['set-cookie'] = r.cookies;
    const body = r.body ?? '';
    return { status: r.statusCode, headers, body: r.isBase64Encoded ? Buffer.from(body, 'base64') : body };
  }
  // API Gateway's inference for a response without statusCode: 200, JSON.
  const body = typeof result === 'string' ? result : (JSON.stringify(result) ?? '');
  return { status: 200, headers: { 'content-type': 'application/json' }, body };
}

function send(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | string[]>,
  body: Buffer | string,
): void {
  if (res.headersSent) return;
  res.writeHead(status, { ...headers, 'content-length': Buffer.byteLength(body), 'apigw-requestid': randomUUID() });
  res.end(body);
}
