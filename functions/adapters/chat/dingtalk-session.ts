/**
 * Answering a DingTalk robot message later, through the `sessionWebhook` its callback carried: a
 * temporary URL of the conversation (about 90 minutes; the callback's `sessionWebhookExpiredTime`
 * says until when) that takes a message without further credentials. DingTalk answers HTTP 200
 * with `errcode` non-zero on failure: that is a failure here too.
 */

/** Port. `say` may throw (DingTalk refusing, the URL lapsed): the caller logs it, the command stands. */
export interface DingTalkSessionResponder {
  /** Whether `say` would post to this URL at all (it is under the allowed prefix). */
  reaches(sessionWebhook: string): boolean;
  say(sessionWebhook: string, text: string): Promise<void>;
}

/** DingTalk's own sessionWebhook URLs: the only ones posted to unless configured. */
export const DINGTALK_SESSION_PREFIX = 'https://oapi.dingtalk.com/robot/sendBySession';

/**
 * POSTs a text message to a sessionWebhook, only under `allowedPrefix` (DingTalk's own
 * `https://oapi.dingtalk.com/robot/sendBySession` unless configured): the URL comes from a request
 * DingTalk signed, and still we never post elsewhere.
 */
export class HttpDingTalkSessionResponder implements DingTalkSessionResponder {
  constructor(
    private readonly allowedPrefix = DINGTALK_SESSION_PREFIX,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  reaches(sessionWebhook: string): boolean {
    return sessionWebhook.startsWith(this.allowedPrefix);
  }

  async say(sessionWebhook: string, text: string): Promise<void> {
    if (!this.reaches(sessionWebhook)) throw new Error(`sessionWebhook is not under ${this.allowedPrefix}`);
    const res = await this.fetchFn(sessionWebhook, {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify({ msgtype: 'text', text: { content: text } }),
      signal: AbortSignal.timeout(5000),
    });
    const json = (await res.json().catch(() => undefined)) as { errcode?: unknown; errmsg?: unknown } | undefined;
    if (!res.ok || (typeof json?.errcode === 'number' && json.errcode !== 0))
      throw new Error(
        (
          `dingtalk sessionWebhook answered ${res.status} ` +
          `errcode ${String(json?.errcode)}: ${String(json?.errmsg ?? '')}`
        ).slice(0, 300),
      );
  }
}

export class RecordingDingTalkSessionResponder implements DingTalkSessionResponder {
  readonly sent: { url: string; text: string }[] = [];
  constructor(private readonly allowedPrefix = DINGTALK_SESSION_PREFIX) {}
  reaches(url: string): boolean {
    return url.startsWith(this.allowedPrefix);
  }
  async say(url: string, text: string): Promise<void> {
    this.sent.push({ url, text });
  }
}
