/**
 * A Slack client for the e2e tests: slash commands (and interactive payloads) signed with the
 * app's signing secret at the stack's virtual time, posted to the local bus's HTTP API
 * (`POST /chat/slack`, the route serverless.yml declares).
 */
import { createHmac } from 'node:crypto';

export interface SlackClient {
  /** A signed slash command from `user`; the answer's text (or the error body) and status. */
  command(user: string, text: string): Promise<{ status: number; text: string }>;
  /** A signed form post of any body (interactive payloads). */
  post(body: string): Promise<{ status: number; json: Record<string, unknown> }>;
}

export function slackClient(httpUrl: string, secret: string, now: () => number): SlackClient {
  const post = async (body: string) => {
    const ts = Math.floor(now() / 1000);
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
    };
    const res = await fetch(`${httpUrl}/chat/slack`, { method: 'POST', headers, body });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };
  let seq = 0;
  return {
    post,
    async command(user, text) {
      // A distinct body per request: the replay guard refuses a signed request seen before.
      const body = new URLSearchParams({
        user_id: user,
        user_name: user.toLowerCase(),
        channel_id: 'C-GPU',
        command: '/gpu',
        text,
        trigger_id: `t-${seq++}`,
      }).toString();
      const r = await post(body);
      return { status: r.status, text: String(r.json.text ?? r.json.error ?? '') };
    },
  };
}
