/**
 * chatops-worker's core: a long chat command the webhook answered at once ("working on it"),
 * carried out and answered where the platform takes a late answer: Slack's response_url, or a
 * reply to the Feishu message through its API, or the DingTalk conversation's sessionWebhook. It
 * believes the request only by the platform's own proof (the event carries the request byte for
 * byte): Slack's signature within the response_url's 30 minutes; Feishu's signature (with an
 * Encrypt Key, within the same 30 minutes) and verification token; DingTalk's sign (its hour) and,
 * as that does not cover the body, the webhook's MAC over it. An event on the bus cannot make it act for anyone the
 * platform did not vouch for, and it
 * acts once: the bus may deliver an event twice, so the replay guard (replay.ts, shared through the
 * state store) keeps each request. The command then runs as a typed one would (role, ChatOps
 * Command event, the same cores).
 */
import type { ChatOpsCommandRequestedDetail } from '../../events/index.ts';
import { dingtalkMacMatches, DINGTALK_WINDOW_MS, verifyDingTalk, verifyFeishu, verifySlack } from './core/signature.ts';
import { readSlackForm } from './core/slack-form.ts';
import { isLong, parseCommand } from './core/command.ts';
import { refusal, runChatCommand, type ChatUser } from './run.ts';
import { commandOf, type WebhookDeps } from './webhook.ts';

/** How long Slack takes posts at a response_url; a request older than this has no one to answer. */
export const RESPONSE_URL_WINDOW_S = 1800;
/**
 * How long a Feishu request left for the worker stays good: as long as the bus keeps it for chatops-worker
 * (serverless.yml).
 */
export const FEISHU_WORKER_WINDOW_S = 1800;

export type WorkerOutcome = { answered: string } | { refused: string };

/** A request the platform vouches for: who asked what, its replay key, and how to answer it. */
type Vouched = {
  who: ChatUser;
  text: string;
  key: string;
  windowS: number;
  answer: (text: string) => Promise<void>;
  /** Feishu: "working on it" before a long command (the webhook hands every Feishu command here). */
  ack?: (text: string) => Promise<void>;
};

function slackRequest(
  deps: WebhookDeps,
  detail: Extract<ChatOpsCommandRequestedDetail, { platform: 'slack' }>,
): Vouched | { refused: string } {
  const { timestamp, signature, body } = detail.request;
  const v = verifySlack(
    { headers: { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }, body },
    deps.secrets.slackSigningSecret,
    Math.floor(deps.clock.now() / 1000),
    RESPONSE_URL_WINDOW_S,
  );
  const said = v.ok ? readSlackForm(v.body) : undefined;
  if (!v.ok || !said?.responseUrl || said.button)
    return { refused: v.ok ? 'not a slash command with a response_url' : v.reason };
  const url = said.responseUrl;
  return {
    who: {
      platform: 'slack',
      id: said.user.id,
      ...(said.user.name ? { name: said.user.name } : {}),
      channel: said.channel,
    },
    text: said.text,
    key: `slack:${signature}`,
    windowS: RESPONSE_URL_WINDOW_S,
    answer: (text) => deps.responder.respond(url, { text }),
  };
}

function feishuRequest(
  deps: WebhookDeps,
  detail: Extract<ChatOpsCommandRequestedDetail, { platform: 'feishu' }>,
): Vouched | { refused: string } {
  const { timestamp, nonce, signature, body } = detail.request;
  const headers = {
    'x-lark-request-timestamp': timestamp,
    'x-lark-request-nonce': nonce,
    'x-lark-signature': signature,
  };
  const v = verifyFeishu({ headers, body }, deps.secrets, Math.floor(deps.clock.now() / 1000), FEISHU_WORKER_WINDOW_S);
  if (!v.ok) return { refused: v.reason };
  const c = commandOf('feishu', v.body);
  if (!c || 'challenge' in c || !c.feishu) return { refused: 'not a Feishu message with a command' };
  const feishu = deps.feishu;
  if (!feishu) return { refused: 'no Feishu app to answer with (CHAT_FEISHU_APP_ID, CHAT_FEISHU_APP_SECRET)' };
  const { messageId, eventId } = c.feishu;
  return {
    who: c.who,
    text: c.text,
    key: v.replayKey,
    windowS: FEISHU_WORKER_WINDOW_S,
    answer: (text) => feishu.reply(messageId, text, eventId),
    // Its own uuid: Feishu sends one message per uuid, and the answer takes the event id.
    ack: (text) => feishu.reply(messageId, text, eventId ? `${eventId}:ack` : undefined),
  };
}

function dingtalkRequest(
  deps: WebhookDeps,
  detail: Extract<ChatOpsCommandRequestedDetail, { platform: 'dingtalk' }>,
): Vouched | { refused: string } {
  const { timestamp, sign, body, mac } = detail.request;
  const now = deps.clock.now();
  const secret = deps.secrets.dingtalkAppSecret;
  const v = verifyDingTalk({ headers: { timestamp, sign }, body }, secret, now);
  if (!v.ok) return { refused: v.reason };
  // DingTalk's sign does not cover the body: the webhook's MAC does.
  if (!dingtalkMacMatches(secret!, timestamp, sign, body, mac))
    return { refused: 'bad MAC: the body is not the one the webhook verified' };
  const c = commandOf('dingtalk', v.body);
  if (!c || 'challenge' in c || !c.dingtalk) return { refused: 'not a DingTalk message with a sessionWebhook' };
  const session = deps.dingtalk;
  const { sessionWebhook, expiresAt } = c.dingtalk;
  if (!session?.reaches(sessionWebhook))
    return { refused: 'its sessionWebhook is not one this function posts to (CHAT_DINGTALK_SESSION_WEBHOOK_PREFIX)' };
  if (expiresAt !== undefined && expiresAt <= now)
    return { refused: `its sessionWebhook lapsed at ${new Date(expiresAt).toISOString()}` };
  return {
    who: c.who,
    text: c.text,
    key: v.replayKey,
    windowS: DINGTALK_WINDOW_MS / 1000,
    answer: (text) => session.say(sessionWebhook, text),
  };
}

export async function carryOutRequested(
  deps: WebhookDeps,
  detail: ChatOpsCommandRequestedDetail,
): Promise<WorkerOutcome> {
  const platform = detail.platform;
  const said =
    detail.platform === 'slack'
      ? slackRequest(deps, detail)
      : detail.platform === 'feishu'
        ? feishuRequest(deps, detail)
        : dingtalkRequest(deps, detail);
  if ('refused' in said) {
    deps.logger.warn('chat request refused', { platform, reason: said.refused });
    return said;
  }
  // The bus delivers at least once: a request is carried out once, whichever container gets it again.
  if (!(await deps.replay.accept(`worker:${said.key}`, deps.clock.now(), said.windowS * 1000))) {
    deps.logger.info('chat request already carried out by chatops-worker: not again', { platform });
    return { refused: 'already carried out' };
  }
  const parsed = said.ack ? parseCommand(said.text) : undefined;
  if (said.ack && parsed?.ok && isLong(parsed.command) && !refusal(deps.config, said.who, parsed.command))
    await said
      .ack(`working on it… (${parsed.words.join(' ')}): the answer follows here`)
      .catch((e: unknown) => deps.logger.warn(`${platform} answer failed`, { error: e }));
  let text: string;
  try {
    text = await runChatCommand(deps, said.who, said.text);
  } catch (err) {
    // Not retried (serverless.yml): the person hears it failed and may ask again.
    await said
      .answer(`failed: ${said.text}: ${(err as Error).message}`)
      .catch((e: unknown) => deps.logger.warn(`${platform} answer failed`, { error: e }));
    throw err;
  }
  await said.answer(text);
  return { answered: text };
}
