import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/**
 * ACS3-HMAC-SHA256, checked the way Alibaba Cloud's gateway checks it: the server rebuilds the
 * canonical request from what arrived (method, raw path, sorted and re-encoded query, the headers
 * the client says it signed, the body's SHA-256) and compares HMACs. Written from the published
 * signing rules; the official SDKs are the tests (signature.test.ts, sdk.test.ts).
 *
 * Canonical request:
 *   METHOD \n PATH \n sorted(k=encode(v))&… \n name:trimmed-value\n… \n signed;header;names \n hex(sha256(body))
 * String to sign: `ACS3-HMAC-SHA256\n` + hex(sha256(canonical request)).
 */
export const ACS3 = 'ACS3-HMAC-SHA256';

export interface SignedRequest {
  method: string;
  /** The path as it arrived, before `?`, still percent-encoded. */
  path: string;
  /** The query string as it arrived, without `?`. */
  query: string;
  /** Lower-case names, as node:http gives them. */
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export type Verdict = { ok: true; accessKeyId: string } | { ok: false; status: number; code: string; message: string };

/** RFC 3986 encoding as the SDKs do it (encodeURIComponent plus `!'()*`). */
export function acsEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

const sha256Hex = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

function decode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** The query as the signer saw it: every key with its decoded value, keys sorted, values re-encoded. */
export function canonicalQuery(raw: string): string {
  const pairs = raw === '' ? [] : raw.split('&').filter((p) => p !== '');
  return pairs
    .map((p) => {
      const i = p.indexOf('=');
      const k = decode(i < 0 ? p : p.slice(0, i));
      const v = i < 0 ? '' : decode(p.slice(i + 1));
      return [k, v] as const;
    })
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${acsEncode(v)}`)
    .join('&');
}

const header = (h: SignedRequest['headers'], name: string): string | undefined => {
  const v = h[name];
  return Array.isArray(v) ? v.join(',') : v;
};

export function stringToSign(req: SignedRequest, signedHeaders: string[]): string {
  const canonicalHeaders = signedHeaders.map((n) => `${n}:${(header(req.headers, n) ?? '').trim()}\n`).join('');
  const canonical = [
    req.method,
    req.path,
    canonicalQuery(req.query),
    canonicalHeaders,
    signedHeaders.join(';'),
    header(req.headers, 'x-acs-content-sha256') ?? '',
  ].join('\n');
  return `${ACS3}\n${sha256Hex(canonical)}`;
}

/** The Authorization value a client holding `secret` would send for `req` (tests sign with it). */
export function authorization(req: SignedRequest, accessKeyId: string, secret: string): string {
  const signed = Object.keys(req.headers)
    .map((n) => n.toLowerCase())
    .filter((n) => n === 'host' || n === 'content-type' || n.startsWith('x-acs-'))
    .sort();
  const sig = createHmac('sha256', secret).update(stringToSign(req, signed)).digest('hex');
  return `${ACS3} Credential=${accessKeyId},SignedHeaders=${signed.join(';')},Signature=${sig}`;
}

const AUTH = /^ACS3-HMAC-SHA256 Credential=([^,]*),SignedHeaders=([^,]*),Signature=([0-9a-f]*)$/;

/**
 * Checks one request. `secretOf` answers the secret of a known AccessKey id. Errors carry the
 * codes and statuses the real gateway answers with (`InvalidAccessKeyId.NotFound` 404,
 * `SignatureDoesNotMatch` 400, `MissingAccessKeyId` 400); the legacy v2 signature is refused.
 */
export function verify(req: SignedRequest, secretOf: (accessKeyId: string) => string | undefined): Verdict {
  const auth = header(req.headers, 'authorization');
  if (!auth)
    return { ok: false, status: 400, code: 'MissingAccessKeyId', message: 'AccessKeyId is mandatory for this action.' };
  const m = AUTH.exec(auth.trim());
  if (!m) {
    return {
      ok: false,
      status: 400,
      code: 'InvalidAuthorization',
      message:
        `Authorization must be "${ACS3} Credential=…,SignedHeaders=…,Signature=…"; this simulator checks ` +
        `ACS3-HMAC-SHA256 only (the legacy v2 signature is not served).`,
    };
  }
  const [, keyId, signedList, signature] = m as unknown as [string, string, string, string];
  const secret = secretOf(keyId);
  if (secret === undefined)
    return {
      ok: false,
      status: 404,
      code: 'InvalidAccessKeyId.NotFound',
      message: 'Specified access key is not found.',
    };
  const signed = signedList.split(';').filter((n) => n !== '');
  const unsigned = Object.keys(req.headers).filter((n) => n.startsWith('x-acs-') && !signed.includes(n));
  if (!signed.includes('host') || unsigned.length > 0) {
    return {
      ok: false,
      status: 400,
      code: 'SignatureDoesNotMatch',
      message:
        `SignedHeaders must include host and every x-acs-* ` +
        `header${unsigned.length > 0 ? ` (unsigned: ${unsigned.join(', ')})` : ''}.`,
    };
  }
  const claimed = header(req.headers, 'x-acs-content-sha256');
  if (claimed !== sha256Hex(req.body)) {
    return {
      ok: false,
      status: 400,
      code: 'SignatureDoesNotMatch',
      message: 'x-acs-content-sha256 is not the SHA-256 of the body that arrived.',
    };
  }
  const sts = stringToSign(req, signed);
  const expected = createHmac('sha256', secret).update(sts).digest();
  const given = Buffer.from(signature, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return {
      ok: false,
      status: 400,
      code: 'SignatureDoesNotMatch',
      message: `Specified signature does not match our calculation. server StringToSign is [${sts}]`,
    };
  }
  return { ok: true, accessKeyId: keyId };
}
