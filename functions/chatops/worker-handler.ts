/**
 * Lambda `chatops-worker`: `ChatOps Command Requested` from the bus (events/patterns/chatops-worker.json),
 * a long Slack, Feishu or DingTalk command the webhook answered at once; carried out and answered
 * at the response_url, as a reply to the Feishu message, or at the DingTalk sessionWebhook.
 * Configured exactly as `chatops` (handler.ts).
 */
import type { ChatOpsCommandRequestedDetail } from '../../events/index.ts';
import { CHATOPS_COMMAND_REQUESTED } from '../../events/index.ts';
import { eventHandler } from '../lib/handler.ts';
import { lazy } from '../lib/wiring.ts';
import { chatDeps, wireChat, type ChatWiring } from './handler.ts';
import { carryOutRequested } from './worker.ts';

export function createChatWorkerHandler(getDeps: () => ChatWiring | Promise<ChatWiring>) {
  return eventHandler<ChatOpsCommandRequestedDetail>({
    name: 'chatops-worker',
    detailTypes: [CHATOPS_COMMAND_REQUESTED],
    logger: async () => (await getDeps()).logger,
    handle: async (event, { logger }) => carryOutRequested(chatDeps(await getDeps(), logger), event.detail),
  });
}

export const handler = createChatWorkerHandler(lazy((): Promise<ChatWiring> => wireChat('chatops-worker')));
