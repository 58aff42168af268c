/**
 * Answering a Slack request later, through the `response_url` it carried (slash commands and
 * interactive payloads): the one way to say more than the first 3-second answer. Slack accepts
 * up to five posts to one response_url within 30 minutes.
 */

export interface SlackResponse {
  text: string;
  /** Replace the message the button was on (an approval request, now decided); otherwise a new message. */
  replaceOriginal?: boolean;
  /** Only the person who asked sees it (the default); `in_channel` for everyone. */
  responseType?: 'ephemeral' | 'in_channel';
}

/** Port. `respond` may throw (an unknown host, Slack refusing): the caller logs it, the command stands. */
export interface SlackResponder {
  respond(responseUrl: string, message: SlackResponse): Promise<void>;
  /** Whether `respond` would post to this URL at all (it is under the allowed prefix). */
  reaches(responseUrl: string): boolean;
}

/** The JSON Slack expects at a response_url. */
export function responseBody(m: SlackResponse): Record<string, unknown> {
  return {
    response_type: m.responseType ?? 'ephemeral',
    text: m.text,
    ...(m.replaceOriginal ? { replace_original: true } : { replace_original: false }),
  };
}

/**
 * POSTs to a response_url, only under `allowedPrefix` (Slack's own `https://hooks.slack.com/`
 * unless configured): the URL comes from a signed request, and still we never post elsewhere.
 */
export class HttpSlackResponder implements SlackResponder {
  constructor(
    private readonly allowedPrefix = 'https://hooks.slack.com/',
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  reaches(responseUrl: string): boolean {
    return responseUrl.startsWith(this.allowedPrefix);
  }

  async respond(responseUrl: string, m: SlackResponse): Promise<void> {
    if (!this.reaches(responseUrl)) throw new Error(`response_url is not under ${this.allowedPrefix}`);
    const res = await this.fetchFn(responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(responseBody(m)),
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`slack response_url answered ${res.status}`);
  }
}

export class RecordingSlackResponder implements SlackResponder {
  readonly sent: { url: string; message: SlackResponse }[] = [];
  constructor(private readonly allowedPrefix = 'https://hooks.slack.com/') {}
  reaches(url: string): boolean {
    return url.startsWith(this.allowedPrefix);
  }
  async respond(url: string, message: SlackResponse): Promise<void> {
    this.sent.push({ url, message });
  }
}
