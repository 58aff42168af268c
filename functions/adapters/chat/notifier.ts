/**
 * Telling people. A notification failure never fails a remediation: `safeNotifier` logs and
 * swallows (node-termination-handler's webhook lesson).
 */
import type { Logger } from '../logger.ts';

export interface Notice {
  title: string;
  text: string;
  severity: 'info' | 'warning' | 'critical';
  /** An approval request: the text says how to answer (`approve ID`); Slack also gets buttons. */
  approval?: { id: string };
}

/** Port. `notify` may throw; wrap it with `safeNotifier` where a failure must not propagate. */
export interface Notifier {
  notify(notice: Notice): Promise<void>;
  /**
   * Set where notices go nowhere (no chat is configured): the reflex skeleton reports each notice
   * `skipped` with this reason instead of `done`, and keeps none of them for a later try.
   */
  readonly skipReason?: string;
}

/** The notifier of a deployment with no chat webhook: nothing is sent, and reports say so. */
export class NoChatNotifier implements Notifier {
  readonly skipReason = 'no chat webhook is configured (CHAT_WEBHOOK_URL and CHAT_PLATFORM): nobody was told';
  async notify(): Promise<void> {}
}

export type ChatPlatform = 'slack' | 'dingtalk' | 'feishu';

/** A button's `value`: the very command it stands for (`approve apr-…`), which the webhook runs. */
export function approvalButtonValue(decision: 'approve' | 'deny', id: string): string {
  return `${decision} ${id}`;
}
export const APPROVAL_ACTION_IDS = { approve: 'gpu-reflex-approve', deny: 'gpu-reflex-deny' } as const;

/** Block Kit for Slack: the text, and for an approval request Approve / Deny buttons naming its id. */
function slackBlocks(text: string, approval: { id: string } | undefined): unknown[] {
  const section = { type: 'section', text: { type: 'mrkdwn', text: text.slice(0, 3000) } };
  if (!approval) return [section];
  const button = (d: 'approve' | 'deny') => ({
    type: 'button',
    action_id: APPROVAL_ACTION_IDS[d],
    text: { type: 'plain_text', text: d === 'approve' ? 'Approve' : 'Deny' },
    style: d === 'approve' ? 'primary' : 'danger',
    value: approvalButtonValue(d, approval.id),
  });
  return [
    section,
    { type: 'actions', block_id: `approval:${approval.id}`, elements: [button('approve'), button('deny')] },
  ];
}

/** The JSON each platform's incoming webhook expects for a plain text message. */
export function webhookBody(platform: ChatPlatform, n: Notice): unknown {
  const text = `${n.severity === 'critical' ? '🔴' : n.severity === 'warning' ? '🟠' : 'ℹ️'} ${n.title}\n${n.text}`;
  switch (platform) {
    case 'slack':
      // `text` stays: it is the notification's fallback and what the `approve ID` answer reads.
      return { text, blocks: slackBlocks(text, n.approval) };
    case 'dingtalk':
      return { msgtype: 'text', text: { content: text } };
    case 'feishu':
      return { msg_type: 'text', content: { text } };
  }
}

export class WebhookNotifier implements Notifier {
  constructor(
    private readonly platform: ChatPlatform,
    private readonly url: string,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  async notify(n: Notice): Promise<void> {
    const res = await this.fetchFn(this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(webhookBody(this.platform, n)),
      signal: AbortSignal.timeout(5000),
    });
    if (!res.ok) throw new Error(`${this.platform} webhook answered ${res.status}`);
  }
}

export class RecordingNotifier implements Notifier {
  readonly notices: Notice[] = [];
  async notify(n: Notice): Promise<void> {
    this.notices.push(n);
  }
}

/** Never throws: failures are logged as warnings. */
export function safeNotifier(inner: Notifier, logger: Logger): Notifier {
  return {
    async notify(n) {
      try {
        await inner.notify(n);
      } catch (err) {
        logger.warn('notification failed', { title: n.title, error: err });
      }
    },
  };
}
