/**
 * The chat webhook (HTTP API `POST /chat/{platform}`): verify (signature, freshness, replay) →
 * take the user, channel and text out of the platform's payload → run the command → answer in the
 * platform's shape. Anything unsigned, badly signed, stale or replayed is 401 with no detail (the
 * reason goes to the log). Feishu's URL verification is answered with its challenge.
 *
 * The platforms wait about 3 seconds. A long command (`isLong`) is answered "working on it"
 * (Feishu: a reply to the message, then the 200) and put on the bus as `ChatOps Command Requested`,
 * exactly as the platform signed it (DingTalk's with the webhook's MAC over the body); chatops-worker
 * carries it out and answers at the response_url, as a reply to the Feishu message, or at the
 * DingTalk conversation's sessionWebhook (worker.ts). A Lambda is frozen once it has
 * answered, so no work is left running after the return. A button press (block_actions) runs `approve ID` /
 * `deny ID` and rewrites the message it was on to say who decided.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { CHATOPS_COMMAND_REQUESTED, SCHEMA_VERSION, SOURCES, type ChatOpsCommandRequestedDetail } from '../../events/index.ts';
import { createHash } from 'node:crypto';
import type { DingTalkSessionResponder } from '../adapters/chat/dingtalk-session.ts';
import type { FeishuReplier } from '../adapters/chat/feishu-replier.ts';
import type { SlackResponder } from '../adapters/chat/slack-response.ts';
import type { Logger } from '../lib/logger.ts';
import { isLong, parseCommand } from './core/command.ts';
import { CHAT_PLATFORMS, dingtalkRequestMac, DINGTALK_WINDOW_MS, FEISHU_RETRY_WINDOW_MS, SLACK_WINDOW_S, verifyChatRequest, type ChatPlatform, type ChatSecrets } from './core/signature.ts';
import { readSlackForm, type SlackSaid } from './core/slack-form.ts';
import type { ReplayCheck } from './replay.ts';
import { refusal, runChat, runChatCommand, type ChatDeps, type ChatUser } from './run.ts';

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({ statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Who said what where, from the platform's (verified) body; undefined when it carries no command. */
export function commandOf(platform: ChatPlatform, body: string): { who: ChatUser; text: string; slack?: SlackSaid; feishu?: { messageId: string; eventId?: string }; dingtalk?: { sessionWebhook: string; expiresAt?: number } } | { challenge: string } | undefined {
  if (platform === 'slack') {
    const said = readSlackForm(body);
    if (!said) return undefined;
    return { who: { platform, id: said.user.id, ...(said.user.name ? { name: said.user.name } : {}), channel: said.channel }, text: said.text, slack: said };
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
    const session = typeof j.sessionWebhook === 'string' && j.sessionWebhook ? { sessionWebhook: j.sessionWebhook, ...(typeof j.sessionWebhookExpiredTime === 'number' ? { expiresAt: j.sessionWebhookExpiredTime } : {}) } : undefined;
    return { who: { platform, id, ...(typeof j.senderNick === 'string' ? { name: j.senderNick } : {}), channel: String(j.conversationId ?? '') }, text: String((j.text as { content?: unknown } | undefined)?.content ?? ''), ...(session ? { dingtalk: session } : {}) };
  }
  if (j.type === 'url_verification' && typeof j.challenge === 'string') return { challenge: j.challenge };
  const ev = j.event as { sender?: { sender_id?: { open_id?: string; user_id?: string } }; message?: { message_id?: string; chat_id?: string; content?: string } } | undefined;
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
  return { who: { platform, id, channel: ev?.message?.chat_id ?? '' }, text, ...(typeof messageId === 'string' && messageId ? { feishu: { messageId, ...(typeof eventId === 'string' ? { eventId } : {}) } } : {}) };
}

function answer(platform: ChatPlatform, text: string): APIGatewayProxyStructuredResultV2 {
  if (platform === 'slack') return json(200, { response_type: 'ephemeral', text });
  if (platform === 'dingtalk') return json(200, { msgtype: 'text', text: { content: text } });
  // Feishu takes only a 200 here; the answer went through its message API (FeishuReplier).
  return json(200, {});
}

export type WebhookDeps = ChatDeps & {
  secrets: ChatSecrets;
  logger: Logger;
  responder: SlackResponder;
  /** One per container (replay.ts). */
  replay: ReplayCheck;
  /** Feishu's message API, where the app's id and secret are configured; without it the answer is only in the ChatOps Command event. */
  feishu?: FeishuReplier;
  /** Where a DingTalk conversation takes a late answer; without it long DingTalk commands run in the callback. */
  dingtalk?: DingTalkSessionResponder;
};

/** A button press: the command it stands for, then the message it was on rewritten to say who decided. */
async function pressButton(deps: WebhookDeps, who: ChatUser, said: SlackSaid): Promise<APIGatewayProxyStructuredResultV2> {
  const out = await runChat(deps, who, said.text);
  if (said.responseUrl) {
    // Decided: the request's message now says so, buttons gone. Not decided (refused, already
    // decided, expired): only the presser is told why, and the buttons stay for whoever may.
    const message = out.decided
      ? { text: `${out.decided.decision === 'approved' ? '✅' : '⛔'} ${out.decided.id} ${out.decided.decision} by <@${who.id}>: ${out.answer}`, replaceOriginal: true, responseType: 'in_channel' as const }
      : { text: out.answer };
    try {
      await deps.responder.respond(said.responseUrl, message);
    } catch (err) {
      deps.logger.warn('slack response_url post failed', { error: err });
    }
  }
  // Slack wants only a quick 200 for block_actions; what there is to say went to the response_url.
  return { statusCode: 200 };
}

/**
 * A long Feishu command: on the bus as Feishu sent it (the raw body, and its signature headers
 * where an Encrypt Key signs them), for chatops-worker; "working on it" said as a reply. Not put
 * on the bus: the person is told so and may ask again (Feishu's re-sends of this event are
 * acknowledged, not run).
 */
async function deferFeishu(deps: WebhookDeps & { feishu: FeishuReplier }, headers: Record<string, string | undefined>, body: string, said: { messageId: string; eventId?: string }, words: string[]): Promise<APIGatewayProxyStructuredResultV2> {
  const now = deps.clock.now();
  const ts = headers['x-lark-request-timestamp'];
  const nonce = headers['x-lark-request-nonce'];
  const signature = headers['x-lark-signature'];
  const detail: ChatOpsCommandRequestedDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `chat-request:feishu:${said.eventId ?? said.messageId}`.replace(/[^A-Za-z0-9._:-]/g, "-").slice(0, 128),
    occurredAt: new Date(now).toISOString(),
    platform: 'feishu',
    request: { ...(ts ? { timestamp: ts } : {}), ...(nonce ? { nonce } : {}), ...(signature ? { signature } : {}), body },
  };
  const ack = said.eventId ? `${said.eventId}:ack` : undefined;
  let text = `working on it… (${words.join(' ')}): the answer follows here`;
  try {
    await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND_REQUESTED, detail }]);
  } catch (err) {
    deps.logger.error('chat request not handed to chatops-worker', { platform: 'feishu', error: err });
    text = `failed: ${words.join(' ')}: could not hand it to chatops-worker (${(err as Error).message}); nothing was done, ask again`;
  }
  await deps.feishu.reply(said.messageId, text, ack).catch((err: unknown) => deps.logger.warn('feishu reply failed', { error: err }));
  return answer('feishu', text);
}

/**
 * A long DingTalk command: on the bus with DingTalk's timestamp and sign and, since those do not
 * cover the body, the webhook's MAC over all three (`dingtalkRequestMac`), for chatops-worker,
 * which answers at the conversation's sessionWebhook; "working on it" answered here.
 */
async function deferDingTalk(deps: WebhookDeps, headers: Record<string, string | undefined>, body: string, words: string[]): Promise<APIGatewayProxyStructuredResultV2> {
  const timestamp = headers['timestamp']!;
  const sign = headers['sign']!;
  const detail: ChatOpsCommandRequestedDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `chat-request:dingtalk:${createHash('sha256').update(`${timestamp}\n${sign}`).digest('hex').slice(0, 32)}`,
    occurredAt: new Date(deps.clock.now()).toISOString(),
    platform: 'dingtalk',
    request: { timestamp, sign, body, mac: dingtalkRequestMac(deps.secrets.dingtalkAppSecret!, timestamp, sign, body) },
  };
  try {
    await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND_REQUESTED, detail }]);
  } catch (err) {
    deps.logger.error('chat request not handed to chatops-worker', { platform: 'dingtalk', error: err });
    return answer('dingtalk', `failed: ${words.join(' ')}: could not hand it to chatops-worker (${(err as Error).message}); nothing was done, ask again`);
  }
  return answer('dingtalk', `working on it… (${words.join(' ')}): the answer follows here`);
}

/** A long Slack command: on the bus as Slack signed it, for chatops-worker; answered "working on it". */
async function defer(deps: WebhookDeps, headers: Record<string, string | undefined>, body: string, words: string[]): Promise<APIGatewayProxyStructuredResultV2> {
  const signature = headers['x-slack-signature']!;
  const now = deps.clock.now();
  const detail: ChatOpsCommandRequestedDetail = {
    schemaVersion: SCHEMA_VERSION,
    eventId: `chat-request:slack:${signature.slice(3, 35)}`,
    occurredAt: new Date(now).toISOString(),
    platform: 'slack',
    request: { timestamp: headers['x-slack-request-timestamp']!, signature, body },
  };
  await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND_REQUESTED, detail }]);
  return answer('slack', `working on it… (${words.join(' ')}): the answer follows here`);
}

export async function handleChatRequest(deps: WebhookDeps, request: APIGatewayProxyEventV2, body: string): Promise<APIGatewayProxyStructuredResultV2> {
  const platform = (request.pathParameters?.platform ?? request.rawPath.split('/').pop() ?? '') as ChatPlatform;
  if (!CHAT_PLATFORMS.includes(platform)) return json(404, { error: 'unknown chat platform' });
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const now = deps.clock.now();
  const v = verifyChatRequest(platform, { headers, body }, deps.secrets, now);
  if (!v.ok) {
    deps.logger.warn('chat request refused', { platform, reason: v.reason });
    return json(401, { error: 'unauthorized' });
  }
  const window = platform === 'dingtalk' ? DINGTALK_WINDOW_MS : platform === 'feishu' ? FEISHU_RETRY_WINDOW_MS : SLACK_WINDOW_S * 1000 * 2;
  if (!(await deps.replay.accept(v.replayKey, now, window))) {
    // Feishu re-sends what it got no 200 for (a slow answer included): the event was handled, so
    // it is acknowledged, and nothing runs twice. Elsewhere a replay is a forgery until shown otherwise.
    if (platform === 'feishu') {
      deps.logger.info('feishu event already handled: acknowledged, not run again', { key: v.replayKey });
      return json(200, {});
    }
    deps.logger.warn('chat request refused', { platform, reason: 'replayed: this signed request was already accepted' });
    return json(401, { error: 'unauthorized' });
  }
  const c = commandOf(platform, v.body);
  if (!c) return json(200, {});
  if ('challenge' in c) return json(200, { challenge: c.challenge });
  if (c.slack?.button) return pressButton(deps, c.who, c.slack);
  if (c.slack?.responseUrl) {
    // Refusals and usage errors are quick: answered here, as the synchronous path words them.
    const parsed = parseCommand(c.text);
    if (parsed.ok && isLong(parsed.command) && !refusal(deps.config, c.who, parsed.command)) return defer(deps, headers, v.body, parsed.words);
  }
  if (c.feishu && deps.feishu) {
    // Long commands are left for the worker, which replies to the message; quick ones answer here.
    const parsed = parseCommand(c.text);
    if (parsed.ok && isLong(parsed.command) && !refusal(deps.config, c.who, parsed.command)) return deferFeishu({ ...deps, feishu: deps.feishu }, headers, body, c.feishu, parsed.words);
  }
  if (c.dingtalk && deps.dingtalk?.reaches(c.dingtalk.sessionWebhook) && (c.dingtalk.expiresAt ?? Infinity) > now) {
    // Long commands are left for the worker, which answers at the sessionWebhook; quick ones answer here.
    const parsed = parseCommand(c.text);
    if (parsed.ok && isLong(parsed.command) && !refusal(deps.config, c.who, parsed.command)) return deferDingTalk(deps, headers, body, parsed.words);
  }
  const text = await runChatCommand(deps, c.who, c.text);
  if (c.feishu && deps.feishu) {
    // A reply failure is logged, never undoes the command; the event id keeps a retried callback's reply single.
    await deps.feishu.reply(c.feishu.messageId, text, c.feishu.eventId).catch((err: unknown) => deps.logger.warn('feishu reply failed', { error: err }));
  }
  return answer(platform, text);
}
