/**
 * Lambda `chatops`: HTTP API `POST /chat/{platform}` (slack, dingtalk, feishu). Configuration:
 *   CHAT_SLACK_SIGNING_SECRET, CHAT_DINGTALK_APP_SECRET, CHAT_FEISHU_VERIFICATION_TOKEN,
 *   CHAT_FEISHU_ENCRYPT_KEY   the platforms' secrets (a platform without one refuses everything)
 *   CHATOPS_CONFIG_FILE       roles: who may do what (default: everyone a viewer)
 *   QUOTA_CONFIG_FILE         the rewriter's teams, for `quota plan` (optional)
 */
import { rawHttpHandler } from '../lib/handler.ts';
import { configFileFromEnv, lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import type { QuotaConfig } from '../quota/core/config.ts';
import { quotaConfigFromEnv } from '../quota/wiring.ts';
import type { ChatSecrets } from './core/signature.ts';
import { ChatOpsConfigError, ChatOpsConfigSchema, parseChatOpsConfig, type ChatOpsConfig } from './run.ts';
import { handleChatRequest } from './webhook.ts';

export type ChatWiring = FunctionDeps<{ chat: ChatOpsConfig; secrets: ChatSecrets; quotaTeams?: QuotaConfig }>;

export function wireChat(service: string, env: NodeJS.ProcessEnv = process.env): Promise<ChatWiring> {
  return wireFromEnv(service, () => {
    const chat = configFileFromEnv(env, 'CHATOPS_CONFIG_FILE', parseChatOpsConfig, ChatOpsConfigError) ?? ChatOpsConfigSchema.parse({});
    const secrets: ChatSecrets = {
      ...(env['CHAT_SLACK_SIGNING_SECRET'] ? { slackSigningSecret: env['CHAT_SLACK_SIGNING_SECRET'] } : {}),
      ...(env['CHAT_DINGTALK_APP_SECRET'] ? { dingtalkAppSecret: env['CHAT_DINGTALK_APP_SECRET'] } : {}),
      ...(env['CHAT_FEISHU_VERIFICATION_TOKEN'] ? { feishuVerificationToken: env['CHAT_FEISHU_VERIFICATION_TOKEN'] } : {}),
      ...(env['CHAT_FEISHU_ENCRYPT_KEY'] ? { feishuEncryptKey: env['CHAT_FEISHU_ENCRYPT_KEY'] } : {}),
    };
    const quotaTeams = quotaConfigFromEnv(env);
    return { own: { chat, secrets, ...(quotaTeams ? { quotaTeams } : {}) } };
  }, env);
}

export function createChatHandler(getDeps: () => ChatWiring | Promise<ChatWiring>) {
  return rawHttpHandler({
    name: 'chatops',
    logger: async () => (await getDeps()).logger,
    async handle(body, { logger, request }) {
      const d = await getDeps();
      return handleChatRequest({ kube: d.kube, publisher: d.publisher, clock: d.clock, config: d.chat, secrets: d.secrets, logger, ...(d.quotaTeams ? { quota: d.quotaTeams } : {}) }, request, body);
    },
  });
}

export const handler = createChatHandler(lazy((): Promise<ChatWiring> => wireChat('chatops')));
