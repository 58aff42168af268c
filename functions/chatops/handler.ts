/**
 * Lambda `chatops`: HTTP API `POST /chat/{platform}` (slack, dingtalk, feishu). Configuration:
 *   CHAT_SLACK_SIGNING_SECRET, CHAT_DINGTALK_APP_SECRET, CHAT_FEISHU_VERIFICATION_TOKEN,
 *   CHAT_FEISHU_ENCRYPT_KEY   the platforms' secrets (a platform without one refuses everything)
 *   CHATOPS_CONFIG_FILE       roles: who may do what (default: everyone a viewer)
 *   QUOTA_CONFIG_FILE         the rewriter's teams, for `quota show/plan/rollback` (optional)
 *   REMEDIATION_POLICY_FILE   remediation's policy, for `quarantine` (its `dryRun` is remediation's, not chat's)
 *   MIG_*                     the MIG rebalancer's settings, for `mig apply` (functions/mig/wiring.ts)
 *   AUTOSCALE_POLICY_FILE, ALIBABA_CLOUD_*, ACK_CLUSTER_ID   the autoscaler's pools and cloud, for `pool scale`
 */
import { rawHttpHandler } from '../lib/handler.ts';
import { configFileFromEnv, lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import type { QuotaConfig } from '../quota/core/config.ts';
import { quotaConfigFromEnv } from '../quota/wiring.ts';
import { migConfig } from '../mig/wiring.ts';
import type { MigRebalanceConfig } from '../mig/run.ts';
import type { Policy } from '../remediate/core/policy.ts';
import { remediationConfig } from '../remediate/wiring.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import { autoscalePolicyFromEnv } from '../autoscale/wiring.ts';
import type { PoolPorts } from './actions.ts';
import type { ChatSecrets } from './core/signature.ts';
import { ChatOpsConfigError, ChatOpsConfigSchema, parseChatOpsConfig, type ChatOpsConfig } from './run.ts';
import { handleChatRequest } from './webhook.ts';

export type ChatWiring = FunctionDeps<{ chat: ChatOpsConfig; secrets: ChatSecrets; quotaTeams?: QuotaConfig; policy: Policy; mig: MigRebalanceConfig; pools?: PoolPorts }>;

export async function wireChat(service: string, env: NodeJS.ProcessEnv = process.env): Promise<ChatWiring> {
  const base = await wireFromEnv(service, () => {
    const chat = configFileFromEnv(env, 'CHATOPS_CONFIG_FILE', parseChatOpsConfig, ChatOpsConfigError) ?? ChatOpsConfigSchema.parse({});
    const secrets: ChatSecrets = {
      ...(env['CHAT_SLACK_SIGNING_SECRET'] ? { slackSigningSecret: env['CHAT_SLACK_SIGNING_SECRET'] } : {}),
      ...(env['CHAT_DINGTALK_APP_SECRET'] ? { dingtalkAppSecret: env['CHAT_DINGTALK_APP_SECRET'] } : {}),
      ...(env['CHAT_FEISHU_VERIFICATION_TOKEN'] ? { feishuVerificationToken: env['CHAT_FEISHU_VERIFICATION_TOKEN'] } : {}),
      ...(env['CHAT_FEISHU_ENCRYPT_KEY'] ? { feishuEncryptKey: env['CHAT_FEISHU_ENCRYPT_KEY'] } : {}),
    };
    const quotaTeams = quotaConfigFromEnv(env);
    // The cores' own configuration, read as their functions read it; the ports they need with it.
    const remediation = remediationConfig(env);
    const mig = migConfig(env);
    return { own: { chat, secrets, ...(quotaTeams ? { quotaTeams } : {}), policy: remediation.own.policy, mig: mig.own.mig }, kube: { ...remediation.kube, ...mig.kube } };
  }, env);
  // `pool scale` reaches the cloud as autoscale-pools does, and only where its policy names pools;
  // the Alibaba client loads only then (cold start: docs/deploy.md).
  const autoscale = autoscalePolicyFromEnv(env);
  if (Object.keys(autoscale.pools).length === 0) return base;
  const { AliCloudPools, aliCloudSettingsFromEnv } = await import('../adapters/alicloud/client.ts');
  const real = new AliCloudPools(aliCloudSettingsFromEnv(env), base.clock);
  return { ...base, pools: { policy: autoscale, cloud: base.dryRun ? dryRunCloudPools(real, (a) => base.logger.info('dry run: would', { op: a.op, args: a.args })) : real } };
}

export function createChatHandler(getDeps: () => ChatWiring | Promise<ChatWiring>) {
  return rawHttpHandler({
    name: 'chatops',
    logger: async () => (await getDeps()).logger,
    async handle(body, { logger, request }) {
      const d = await getDeps();
      return handleChatRequest({ kube: d.kube, publisher: d.publisher, notifier: d.notifier, clock: d.clock, config: d.chat, secrets: d.secrets, logger, policy: d.policy, mig: d.mig, ...(d.quotaTeams ? { quota: d.quotaTeams } : {}), ...(d.pools ? { pools: d.pools } : {}) }, request, body);
    },
  });
}

export const handler = createChatHandler(lazy((): Promise<ChatWiring> => wireChat('chatops')));
