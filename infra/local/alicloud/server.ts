import { ReplayGuard } from './replay.ts';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBody } from '../http-kit.ts';
import { CloudError, type AliCloud } from './cloud.ts';
import { verify } from './signature.ts';
import type { Call, Json } from './server-call.ts';
import { serveCs } from './server-cs.ts';
import { serveEcs } from './server-ecs.ts';

export { MAX_DESCRIBED_TYPES } from './server-ecs.ts';

/**
 * Alibaba Cloud OpenAPI as the official SDKs speak it, both styles on one endpoint:
 * - CS / ACK 2015-12-15 (ROA): REST paths, JSON bodies, snake_case answers;
 * - ECS 2014-05-26 (RPC): the action in `x-acs-action`, parameters in the query (or a form body),
 *   PascalCase answers.
 * Every request must carry a valid ACS3-HMAC-SHA256 signature from a known AccessKey. Errors use
 * the gateway's shape (`RequestId, HostId, Code, Message, Recommend`), CS business errors the
 * lower-case one (`code, message, requestId`); the SDKs read both.
 */
const CS = '2015-12-15';
const ECS = '2014-05-26';
const MAX_BODY = 1024 * 1024;

function send(res: ServerResponse, status: number, body: Json, requestId: string): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json;charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'x-acs-request-id': requestId,
  });
  res.end(text);
}

function gatewayError(
  res: ServerResponse,
  host: string,
  requestId: string,
  status: number,
  code: string,
  message: string,
): void {
  send(
    res,
    status,
    {
      RequestId: requestId,
      HostId: host,
      Code: code,
      Message: message,
      Recommend: `https://api.aliyun.com/troubleshoot?q=${encodeURIComponent(code)}`,
    },
    requestId,
  );
}
export function createHandler(cloud: AliCloud, gatewayNow?: () => number) {
  // Nonce replay and date skew, refused after the signature is checked (replay.ts).
  const replay = new ReplayGuard(gatewayNow);
  return (req: IncomingMessage, res: ServerResponse): void => {
    const requestId = randomUUID().toUpperCase();
    const host = String(req.headers.host ?? 'localhost');
    void (async () => {
      const body = await readBody(
        req,
        MAX_BODY,
        () => new CloudError(413, 'InvalidParameter', 'request body too large'),
      );
      const url = req.url ?? '/';
      const q = url.indexOf('?');
      const path = q < 0 ? url : url.slice(0, q);
      const query = q < 0 ? '' : url.slice(q + 1);
      const signed = verify({ method: req.method ?? 'GET', path, query, headers: req.headers, body }, (id) =>
        cloud.secretOf(id),
      );
      const verdict = signed.ok ? replay.check(req.headers, signed.accessKeyId) : signed;
      if (!verdict.ok) {
        gatewayError(res, host, requestId, verdict.status, verdict.code, verdict.message);
        return;
      }
      const action = String(req.headers['x-acs-action'] ?? '');
      const version = String(req.headers['x-acs-version'] ?? '');
      const call: Call = {
        action,
        method: req.method ?? 'GET',
        segs: path
          .split('/')
          .filter((s) => s !== '')
          .map((s) => decodeURIComponent(s)),
        query: new URLSearchParams(query),
        body: body.toString('utf8'),
        contentType: String(req.headers['content-type'] ?? ''),
      };
      try {
        if (version !== CS && version !== ECS)
          throw new CloudError(
            404,
            'InvalidVersion',
            `Specified parameter Version is not valid (${version || 'missing'}); served: CS ${CS}, ECS ${ECS}.`,
          );
        cloud.admit(action, verdict.accessKeyId);
        send(res, 200, version === CS ? serveCs(cloud, call, requestId) : serveEcs(cloud, call, requestId), requestId);
      } catch (err) {
        if (!(err instanceof CloudError)) throw err;
        if (version === CS && !err.code.startsWith('Throttling'))
          send(res, err.status, { code: err.code, message: err.message, requestId, status: err.status }, requestId);
        else gatewayError(res, host, requestId, err.status, err.code, err.message);
      }
    })().catch((err: unknown) => {
      if (err instanceof CloudError) gatewayError(res, host, requestId, err.status, err.code, err.message);
      else
        gatewayError(
          res,
          host,
          requestId,
          500,
          'InternalError',
          `The request processing has failed due to some unknown error: ${(err as Error).message}`,
        );
    });
  };
}
