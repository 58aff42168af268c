import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/**
 * The data plane's request authentication (alibaba-eventbridge.ts's file comment describes the request):
 * the `acs:<AccessKeyId>:<signature>` HMAC-SHA1 signature, the STS token, the date window and the nonce.
 */

/** The window for `date`, and how long a nonce is remembered (as the OpenAPI gateway: 15 minutes). */
export const DATE_WINDOW_MS = 15 * 60_000;

/** A refused call: its HTTP status and the code the client reads. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const header = (req: IncomingMessage, name: string): string => {
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v) ?? '';
};

/** The string the client signs (see the file comment). */
export function dataPlaneStringToSign(method: string, path: string, headers: Record<string, string>): string {
  const acs = Object.keys(headers)
    .filter((k) => k.startsWith('x-acs-'))
    .sort()
    .map((k) => `${k}:${headers[k]!.replace(/[\t\n\r\f]/g, ' ').trim()}\n`)
    .join('');
  const [pathname, query] = path.split('?');
  const resource = query
    ? `${pathname}?${[...new URLSearchParams(query)]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => `${k}=${v}`)
        .join('&')}`
    : pathname;
  return (
    `${method.toUpperCase()}\n${headers['content-md5'] ?? ''}\n${headers['content-type'] ?? ''}\n` +
    `${headers['date'] ?? ''}\n${acs}${resource}`
  );
}

export function authenticate(
  req: IncomingMessage,
  o: { accessKeys: Record<string, string>; securityTokens?: Record<string, string> | undefined },
  seen: Map<string, number>,
  now: number,
): void {
  const m = /^acs:([^:]+):(.+)$/.exec(header(req, 'authorization'));
  if (!m) throw new Refusal(401, 'MissingAuthorization', 'authorization: expected "acs:<AccessKeyId>:<signature>"');
  const [, keyId, signature] = m as unknown as [string, string, string];
  const secret = o.accessKeys[keyId];
  if (secret === undefined) throw new Refusal(401, 'InvalidAccessKeyId.NotFound', `unknown AccessKey ${keyId}`);
  const token = header(req, 'x-acs-security-token');
  const stsToken = o.securityTokens?.[keyId];
  if (stsToken !== undefined && token !== stsToken)
    throw new Refusal(401, 'InvalidSecurityToken', `the security token of ${keyId} is missing or wrong`);
  if (header(req, 'x-acs-signature-method') !== 'HMAC-SHA1' || header(req, 'x-acs-signature-version') !== '1.0')
    throw new Refusal(400, 'UnsupportedSignatureMethod', 'the data plane takes HMAC-SHA1, signature version 1.0');
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(req.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v[0]! : v;
  const expected = createHmac('sha1', secret)
    .update(dataPlaneStringToSign(req.method ?? 'POST', req.url ?? '/', headers), 'utf8')
    .digest('base64');
  if (expected !== signature)
    throw new Refusal(401, 'SignatureDoesNotMatch', 'the request signature does not match (simulator code)');
  const date = Date.parse(header(req, 'date'));
  if (Number.isNaN(date) || Math.abs(now - date) > DATE_WINDOW_MS)
    throw new Refusal(
      400,
      'InvalidTimeStamp.Expired',
      `date ${header(req, 'date') || '(none)'} is not within 15 minutes`,
    );
  const nonce = header(req, 'x-acs-signature-nonce');
  if (!nonce) throw new Refusal(400, 'MissingSignatureNonce', 'x-acs-signature-nonce is required');
  for (const [k, t] of seen) if (now - t > DATE_WINDOW_MS) seen.delete(k);
  if (seen.has(`${keyId} ${nonce}`))
    throw new Refusal(400, 'SignatureNonceUsed', 'the signature nonce was used already');
  seen.set(`${keyId} ${nonce}`, now);
}
