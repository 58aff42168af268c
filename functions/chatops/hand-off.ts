import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { createHash } from 'node:crypto';
import {
  CHATOPS_COMMAND_REQUESTED,
  SCHEMA_VERSION,
  SOURCES,
  type ChatOpsCommandRequestedDetail,
} from '../../events/index.ts';
import type { FeishuReplier } from '../adapters/chat/feishu-replier.ts';
import type { Said } from './chat-payload.ts';
import { isLong, parseCommand } from './core/command.ts';
import { dingtalkRequestMac } from './core/signature.ts';
import { json } from './http-answer.ts';
import { refusal } from './run.ts';
import type { AckDeps } from './webhook-deps.ts';

// A long command handed to chatops-worker on the bus (ChatOps Command Requested), as the platform
// signed it, and what the webhook says meanwhile (webhook.ts).
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
export async function handOffWords(
  deps: AckDeps,
  detail: ChatOpsCommandRequestedDetail,
  words: string[],
): Promise<string> {
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
export async function feishuHandOff(
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

/** Where a verified command goes to chatops-worker: the request for it, and what to say. */
type HandOff = { later: ChatOpsCommandRequestedDetail; words: string[]; feishu?: Said['feishu'] & object };

/**
 * Whether the worker takes this command: every Feishu command where the app can answer (feishuHandOff);
 * elsewhere a long one the person may run, where the platform takes a late answer that this deployment
 * may post. Undefined: it is answered here (quick ones, refusals, usage errors, an unreachable response_url).
 */
export function handOffOf(
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
