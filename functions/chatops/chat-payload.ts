import type { ChatPlatform } from './core/signature.ts';
import { readSlackForm, type SlackSaid } from './core/slack-form.ts';
import type { ChatUser } from './run.ts';

// What a verified chat request says, read out of each platform's payload (webhook.ts, worker.ts).
/** Who said what where, from the platform's (verified) body; undefined when it carries no command. */
export function commandOf(
  platform: ChatPlatform,
  body: string,
):
  | {
      who: ChatUser;
      text: string;
      slack?: SlackSaid;
      feishu?: { messageId: string; eventId?: string };
      dingtalk?: { sessionWebhook: string; expiresAt?: number };
    }
  | { challenge: string }
  | undefined {
  if (platform === 'slack') {
    const said = readSlackForm(body);
    if (!said) return undefined;
    return {
      who: { platform, id: said.user.id, ...(said.user.name ? { name: said.user.name } : {}), channel: said.channel },
      text: said.text,
      slack: said,
    };
  }
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(body) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (platform === 'dingtalk') {
    const id = (j.senderStaffId ?? j.senderId) as string | undefined;
    if (!id) return undefined;
    const session =
      typeof j.sessionWebhook === 'string' && j.sessionWebhook
        ? {
            sessionWebhook: j.sessionWebhook,
            ...(typeof j.sessionWebhookExpiredTime === 'number' ? { expiresAt: j.sessionWebhookExpiredTime } : {}),
          }
        : undefined;
    return {
      who: {
        platform,
        id,
        ...(typeof j.senderNick === 'string' ? { name: j.senderNick } : {}),
        channel: String(j.conversationId ?? ''),
      },
      text: String((j.text as { content?: unknown } | undefined)?.content ?? ''),
      ...(session ? { dingtalk: session } : {}),
    };
  }
  if (j.type === 'url_verification' && typeof j.challenge === 'string') return { challenge: j.challenge };
  const ev = j.event as
    | {
        sender?: { sender_id?: { open_id?: string; user_id?: string } };
        message?: { message_id?: string; chat_id?: string; content?: string };
      }
    | undefined;
  const id = ev?.sender?.sender_id?.open_id ?? ev?.sender?.sender_id?.user_id;
  if (!id) return undefined;
  let text = '';
  try {
    text = String((JSON.parse(ev?.message?.content ?? '{}') as { text?: unknown }).text ?? '');
  } catch {
    text = '';
  }
  const messageId = ev?.message?.message_id;
  const eventId = (j.header as { event_id?: unknown } | undefined)?.event_id;
  return {
    who: { platform, id, channel: ev?.message?.chat_id ?? '' },
    text,
    ...(typeof messageId === 'string' && messageId
      ? { feishu: { messageId, ...(typeof eventId === 'string' ? { eventId } : {}) } }
      : {}),
  };
}

/**
 * Why a verified body is not what the platform sends, so it is answered 400 with the reason (a
 * platform's test console or a hand-made request learns what is wrong); undefined when it is a
 * request of the platform's that simply carries no command (another interaction, another event):
 * that one is acknowledged with a 200.
 */
export function malformedReason(platform: ChatPlatform, body: string): string | undefined {
  if (platform === 'slack') {
    const f = new URLSearchParams(body);
    const payload = f.get('payload');
    if (payload === null)
      return f.get('user_id')
        ? undefined
        : 'a Slack request names its user (user_id) or carries an interaction (payload); this one has neither';
    try {
      JSON.parse(payload);
      return undefined;
    } catch {
      return 'the Slack interaction payload is not JSON';
    }
  }
  let j: unknown;
  try {
    j = JSON.parse(body);
  } catch {
    return `the ${platform === 'dingtalk' ? 'DingTalk' : 'Feishu'} request body is not JSON`;
  }
  if (j === null || typeof j !== 'object' || Array.isArray(j)) return 'the request body is not a JSON object';
  const o = j as Record<string, unknown>;
  if (platform === 'dingtalk')
    return 'a DingTalk message names its sender (senderStaffId or senderId); this one does not';
  if (o.type === undefined && o.header === undefined && o.event === undefined)
    return 'not a Feishu event: it has no header, event or type';
  return undefined;
}

/** A request that carries a command. */
export type Said = Exclude<ReturnType<typeof commandOf>, { challenge: string } | undefined>;
