/**
 * Lambda `chatops`: HTTP API `POST /chat/{platform}` (slack, dingtalk, feishu), and `GET /chat/healthz`
 * (health.ts: alive and configured, no secret said). Configuration:
 *   CHAT_SLACK_SIGNING_SECRET, CHAT_DINGTALK_APP_SECRET, CHAT_FEISHU_VERIFICATION_TOKEN,
 *   CHAT_FEISHU_ENCRYPT_KEY   the platforms' secrets (a platform without one refuses everything)
 *   CHAT_SECRETS_PARAMETER    or an SSM SecureString holding them as JSON (secrets.ts): what a deployment uses
 *   CHATOPS_CONFIG_FILE       roles: who may do what (default: everyone a viewer)
 *   QUOTA_CONFIG_FILE         the rewriter's teams, for `quota show/plan/rollback` (optional)
 *   REMEDIATION_POLICY_FILE   remediation's policy, for `quarantine` (its `dryRun` is remediation's, not chat's)
 *   MIG_*                     the MIG rebalancer's settings, for `mig apply` (functions/mig/wiring.ts)
 *   AUTOSCALE_POLICY_FILE, ALIBABA_CLOUD_*, ACK_CLUSTER_ID   the autoscaler's pools and cloud, for `pool scale`
 *   CHAT_SLACK_RESPONSE_URL_PREFIX   where a Slack response_url may point (default https://hooks.slack.com/)
 *   CHAT_DINGTALK_SESSION_WEBHOOK_PREFIX   where a DingTalk sessionWebhook may point, for long commands
 *                             (default https://oapi.dingtalk.com/robot/sendBySession)
 *   GPU_REFLEX_APPROVAL_KEY_PARAMETER  the SecureString that seals `approve`/`deny` of a remediation
 *                             (lib/approval-seal.ts; GPU_REFLEX_APPROVAL_KEY the key itself, locally)
 *   CHAT_FEISHU_APP_ID, CHAT_FEISHU_APP_SECRET, CHAT_FEISHU_API_URL   Feishu's message API, for replies
 *                             (default https://open.feishu.cn; Lark: https://open.larksuite.com)
 * chatops-worker (worker-handler.ts) is wired the same way: it runs the long commands.
 */
import { approvalKeyFromEnv, type ApprovalKey } from '../lib/approval-seal.ts';
import { rawHttpHandler } from '../lib/handler.ts';
import { chatSecretsFromEnv, chatSecretsInEnv } from './secrets.ts';
import { configFileFromEnv, lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import type { QuotaConfig } from '../quota/index.ts';
import { quotaConfigFromEnv } from '../quota/index.ts';
import { migConfig } from '../mig/index.ts';
import type { MigRebalanceConfig } from '../mig/index.ts';
import type { Policy } from '../remediate/index.ts';
import { remediationConfig } from '../remediate/index.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import { autoscalePolicyFromEnv } from '../lib/pool-policy.ts';
import { HttpDingTalkSessionResponder, type DingTalkSessionResponder } from '../adapters/chat/dingtalk-session.ts';
import { HttpFeishuReplier, type FeishuReplier } from '../adapters/chat/feishu-replier.ts';
import { HttpSlackResponder, type SlackResponder } from '../adapters/chat/slack-response.ts';
import type { Logger } from '../adapters/logger.ts';
import type { PoolPorts } from './actions.ts';
import { sharedReplayGuard, type ReplayCheck } from './replay.ts';
import type { ChatSecrets } from './core/signature.ts';
import { ChatOpsConfigError, ChatOpsConfigSchema, parseChatOpsConfig, type ChatOpsConfig } from './run.ts';
import { handleChatRequest, type WebhookDeps } from './webhook.ts';
import { chatHealth, isHealthRequest } from './health.ts';
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';

export type ChatWiring = FunctionDeps<{
  chat: ChatOpsConfig;
  secrets: ChatSecrets;
  quotaTeams?: QuotaConfig;
  policy: Policy;
  mig: MigRebalanceConfig;
  pools?: PoolPorts;
  responder: SlackResponder;
  dingtalk: DingTalkSessionResponder;
}> & { replay: ReplayCheck; feishu?: FeishuReplier; approvalKey?: () => Promise<ApprovalKey | undefined> };

export async function wireChat(service: string, env: NodeJS.ProcessEnv = process.env): Promise<ChatWiring> {
  const base = await wireFromEnv(
    service,
    // `own` is the environment with the policies kept in Parameter Store read in (lib/config-source.ts).
    (own) => {
      const chat =
        configFileFromEnv(own, 'CHATOPS_CONFIG_FILE', parseChatOpsConfig, ChatOpsConfigError) ??
        ChatOpsConfigSchema.parse({});
      // The environment's secrets here; the parameter's (CHAT_SECRETS_PARAMETER) join them below.
      const secrets: ChatSecrets = chatSecretsInEnv(own);
      const quotaTeams = quotaConfigFromEnv(own);
      // The cores' own configuration, read as their functions read it; the ports they need with it.
      const remediation = remediationConfig(own);
      const mig = migConfig(own);
      const responder = new HttpSlackResponder(own['CHAT_SLACK_RESPONSE_URL_PREFIX'] || undefined);
      const dingtalk = new HttpDingTalkSessionResponder(own['CHAT_DINGTALK_SESSION_WEBHOOK_PREFIX'] || undefined);
      return {
        own: {
          chat,
          secrets,
          ...(quotaTeams ? { quotaTeams } : {}),
          policy: remediation.own.policy,
          mig: mig.own.mig,
          responder,
          dingtalk,
        },
        kube: { ...remediation.kube, ...mig.kube },
      };
    },
    env,
  );
  const { feishuAppSecret: appSecret, ...secrets } = await chatSecretsFromEnv(env);
  const appId = env['CHAT_FEISHU_APP_ID'];
  const feishu =
    appId && appSecret
      ? new HttpFeishuReplier(
          { appId, appSecret, baseUrl: env['CHAT_FEISHU_API_URL'] || 'https://open.feishu.cn' },
          base.clock,
        )
      : undefined;
  // Once per container: its memory of accepted requests, over the store every container shares.
  // The approval key is read when an approve first needs it: chatops-worker never does, and its role may not.
  const approvalKey = lazy(() => approvalKeyFromEnv(env));
  const wired = {
    ...base,
    secrets,
    replay: sharedReplayGuard(base.kube.state),
    approvalKey,
    ...(feishu ? { feishu } : {}),
  };
  // `pool scale` reaches the cloud as autoscale-pools does, and only where its policy names pools;
  // the Alibaba client loads only then (cold start: docs/deploy.md).
  const autoscale = autoscalePolicyFromEnv(env);
  if (Object.keys(autoscale.pools).length === 0) return wired;
  const { AliCloudPools } = await import('../adapters/alicloud/client.ts');
  const { aliCloudSettingsWithSecret } = await import('../adapters/alicloud/access-key.ts');
  const real = new AliCloudPools(await aliCloudSettingsWithSecret(env), base.clock);
  return {
    ...wired,
    pools: {
      policy: autoscale,
      cloud: base.dryRun
        ? dryRunCloudPools(real, (a) => base.logger.info('dry run: would', { op: a.op, args: a.args }))
        : real,
    },
  };
}

/** What the webhook and the worker run on, from the wiring. */
export function chatDeps(d: ChatWiring, logger: Logger): WebhookDeps {
  return {
    kube: d.kube,
    publisher: d.publisher,
    notifier: d.notifier,
    clock: d.clock,
    config: d.chat,
    secrets: d.secrets,
    logger,
    policy: d.policy,
    mig: d.mig,
    responder: d.responder,
    dingtalk: d.dingtalk,
    replay: d.replay,
    ...(d.approvalKey ? { approvalKey: d.approvalKey } : {}),
    ...(d.feishu ? { feishu: d.feishu } : {}),
    ...(d.quotaTeams ? { quota: d.quotaTeams } : {}),
    ...(d.pools ? { pools: d.pools } : {}),
  };
}

export function createChatHandler(getDeps: () => ChatWiring | Promise<ChatWiring>) {
  const chat = rawHttpHandler({
    name: 'chatops',
    logger: async () => (await getDeps()).logger,
    async handle(body, { logger, request }) {
      return handleChatRequest(chatDeps(await getDeps(), logger), request, body);
    },
  });
  // `GET /chat/healthz` (health.ts) answers before the chat path: it must answer even when the wiring
  // fails, which the chat path's logger middleware cannot.
  // The route is `ANY /chat/{platform}` (serverless.yml): the platforms only ever POST.
  return async (request: APIGatewayProxyEventV2, context: Context) => {
    if (isHealthRequest(request)) return chatHealth(getDeps);
    const method = request.requestContext?.http?.method ?? 'POST';
    if (method !== 'POST')
      return { statusCode: 405, headers: { allow: 'POST' }, body: `${method} not allowed: the platforms POST here` };
    return chat(request, context);
  };
}

export const handler = createChatHandler(lazy((): Promise<ChatWiring> => wireChat('chatops')));
