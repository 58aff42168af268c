import type { DingTalkSessionResponder } from '../adapters/chat/dingtalk-session.ts';
import type { FeishuReplier } from '../adapters/chat/feishu-replier.ts';
import type { SlackResponder } from '../adapters/chat/slack-response.ts';
import type { Logger } from '../adapters/logger.ts';
import type { ChatSecrets } from './core/signature.ts';
import type { ReplayCheck } from './replay.ts';
import type { ChatDeps } from './run.ts';

/** What the chat webhook (webhook.ts) runs on. */
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

/**
 * What the webhook needs to verify a request and hand it to chatops-worker, and no more: no Kubernetes
 * client, no cores' policies (handler.ts wireChatAck). A command handed off is acknowledged on these
 * alone, within Slack's 3 s however cold the container; the rest loads only for what runs here.
 */
export type AckDeps = Pick<
  WebhookDeps,
  'secrets' | 'logger' | 'clock' | 'publisher' | 'config' | 'responder' | 'replay' | 'feishu' | 'dingtalk'
>;
