import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { AwsRequestError } from './errors.ts';
import { listen, readBody } from '../http-kit.ts';
import type { ControlOperation } from './control-plane.ts';
import type { PutEventsIngest } from './put-events.ts';

/**
 * A loopback EventBridge endpoint that speaks PutEvents (and the read-only control-plane calls
 * control-plane.ts answers) over AWS JSON 1.1, so the real
 * `@aws-sdk/client-eventbridge` runs unchanged against it (`endpoint` or
 * `AWS_ENDPOINT_URL_EVENTBRIDGE`). SigV4 is checked for shape, not for the secret: any key signs,
 * an unsigned or garbled request is refused the way AWS refuses it.
 *
 * Faults for tests: `setDown(true)` resets every connection (the SDK sees a network error),
 * `failRequests(n, status)` answers the next n calls with a whole-request 5xx.
 */
export interface PutEventsServer {
  url: string;
  setDown(down: boolean): void;
  readonly down: boolean;
  /** The next injected whole-request failure, consumed; undefined when none is pending. */
  takeInjectedFailure(): AwsRequestError | undefined;
  failRequests(n: number, status?: number): void;
  close(): Promise<void>;
}

/** The largest body read before refusing; AWS's own limit is the 256 KB of entry content. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

const AUTH_RE = new RegExp(
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([a-z0-9-]+)\/([a-z0-9-]+)\/aws4_request/.source +
    /, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.source,
);

const STATUS_CODES: Record<number, string> = {
  500: 'InternalFailure',
  502: 'InternalFailure',
  503: 'ServiceUnavailable',
  429: 'ThrottlingException',
  400: 'ThrottlingException',
};

export async function startPutEventsServer(
  ingest: PutEventsIngest,
  host = '127.0.0.1',
  port = 0,
  /** Other operations by name (ListRules, DescribeRule, …: control-plane.ts), same checks as PutEvents. */
  operations: Record<string, ControlOperation> = {},
): Promise<PutEventsServer> {
  let down = false;
  const failures: number[] = [];
  const sockets = new Set<Socket>();

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      const e = err instanceof AwsRequestError ? err : new AwsRequestError('InternalFailure', String(err), 500);
      sendError(res, e);
    });
  });
  server.on('connection', (socket) => {
    if (down) {
      socket.destroy();
      return;
    }
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  function takeInjectedFailure(): AwsRequestError | undefined {
    const status = failures.shift();
    return status === undefined
      ? undefined
      : new AwsRequestError(STATUS_CODES[status] ?? 'InternalFailure', 'Injected failure', status);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(
      req,
      MAX_BODY_BYTES,
      () => new AwsRequestError('ValidationException', 'Request body is too large', 413),
    );
    if (down) {
      req.socket.destroy();
      return;
    }
    const injected = takeInjectedFailure();
    if (injected) throw injected;
    if (req.method !== 'POST')
      throw new AwsRequestError('UnknownOperationException', `Method ${req.method} is not supported`);
    checkSignature(req, body);
    const target = header(req, 'x-amz-target');
    const operation = target?.startsWith('AWSEvents.') ? operations[target.slice('AWSEvents.'.length)] : undefined;
    if (target !== 'AWSEvents.PutEvents' && !operation) {
      throw new AwsRequestError(
        'UnknownOperationException',
        `Operation ${target ?? '(none)'} is not supported by the local bus`,
      );
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      throw new AwsRequestError('SerializationException', 'Request body is not valid JSON');
    }
    if (operation) {
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new AwsRequestError('SerializationException', 'Request body must be a JSON object');
      return sendJson(res, 200, operation(parsed as Record<string, unknown>));
    }
    sendJson(res, 200, ingest.put(parsed));
  }

  const bound = await listen(server, port, host);
  return {
    url: `http://${host}:${bound}`,
    get down() {
      return down;
    },
    takeInjectedFailure,
    setDown(value) {
      down = value;
      if (value) for (const s of sockets) s.destroy();
    },
    failRequests(n, status = 500) {
      for (let i = 0; i < n; i++) failures.push(status);
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Shape checks in the order AWS applies them; the signature itself is not verified. */
function checkSignature(req: IncomingMessage, body: Buffer): void {
  const auth = header(req, 'authorization');
  if (auth === undefined || auth === '') {
    throw new AwsRequestError('MissingAuthenticationTokenException', 'Missing Authentication Token');
  }
  const m = AUTH_RE.exec(auth);
  if (!m) {
    throw new AwsRequestError(
      'IncompleteSignatureException',
      `Authorization header requires 'Credential', 'Signature', 'SignedHeaders' parameters. ` +
        `Authorization=${auth.split(' ')[0]}`,
    );
  }
  if (m[4] !== 'events') {
    throw new AwsRequestError('InvalidSignatureException', `Credential should be scoped to correct service: 'events'.`);
  }
  if (header(req, 'x-amz-date') === undefined && header(req, 'date') === undefined) {
    throw new AwsRequestError(
      'IncompleteSignatureException',
      "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.",
    );
  }
  const declared = header(req, 'x-amz-content-sha256');
  if (declared !== undefined && declared !== 'UNSIGNED-PAYLOAD') {
    const actual = createHash('sha256').update(body).digest('hex');
    if (declared !== actual) {
      throw new AwsRequestError(
        'InvalidSignatureException',
        'The request signature we calculated does not match the signature you provided.',
      );
    }
  }
}

function sendJson(res: ServerResponse, status: number, value: unknown, extra: Record<string, string> = {}): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/x-amz-json-1.1',
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
    ...extra,
  });
  res.end(text);
}

function sendError(res: ServerResponse, err: AwsRequestError): void {
  if (res.headersSent || res.destroyed) return;
  sendJson(res, err.status, { __type: err.code, message: err.message }, { 'x-amzn-errortype': err.code });
}
