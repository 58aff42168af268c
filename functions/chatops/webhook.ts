/**
 * The chat webhook (HTTP API `POST /chat/{platform}`): verify (signature, freshness, replay) →
 * take the user, channel and text out of the platform's payload → run the command → answer in the
 * platform's shape. Anything unsigned, badly signed, stale or replayed is 401 with no detail (the
 * reason goes to the log). Feishu's URL verification is answered with its challenge.
 */
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import type { Logger } from '../lib/logger.ts';
import { CHAT_PLATFORMS, DINGTALK_WINDOW_MS, ReplayGuard, SLACK_WINDOW_S, verifyChatRequest, type ChatPlatform, type ChatSecrets } from './core/signature.ts';
import { runChatCommand, type ChatDeps, type ChatUser } from './run.ts';

const json = (statusCode: number, body: unknown): APIGatewayProxyStructuredResultV2 => ({ statusCode, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Who said what where, from the platform's (verified) body; undefined when it carries no command. */
export function commandOf(platform: ChatPlatform, body: string): { who: ChatUser; text: string } | { challenge: string } | undefined {
  if (platform === 'slack') {
    const f = new URLSearchParams(body);
    const user = f.get('user_id');
    if (!user) return undefined;
    return { who: { platform, id: user, ...(f.get('user_name') ? { name: f.get('user_name')! } : {}), channel: f.get('channel_id') ?? '' }, text: f.get('text') ?? '' };
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
    return { who: { platform, id, ...(typeof j.senderNick === 'string' ? { name: j.senderNick } : {}), channel: String(j.conversationId ?? '') }, text: String((j.text as { content?: unknown } | undefined)?.content ?? '') };
  }
  if (j.type === 'url_verification' && typeof j.challenge === 'string') return { challenge: j.challenge };
  const ev = j.event as { sender?: { sender_id?: { open_id?: string; user_id?: string } }; message?: { chat_id?: string; content?: string } } | undefined;
  const id = ev?.sender?.sender_id?.open_id ?? ev?.sender?.sender_id?.user_id;
  if (!id) return undefined;
  let text = '';
  try {
    text = String((JSON.parse(ev?.message?.content ?? '{}') as { text?: unknown }).text ?? '');
  } catch {
    text = '';
  }
  return { who: { platform, id, channel: ev?.message?.chat_id ?? '' }, text };
}

function answer(platform: ChatPlatform, text: string): APIGatewayProxyStructuredResultV2 {
  if (platform === 'slack') return json(200, { response_type: 'ephemeral', text });
  if (platform === 'dingtalk') return json(200, { msgtype: 'text', text: { content: text } });
  // Feishu answers a message through its API, not in the callback's response (not built): the
  // answer is in the ChatOps Command event.
  return json(200, {});
}

const guard = new ReplayGuard();

export async function handleChatRequest(deps: ChatDeps & { secrets: ChatSecrets; logger: Logger }, request: APIGatewayProxyEventV2, body: string): Promise<APIGatewayProxyStructuredResultV2> {
  const platform = (request.pathParameters?.platform ?? request.rawPath.split('/').pop() ?? '') as ChatPlatform;
  if (!CHAT_PLATFORMS.includes(platform)) return json(404, { error: 'unknown chat platform' });
  const headers = Object.fromEntries(Object.entries(request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
  const now = deps.clock.now();
  const v = verifyChatRequest(platform, { headers, body }, deps.secrets, now);
  if (!v.ok) {
    deps.logger.warn('chat request refused', { platform, reason: v.reason });
    return json(401, { error: 'unauthorized' });
  }
  if (!guard.accept(v.replayKey, now, platform === 'dingtalk' ? DINGTALK_WINDOW_MS : SLACK_WINDOW_S * 1000 * 2)) {
    deps.logger.warn('chat request refused', { platform, reason: 'replayed: this signed request was already accepted' });
    return json(401, { error: 'unauthorized' });
  }
  const c = commandOf(platform, v.body);
  if (!c) return json(200, {});
  if ('challenge' in c) return json(200, { challenge: c.challenge });
  const text = await runChatCommand(deps, c.who, c.text);
  return answer(platform, text);
}
