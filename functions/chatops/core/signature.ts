/**
 * Is this chat request really from the platform, and fresh? One verifier per platform, pure: the
 * raw body and headers in, a verdict with the exact reason out (the webhook answers 401 without
 * it; `gpu-reflex chat verify` prints it). Comparisons are constant-time.
 *
 * - Slack: `X-Slack-Signature: v0=hex(HMAC-SHA256(signing secret, "v0:" + X-Slack-Request-Timestamp + ":" + raw
 * body))`,
 *   the timestamp within 5 minutes of now.
 * - DingTalk (outgoing robot): headers `timestamp` (ms) and `sign` =
 *   base64(HMAC-SHA256(app secret, timestamp + "\n" + app secret)), within one hour. The signature
 *   does not cover the body: a replay cache (replay.ts) is what stops a captured pair being reused.
 * - Feishu / Lark event callbacks: with an Encrypt Key set, `X-Lark-Signature` =
 *   hex(SHA-256(X-Lark-Request-Timestamp + X-Lark-Request-Nonce + encrypt key + raw body)) and the
 *   body `{"encrypt": base64(iv ‖ AES-256-CBC(SHA-256(encrypt key), iv, json))}`; the decrypted
 *   event's verification token (v2 `header.token`, v1 `token`) must match. Without an Encrypt Key
 *   only the token is checked.
 */
import { createDecipheriv, createHash, createHmac, timingSafeEqual } from 'node:crypto';

export const CHAT_PLATFORMS = ['slack', 'dingtalk', 'feishu'] as const;
export type ChatPlatform = (typeof CHAT_PLATFORMS)[number];

export interface ChatRequest {
  /** Header names in lower case, as API Gateway v2 gives them. */
  headers: Readonly<Record<string, string | undefined>>;
  /** The raw body, exactly as it arrived. */
  body: string;
}

export interface ChatSecrets {
  slackSigningSecret?: string;
  dingtalkAppSecret?: string;
  feishuVerificationToken?: string;
  feishuEncryptKey?: string;
}

export type Verdict =
  | { ok: true; platform: ChatPlatform; body: string; replayKey: string }
  | { ok: false; platform: ChatPlatform; reason: string };

export const SLACK_WINDOW_S = 300;
export const DINGTALK_WINDOW_MS = 3_600_000;
export const FEISHU_WINDOW_S = 300;
/**
 * Feishu re-sends an event it got no 200 for within 3 s at 15 s, 5 min, 1 h and 6 h (about 7.1 h
 * in all), each time signed anew (a new timestamp and nonce): the same event is known by its
 * event_id (a 2.0 event) or uuid (1.0) for this long.
 */
export const FEISHU_RETRY_WINDOW_MS = 8 * 3_600_000;

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const refuse = (platform: ChatPlatform, reason: string): Verdict => ({ ok: false, platform, reason });

/** `now` in seconds (Slack, Feishu) or milliseconds (DingTalk): see each platform's clock. */
export function verifySlack(
  req: ChatRequest,
  secret: string | undefined,
  nowS: number,
  windowS = SLACK_WINDOW_S,
): Verdict {
  if (!secret) return refuse('slack', 'no Slack signing secret is configured (CHAT_SLACK_SIGNING_SECRET)');
  const ts = req.headers['x-slack-request-timestamp'];
  const sig = req.headers['x-slack-signature'];
  if (!ts) return refuse('slack', 'missing header X-Slack-Request-Timestamp');
  if (!sig) return refuse('slack', 'missing header X-Slack-Signature');
  if (!/^\d+$/.test(ts)) return refuse('slack', `X-Slack-Request-Timestamp "${ts}" is not a number of seconds`);
  if (Math.abs(nowS - Number(ts)) > windowS)
    return refuse(
      'slack',
      `stale: X-Slack-Request-Timestamp ${ts} is ${Math.abs(nowS - Number(ts))} s from now (window ${windowS} s)`,
    );
  if (!sig.startsWith('v0='))
    return refuse('slack', `X-Slack-Signature must start with "v0=" (got "${sig.slice(0, 8)}…")`);
  const want = `v0=${createHmac('sha256', secret).update(`v0:${ts}:${req.body}`).digest('hex')}`;
  if (!sameText(sig, want))
    return refuse(
      'slack',
      'bad signature: X-Slack-Signature is not HMAC-SHA256 of "v0:<timestamp>:<body>" with the signing secret',
    );
  return { ok: true, platform: 'slack', body: req.body, replayKey: `slack:${sig}` };
}

export function verifyDingTalk(req: ChatRequest, secret: string | undefined, nowMs: number): Verdict {
  if (!secret) return refuse('dingtalk', 'no DingTalk app secret is configured (CHAT_DINGTALK_APP_SECRET)');
  const ts = req.headers['timestamp'];
  const sign = req.headers['sign'];
  if (!ts) return refuse('dingtalk', 'missing header timestamp');
  if (!sign) return refuse('dingtalk', 'missing header sign');
  if (!/^\d+$/.test(ts)) return refuse('dingtalk', `header timestamp "${ts}" is not a number of milliseconds`);
  if (Math.abs(nowMs - Number(ts)) > DINGTALK_WINDOW_MS)
    return refuse(
      'dingtalk',
      `stale: timestamp ${ts} is ${Math.round(Math.abs(nowMs - Number(ts)) / 1000)} s from now ` +
        `(window ${DINGTALK_WINDOW_MS / 1000} s)`,
    );
  const want = createHmac('sha256', secret).update(`${ts}\n${secret}`).digest('base64');
  if (!sameText(sign, want))
    return refuse(
      'dingtalk',
      'bad signature: sign is not base64(HMAC-SHA256 of "<timestamp>\\n<app secret>" with the app secret)',
    );
  return { ok: true, platform: 'dingtalk', body: req.body, replayKey: `dingtalk:${ts}:${sign}` };
}

/**
 * DingTalk signs the timestamp alone: a request the webhook verified travels to chatops-worker with
 * this MAC over its timestamp, sign and body (HMAC-SHA256 with the app secret, hex), which only the
 * functions can make.
 */
export function dingtalkRequestMac(secret: string, timestamp: string, sign: string, body: string): string {
  return createHmac('sha256', secret)
    .update(`gpu-reflex dingtalk request v1\n${timestamp}\n${sign}\n${body}`)
    .digest('hex');
}

/** Whether `mac` is the request's MAC (constant time). */
export function dingtalkMacMatches(
  secret: string,
  timestamp: string,
  sign: string,
  body: string,
  mac: string,
): boolean {
  return sameText(mac, dingtalkRequestMac(secret, timestamp, sign, body));
}

/** Feishu/Lark's encrypted body: base64(iv ‖ AES-256-CBC ciphertext), key SHA-256(encrypt key). */
export function feishuDecrypt(encrypted: string, encryptKey: string): string {
  const buf = Buffer.from(encrypted, 'base64');
  if (buf.length < 32 || buf.length % 16 !== 0)
    throw new Error('the encrypted body is not base64 of an IV and whole AES blocks');
  const key = createHash('sha256').update(encryptKey).digest();
  const d = createDecipheriv('aes-256-cbc', key, buf.subarray(0, 16));
  return Buffer.concat([d.update(buf.subarray(16)), d.final()]).toString('utf8');
}

export function verifyFeishu(
  req: ChatRequest,
  secrets: Pick<ChatSecrets, 'feishuVerificationToken' | 'feishuEncryptKey'>,
  nowS: number,
  windowS = FEISHU_WINDOW_S,
): Verdict {
  const token = secrets.feishuVerificationToken;
  if (!token) return refuse('feishu', 'no Feishu verification token is configured (CHAT_FEISHU_VERIFICATION_TOKEN)');
  let body = req.body;
  const key = secrets.feishuEncryptKey;
  let signed = false;
  if (key) {
    const ts = req.headers['x-lark-request-timestamp'];
    const nonce = req.headers['x-lark-request-nonce'];
    const sig = req.headers['x-lark-signature'];
    let encrypted: unknown;
    try {
      encrypted = (JSON.parse(req.body) as { encrypt?: unknown }).encrypt;
    } catch {
      return refuse('feishu', 'the body is not JSON');
    }
    if (typeof encrypted !== 'string')
      return refuse('feishu', 'an Encrypt Key is configured but the body has no "encrypt" field');
    // The URL verification challenge comes encrypted but unsigned; every event is signed.
    signed = Boolean(sig || ts || nonce);
    if (signed) {
      if (!ts) return refuse('feishu', 'missing header X-Lark-Request-Timestamp');
      if (!nonce) return refuse('feishu', 'missing header X-Lark-Request-Nonce');
      if (!sig) return refuse('feishu', 'missing header X-Lark-Signature');
      if (!/^\d+$/.test(ts)) return refuse('feishu', `X-Lark-Request-Timestamp "${ts}" is not a number of seconds`);
      if (Math.abs(nowS - Number(ts)) > windowS)
        return refuse(
          'feishu',
          `stale: X-Lark-Request-Timestamp ${ts} is ${Math.abs(nowS - Number(ts))} s from now (window ${windowS} s)`,
        );
      const want = createHash('sha256')
        .update(ts + nonce + key + req.body)
        .digest('hex');
      if (!sameText(sig, want))
        return refuse(
          'feishu',
          'bad signature: X-Lark-Signature is not SHA-256 of timestamp + nonce + encrypt key + body',
        );
    }
    try {
      body = feishuDecrypt(encrypted, key);
    } catch (err) {
      return refuse('feishu', `cannot decrypt the body with the Encrypt Key: ${(err as Error).message}`);
    }
  }
  let event: { token?: unknown; type?: unknown; header?: { token?: unknown; event_id?: unknown } };
  try {
    event = JSON.parse(body) as typeof event;
  } catch {
    return refuse('feishu', 'the (decrypted) body is not JSON');
  }
  // Unsigned where an Encrypt Key is set: only the challenge. Anything else would be a captured
  // body replayed without its headers, which carry its age.
  if (key && !signed && event.type !== 'url_verification')
    return refuse(
      'feishu',
      'missing header X-Lark-Signature: with an Encrypt Key only the URL verification challenge comes unsigned',
    );
  const given = event.header?.token ?? event.token;
  if (typeof given !== 'string' || !sameText(given, token))
    return refuse('feishu', "bad verification token: the event's token is not the configured one");
  // The event, not the delivery: a re-sent event is signed anew but keeps its event_id (2.0) or
  // uuid (1.0). The URL challenge by its challenge; anything else by its body.
  const id = event.header?.event_id ?? (event as { uuid?: unknown }).uuid;
  const replayKey =
    typeof id === 'string' && id
      ? `feishu:event:${id}`
      : 'feishu:' +
        String((event as { challenge?: unknown }).challenge ?? createHash('sha256').update(body).digest('hex'));
  return { ok: true, platform: 'feishu', body, replayKey };
}

/** The platform's verifier; `nowMs` is the one clock's time. */
export function verifyChatRequest(
  platform: ChatPlatform,
  req: ChatRequest,
  secrets: ChatSecrets,
  nowMs: number,
): Verdict {
  const nowS = Math.floor(nowMs / 1000);
  if (platform === 'slack') return verifySlack(req, secrets.slackSigningSecret, nowS);
  if (platform === 'dingtalk') return verifyDingTalk(req, secrets.dingtalkAppSecret, nowMs);
  return verifyFeishu(req, secrets, nowS);
}

/**
 * Requests already accepted, by replay key, for as long as their window lasts: the same signed
 * request seen twice is refused the second time. In memory, per function container.
 */
export class ReplayGuard {
  private readonly seen = new Map<string, number>();
  constructor(private readonly max = 10_000) {}

  /** True the first time `key` is seen within its window; false for a replay. */
  accept(key: string, nowMs: number, windowMs: number): boolean {
    for (const [k, until] of this.seen) if (until < nowMs) this.seen.delete(k);
    if (this.seen.has(key)) return false;
    // Full: the oldest go first (a Map iterates in insertion order).
    for (const k of this.seen.keys()) {
      if (this.seen.size < this.max) break;
      this.seen.delete(k);
    }
    this.seen.set(key, nowMs + windowMs);
    return true;
  }
}
