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
import { configFileFromEnv, lazy, wireBus, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
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
import { memoryReplayGuard, sharedReplayGuard, type ReplayCheck } from './replay.ts';
import type { ChatSecrets } from './core/signature.ts';
import { ChatOpsConfigError, ChatOpsConfigSchema, parseChatOpsConfig, type ChatOpsConfig } from './run.ts';
import { handleChatRequest, type AckDeps, type WebhookDeps } from './webhook.ts';
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

/**
 * What the webhook acknowledges on (webhook.ts AckDeps): the bus, the chat roles and secrets, where late
 * answers may go — no Kubernetes client, no kubeconfig fetch, no cores' policies, no cloud SDK. A
 * command handed to chatops-worker is answered on this alone, so a cold container meets Slack's 3 s;
 * the whole wiring (wireChat) loads only for a command answered in the callback.
 */
export async function wireChatAck(service: string, env: NodeJS.ProcessEnv = process.env): Promise<AckDeps> {
  const bus = await wireBus(service, ['CHATOPS_CONFIG_FILE'], env);
  const own = bus.configEnv;
  const config =
    configFileFromEnv(own, 'CHATOPS_CONFIG_FILE', parseChatOpsConfig, ChatOpsConfigError) ??
    ChatOpsConfigSchema.parse({});
  const { feishuAppSecret: appSecret, ...secrets } = await chatSecretsFromEnv(env);
  const appId = env['CHAT_FEISHU_APP_ID'];
  return {
    logger: bus.logger,
    clock: bus.clock,
    publisher: bus.publisher,
    config,
    secrets,
    responder: new HttpSlackResponder(own['CHAT_SLACK_RESPONSE_URL_PREFIX'] || undefined),
    dingtalk: new HttpDingTalkSessionResponder(own['CHAT_DINGTALK_SESSION_WEBHOOK_PREFIX'] || undefined),
    // This container's memory: chatops-worker checks the shared store before it runs anything (worker.ts).
    replay: memoryReplayGuard(),
    ...(appId && appSecret
      ? {
          feishu: new HttpFeishuReplier(
            { appId, appSecret, baseUrl: env['CHAT_FEISHU_API_URL'] || 'https://open.feishu.cn' },
            bus.clock,
          ),
        }
      : {}),
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

/**
 * `getAck`: what acknowledging needs (wireChatAck); without it the whole wiring serves both. The whole
 * wiring is loaded only when a command is answered in the callback (acknowledge first, then load).
 */
export function createChatHandler(
  getDeps: () => ChatWiring | Promise<ChatWiring>,
  getAck?: () => AckDeps | Promise<AckDeps>,
) {
  const ack = async (logger: Logger): Promise<AckDeps> =>
    getAck ? { ...(await getAck()), logger } : chatDeps(await getDeps(), logger);
  const chat = rawHttpHandler({
    name: 'chatops',
    logger: async () => (getAck ? await getAck() : await getDeps()).logger,
    async handle(body, { logger, request }) {
      return handleChatRequest(await ack(logger), request, body, async () => chatDeps(await getDeps(), logger));
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

export const handler = createChatHandler(
  lazy((): Promise<ChatWiring> => wireChat('chatops')),
  lazy((): Promise<AckDeps> => wireChatAck('chatops')),
);
