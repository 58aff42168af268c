/**
 * chatops-worker's core: a long Slack command the webhook answered "working on it" for, carried
 * out and answered at its response_url. It believes the request only by Slack's signature (the
 * event carries the request byte for byte), within the response_url's own 30 minutes: an event on
 * the bus cannot make it act for anyone Slack did not sign for, and once: the bus may deliver an
 * event twice, so the replay guard (replay.ts, shared through the state store) keeps each request's
 * signature. The command then runs as a typed one would (role, ChatOps Command event, the same cores).
 */
import type { ChatOpsCommandRequestedDetail } from '../../events/index.ts';
import { verifySlack } from './core/signature.ts';
import { readSlackForm } from './core/slack-form.ts';
import { runChatCommand } from './run.ts';
import type { WebhookDeps } from './webhook.ts';

/** How long Slack takes posts at a response_url; a request older than this has no one to answer. */
export const RESPONSE_URL_WINDOW_S = 1800;

export type WorkerOutcome = { answered: string } | { refused: string };

export async function carryOutRequested(deps: WebhookDeps, detail: ChatOpsCommandRequestedDetail): Promise<WorkerOutcome> {
  const { timestamp, signature, body } = detail.request;
  const v = verifySlack({ headers: { 'x-slack-request-timestamp': timestamp, 'x-slack-signature': signature }, body }, deps.secrets.slackSigningSecret, Math.floor(deps.clock.now() / 1000), RESPONSE_URL_WINDOW_S);
  const said = v.ok ? readSlackForm(v.body) : undefined;
  if (!v.ok || !said?.responseUrl || said.button) {
    const reason = v.ok ? 'not a slash command with a response_url' : v.reason;
    deps.logger.warn('chat request refused', { platform: 'slack', reason });
    return { refused: reason };
  }
  // The bus delivers at least once: a request is carried out once, whichever container gets it again.
  if (!(await deps.replay.accept(`worker:slack:${signature}`, deps.clock.now(), RESPONSE_URL_WINDOW_S * 1000))) {
    deps.logger.info('chat request already carried out by chatops-worker: not again', { platform: 'slack' });
    return { refused: 'already carried out' };
  }
  const who = { platform: 'slack' as const, id: said.user.id, ...(said.user.name ? { name: said.user.name } : {}), channel: said.channel };
  let text: string;
  try {
    text = await runChatCommand(deps, who, said.text);
  } catch (err) {
    // Not retried (serverless.yml): the person hears it failed and may ask again.
    await deps.responder.respond(said.responseUrl, { text: `failed: ${said.text}: ${(err as Error).message}` }).catch((e: unknown) => deps.logger.warn('slack response_url post failed', { error: e }));
    throw err;
  }
  await deps.responder.respond(said.responseUrl, { text });
  return { answered: text };
}
