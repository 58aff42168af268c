/**
 * A Function Compute 3.0 HTTP trigger on a loopback port, for the embedded stack's Alibaba target
 * (alibaba-bus.ts): each request becomes the event FC hands a function of an HTTP trigger ("Use an
 * HTTP trigger to invoke a function",
 * https://www.alibabacloud.com/help/en/functioncompute/fc-3-0/user-guide/http-trigger-invoking-function):
 * `{version: "v1", rawPath, body, isBase64Encoded, headers, queryParameters, requestContext}`, header
 * names capitalised word by word, several values comma-joined; the function's answer
 * `{statusCode, headers, body, isBase64Encoded}` becomes the response. A method the trigger does not
 * list is answered 405 without invoking the function.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { listen, readBody } from '../http-kit.ts';

/** FC's synchronous payload limit (32 MB). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

export interface FcHttpResult {
  statusCode?: number;
  headers?: Record<string, string>;
  body?: string;
  isBase64Encoded?: boolean;
}

/** The FC HTTP event of one request. */
export function fcHttpEventOf(
  req: IncomingMessage,
  body: Buffer,
  o: { accountId: string; functionName: string; at: number },
): Record<string, unknown> {
  const url = new URL(req.url ?? '/', 'http://fc.local');
  const headers: Record<string, string> = {};
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const k = req.rawHeaders[i]!.toLowerCase().replace(
      /(^|-)([a-z])/g,
      (_, d: string, c: string) => d + c.toUpperCase(),
    );
    headers[k] = headers[k] === undefined ? req.rawHeaders[i + 1]! : `${headers[k]},${req.rawHeaders[i + 1]}`;
  }
  return {
    version: 'v1',
    rawPath: url.pathname,
    body: body.toString('base64'),
    isBase64Encoded: true,
    headers,
    queryParameters: Object.fromEntries(url.searchParams),
    requestContext: {
      accountId: o.accountId,
      domainName: req.headers.host ?? '',
      domainPrefix: o.functionName,
      http: { method: req.method ?? 'GET', path: url.pathname, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1' },
      requestId: randomUUID(),
      time: new Date(o.at).toISOString(),
      timeEpoch: String(o.at),
    },
  };
}

export interface HttpTrigger {
  url: string;
  close(): Promise<void>;
}

export async function startHttpTrigger(o: {
  methods: readonly string[];
  accountId: string;
  functionName: string;
  now: () => number;
  /** Invokes the function with the event (a Buffer of JSON); its result, or a throw. */
  call: (event: Record<string, unknown>, at: number) => Promise<FcHttpResult>;
}): Promise<HttpTrigger> {
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req, MAX_BODY_BYTES, () => new Error('payload too large'));
      let out: FcHttpResult;
      if (!o.methods.includes(req.method ?? 'GET')) {
        out = { statusCode: 405, body: `${req.method} is not one of the trigger's methods (${o.methods.join(', ')})` };
      } else {
        const at = o.now();
        out = await o
          .call(fcHttpEventOf(req, body, { accountId: o.accountId, functionName: o.functionName, at }), at)
          .catch(() => ({ statusCode: 502, body: 'the function failed' }));
      }
      res.writeHead(out.statusCode ?? 200, out.headers ?? {});
      res.end(out.isBase64Encoded ? Buffer.from(out.body ?? '', 'base64') : (out.body ?? ''));
    })().catch(() => res.destroy());
  });
  const port = await listen(server);
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
