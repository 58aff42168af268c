/**
 * Answering in Feishu / Lark: an event callback wants only a quick 200, so the answer goes through
 * the message API as a reply to the message that asked. A tenant_access_token (from the app id and
 * secret, `POST /open-apis/auth/v3/tenant_access_token/internal`) is kept until shortly before it
 * expires; the reply is `POST /open-apis/im/v1/messages/{message_id}/reply` with a text message.
 * Feishu answers HTTP 200 with `code` non-zero on failure: that is a failure here too.
 */
import type { Clock } from '../clock.ts';

/** Port. Idempotent per `uuid` (Feishu sends one message per uuid within an hour). May throw. */
export interface FeishuReplier {
  reply(messageId: string, text: string, uuid?: string): Promise<void>;
}

export interface FeishuApp {
  appId: string;
  appSecret: string;
  /** `https://open.feishu.cn` (Feishu) or `https://open.larksuite.com` (Lark). */
  baseUrl: string;
}

/** Refresh this long before the token's own expiry, so one never expires mid-request. */
const TOKEN_MARGIN_MS = 5 * 60_000;

export class HttpFeishuReplier implements FeishuReplier {
  private token: { value: string; until: number } | undefined;

  constructor(
    private readonly app: FeishuApp,
    private readonly clock: Clock,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  private async call(path: string, body: unknown, bearer?: string): Promise<Record<string, unknown>> {
    const res = await this.fetchFn(`${this.app.baseUrl}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(5000),
    });
    const json = (await res.json().catch(() => ({}))) as Record<string, unknown>;
    if (!res.ok || json.code !== 0)
      throw new Error(
        `feishu ${path} answered ${res.status} code ${String(json.code)}: ${String(json.msg ?? '')}`.slice(0, 300),
      );
    return json;
  }

  private async tenantToken(): Promise<string> {
    const now = this.clock.now();
    if (this.token && now < this.token.until) return this.token.value;
    const j = await this.call('/open-apis/auth/v3/tenant_access_token/internal', {
      app_id: this.app.appId,
      app_secret: this.app.appSecret,
    });
    const value = String(j.tenant_access_token ?? '');
    const expireS = Number(j.expire ?? 0);
    this.token = { value, until: now + Math.max(0, expireS * 1000 - TOKEN_MARGIN_MS) };
    return value;
  }

  async reply(messageId: string, text: string, uuid?: string): Promise<void> {
    const token = await this.tenantToken();
    await this.call(
      `/open-apis/im/v1/messages/${encodeURIComponent(messageId)}/reply`,
      { msg_type: 'text', content: JSON.stringify({ text }), ...(uuid ? { uuid: uuid.slice(0, 50) } : {}) },
      token,
    );
  }
}

export class RecordingFeishuReplier implements FeishuReplier {
  readonly replies: { messageId: string; text: string; uuid?: string }[] = [];
  async reply(messageId: string, text: string, uuid?: string): Promise<void> {
    this.replies.push({ messageId, text, ...(uuid ? { uuid } : {}) });
  }
}
