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
import { isLong, parseCommand } from './core/command.ts';
import {
  CHAT_PLATFORMS,
  DINGTALK_WINDOW_MS,
  FEISHU_RETRY_WINDOW_MS,
  SLACK_WINDOW_S,
  verifyChatRequest,
  type ChatPlatform,
} from './core/signature.ts';
import type { SlackSaid } from './core/slack-form.ts';
import { commandOf, malformedReason } from './chat-payload.ts';
import { feishuHandOff, handOffOf, handOffWords } from './hand-off.ts';
import { answer, json } from './http-answer.ts';
import { refusal, runChat, runChatCommand, type ChatUser } from './run.ts';
import type { AckDeps, WebhookDeps } from './webhook-deps.ts';

// Importable from here as before.
export { commandOf, malformedReason } from './chat-payload.ts';
export type { AckDeps, WebhookDeps } from './webhook-deps.ts';

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
