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
import {
  CHATOPS_COMMAND_REQUESTED,
  SCHEMA_VERSION,
  SOURCES,
  type ChatOpsCommandRequestedDetail,
} from '../../events/index.ts';
import { createHash } from 'node:crypto';
import type { DingTalkSessionResponder } from '../adapters/chat/dingtalk-session.ts';
import type { FeishuReplier } from '../adapters/chat/feishu-replier.ts';
import type { SlackResponder } from '../adapters/chat/slack-response.ts';
import type { Logger } from '../adapters/logger.ts';
import { isLong, parseCommand } from './core/command.ts';
import {
  CHAT_PLATFORMS,
  dingtalkRequestMac,
  DINGTALK_WINDOW_MS,
  FEISHU_RETRY_WINDOW_MS,
  SLACK_WINDOW_S,
  verifyChatRequest,
  type ChatPlatform,
  type ChatSecrets,
} from './core/signature.ts';
import { readSlackForm, type SlackSaid } from './core/slack-form.ts';
import type { ReplayCheck } from './replay.ts';
import { refusal, runChat, runChatCommand, type ChatDeps, type ChatUser } from './run.ts';

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

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

function answer(platform: ChatPlatform, text: string): APIGatewayProxyStructuredResultV2 {
  if (platform === 'slack') return json(200, { response_type: 'ephemeral', text });
  if (platform === 'dingtalk') return json(200, { msgtype: 'text', text: { content: text } });
  // Feishu takes only a 200 here; with its app configured the answer goes through its message API
  // (feishuHandOff), without it only into the ChatOps Command event.
  return json(200, {});
}

export type WebhookDeps = ChatDeps & {
  secrets: ChatSecrets;
  logger: Logger;
  responder: SlackResponder;
  /** One per container (replay.ts). */
  replay: ReplayCheck;
  /**
   * Feishu's message API, where the app's id and secret are configured; without it the answer is only in the ChatOps
   * Command event.
   */
  feishu?: FeishuReplier;
  /** Where a DingTalk conversation takes a late answer; without it long DingTalk commands run in the callback. */
  dingtalk?: DingTalkSessionResponder;
};

/** A button press: the command it stands for, then the message it was on rewritten to say who decided. */
async function pressButton(
  deps: WebhookDeps,
  who: ChatUser,
  said: SlackSaid,
): Promise<APIGatewayProxyStructuredResultV2> {
  const out = await runChat(deps, who, said.text);
  if (said.responseUrl) {
    // Decided: the request's message now says so, buttons gone. Not decided (refused, already
    // decided, expired): only the presser is told why, and the buttons stay for whoever may.
    const message = out.decided
      ? {
          text:
            `${out.decided.decision === 'approved' ? '✅' : '⛔'} ${out.decided.id} ${out.decided.decision} by ` +
            `<@${who.id}>: ${out.answer}`,
          replaceOriginal: true,
          responseType: 'in_channel' as const,
        }
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

type Said = Exclude<ReturnType<typeof commandOf>, { challenge: string } | undefined>;

/**
 * The request as chatops-worker will believe it, where the platform takes a late answer: Slack's
 * signed form (its response_url), Feishu's raw body and signature headers (a reply through the
 * message API), DingTalk's timestamp and sign with the webhook's MAC over the body, which they do
 * not cover (a sessionWebhook under the allowed prefix, not lapsed). Undefined: nowhere to answer
 * later, so the command runs here.
 */
function laterRequest(
  deps: AckDeps,
  c: Said,
  headers: Record<string, string | undefined>,
  body: string,
  now: number,
): ChatOpsCommandRequestedDetail | undefined {
  const base = { schemaVersion: SCHEMA_VERSION, occurredAt: new Date(now).toISOString() } as const;
  if (c.slack?.responseUrl) {
    const signature = headers['x-slack-signature']!;
    return {
      ...base,
      eventId: `chat-request:slack:${signature.slice(3, 35)}`,
      platform: 'slack',
      request: { timestamp: headers['x-slack-request-timestamp']!, signature, body },
    };
  }
  if (c.feishu && deps.feishu) {
    const [timestamp, nonce, signature] = [
      headers['x-lark-request-timestamp'],
      headers['x-lark-request-nonce'],
      headers['x-lark-signature'],
    ];
    const eventId = `chat-request:feishu:${c.feishu.eventId ?? c.feishu.messageId}`
      .replace(/[^A-Za-z0-9._:-]/g, '-')
      .slice(0, 128);
    return {
      ...base,
      eventId,
      platform: 'feishu',
      request: {
        ...(timestamp ? { timestamp } : {}),
        ...(nonce ? { nonce } : {}),
        ...(signature ? { signature } : {}),
        body,
      },
    };
  }
  if (c.dingtalk && deps.dingtalk?.reaches(c.dingtalk.sessionWebhook) && (c.dingtalk.expiresAt ?? Infinity) > now) {
    const [timestamp, sign] = [headers['timestamp']!, headers['sign']!];
    const eventId =
      'chat-request:dingtalk:' + createHash('sha256').update(`${timestamp}\n${sign}`).digest('hex').slice(0, 32);
    return {
      ...base,
      eventId,
      platform: 'dingtalk',
      request: {
        timestamp,
        sign,
        body,
        mac: dingtalkRequestMac(deps.secrets.dingtalkAppSecret!, timestamp, sign, body),
      },
    };
  }
  return undefined;
}

/**
 * A long command left for chatops-worker: "working on it", or, when the bus refuses it, that
 * nothing was done (the person may ask again; a Feishu re-send of the event is acknowledged, not run).
 */
async function handOffWords(deps: AckDeps, detail: ChatOpsCommandRequestedDetail, words: string[]): Promise<string> {
  try {
    await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND_REQUESTED, detail }]);
    return `working on it… (${words.join(' ')}): the answer follows here`;
  } catch (err) {
    deps.logger.error('chat request not handed to chatops-worker', { platform: detail.platform, error: err });
    return (
      `failed: ${words.join(' ')}: could not hand it to chatops-worker (${(err as Error).message}); nothing was ` +
      `done, ask again`
    );
  }
}

/**
 * Feishu answers only through its message API, never in the callback's response, and re-sends an event
 * it got no 200 for within 3 s (open.feishu.cn event subscription docs: "respond with HTTP 200 within 3
 * seconds"). So every Feishu command, quick or long, goes to chatops-worker and the callback is
 * acknowledged at once: a slow Feishu API (the token fetch, the reply) never holds the acknowledgement.
 * Only when the bus refuses the hand-off does the webhook itself reply, to say nothing was done.
 */
async function feishuHandOff(
  deps: AckDeps,
  feishu: FeishuReplier,
  said: { messageId: string; eventId?: string },
  later: ChatOpsCommandRequestedDetail,
  text: string,
): Promise<APIGatewayProxyStructuredResultV2> {
  try {
    await deps.publisher.publish([{ source: SOURCES.chatops, detailType: CHATOPS_COMMAND_REQUESTED, detail: later }]);
  } catch (err) {
    deps.logger.error('chat request not handed to chatops-worker', { platform: 'feishu', error: err });
    const why = (err as Error).message;
    const parsed = parseCommand(text);
    const asked = parsed.ok ? parsed.words.join(' ') : text.trim();
    const words = `failed: ${asked}: could not hand it to chatops-worker (${why}); nothing was done, ask again`;
    await feishu
      .reply(said.messageId, words, said.eventId ? `${said.eventId}:ack` : undefined)
      .catch((e: unknown) => deps.logger.warn('feishu reply failed', { error: e }));
  }
  return json(200, {});
}

/**
 * What the webhook needs to verify a request and hand it to chatops-worker, and no more: no Kubernetes
 * client, no cores' policies (handler.ts wireChatAck). A command handed off is acknowledged on these
 * alone, within Slack's 3 s however cold the container; the rest loads only for what runs here.
 */
export type AckDeps = Pick<
  WebhookDeps,
  'secrets' | 'logger' | 'clock' | 'publisher' | 'config' | 'responder' | 'replay' | 'feishu' | 'dingtalk'
>;

/** Where a verified command goes to chatops-worker: the request for it, and what to say. */
type HandOff = { later: ChatOpsCommandRequestedDetail; words: string[]; feishu?: Said['feishu'] & object };

/**
 * Whether the worker takes this command: every Feishu command where the app can answer (feishuHandOff);
 * elsewhere a long one the person may run, where the platform takes a late answer that this deployment
 * may post. Undefined: it is answered here (quick ones, refusals, usage errors, an unreachable response_url).
 */
function handOffOf(
  deps: AckDeps,
  c: Said,
  headers: Record<string, string | undefined>,
  body: string,
  now: number,
): HandOff | undefined {
  if (c.slack?.button) return undefined;
  const later = laterRequest(deps, c, headers, body, now);
  if (!later) return undefined;
  if (c.feishu && deps.feishu) return { later, words: [], feishu: c.feishu };
  const parsed = parseCommand(c.text);
  const long = parsed.ok && isLong(parsed.command) && !refusal(deps.config, c.who, parsed.command);
  // A long Slack command whose response_url this function will not post to is answered here, in words.
  if (!long || (c.slack?.responseUrl && !deps.responder.reaches(c.slack.responseUrl))) return undefined;
  return { later, words: parsed.words };
}

/**
 * `deps`: enough to acknowledge (AckDeps); `full`: the whole wiring, loaded only when the command is
 * answered here (default: `deps` is it). A handed-off request's replay is checked by the container's
 * memory here and by the shared store in chatops-worker (worker.ts), which runs nothing twice; one
 * answered here is checked against the shared store first, as before.
 */
export async function handleChatRequest(
  deps: AckDeps | WebhookDeps,
  request: APIGatewayProxyEventV2,
  body: string,
  full: () => Promise<WebhookDeps> = async () => deps as WebhookDeps,
): Promise<APIGatewayProxyStructuredResultV2> {
  const platform = (request.pathParameters?.platform ?? request.rawPath.split('/').pop() ?? '') as ChatPlatform;
  if (!CHAT_PLATFORMS.includes(platform)) return json(404, { error: 'unknown chat platform' });
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const now = deps.clock.now();
  const v = verifyChatRequest(platform, { headers, body }, deps.secrets, now);
  if (!v.ok) {
    deps.logger.warn('chat request refused', { platform, reason: v.reason });
    return json(401, { error: 'unauthorized' });
  }
  const c = commandOf(platform, v.body);
  const handOff = c && !('challenge' in c) ? handOffOf(deps, c, headers, body, now) : undefined;
  const d = handOff ? deps : await full();
  const window =
    platform === 'dingtalk'
      ? DINGTALK_WINDOW_MS
      : platform === 'feishu'
        ? FEISHU_RETRY_WINDOW_MS
        : SLACK_WINDOW_S * 1000 * 2;
  if (!(await d.replay.accept(v.replayKey, now, window))) {
    // Feishu re-sends what it got no 200 for (a slow answer included): the event was handled, so
    // it is acknowledged, and nothing runs twice. Elsewhere a replay is a forgery until shown otherwise.
    if (platform === 'feishu') {
      deps.logger.info('feishu event already handled: acknowledged, not run again', { key: v.replayKey });
      return json(200, {});
    }
    deps.logger.warn('chat request refused', {
      platform,
      reason: 'replayed: this signed request was already accepted',
    });
    return json(401, { error: 'unauthorized' });
  }
  if (!c) {
    const reason = malformedReason(platform, v.body);
    if (!reason) return json(200, {});
    deps.logger.warn('chat request malformed', { platform, reason });
    return json(400, { error: 'bad request', reason });
  }
  if ('challenge' in c) return json(200, { challenge: c.challenge });
  if (handOff?.feishu) return feishuHandOff(deps, deps.feishu!, handOff.feishu, handOff.later, c.text);
  if (handOff) return answer(platform, await handOffWords(deps, handOff.later, handOff.words));
  const here = d as WebhookDeps;
  if (c.slack?.button) return pressButton(here, c.who, c.slack);
  // Quick commands, refusals and usage errors are answered here, as the synchronous path words them;
  // a long Slack command whose response_url this function will not post to (not under
  // CHAT_SLACK_RESPONSE_URL_PREFIX) would run with nobody ever told how it went: refused, in words.
  const parsed = c.slack ? parseCommand(c.text) : undefined;
  const unreachable =
    parsed?.ok &&
    isLong(parsed.command) &&
    !refusal(here.config, c.who, parsed.command) &&
    c.slack?.responseUrl &&
    !here.responder.reaches(c.slack.responseUrl);
  const text = unreachable
    ? `not run: ${parsed.words.join(' ')} takes longer than Slack waits, ` +
      `and its answer could not follow: the ` +
      `request's response_url is not one this deployment posts to (CHAT_SLACK_RESPONSE_URL_PREFIX); nothing done`
    : await runChatCommand(here, c.who, c.text);
  return answer(platform, text);
}
