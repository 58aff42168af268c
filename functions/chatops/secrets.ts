/**
 * The chat platforms' secrets, kept out of the function's environment: `CHAT_SECRETS_PARAMETER`
 * names an SSM Parameter Store SecureString holding JSON
 *   {"slackSigningSecret": "…", "dingtalkAppSecret": "…", "feishuVerificationToken": "…",
 *    "feishuEncryptKey": "…", "feishuAppSecret": "…"}   (each optional)
 * read with the function's own role at its first invocation (serverless.yml grants
 * ssm:GetParameter on it to chatops and chatops-worker alone). A secret set in the environment
 * (CHAT_SLACK_SIGNING_SECRET, …: a laptop, the embedded stack) wins over the parameter's. Errors
 * name the parameter and the field, never a value.
 */
import { ConfigurationError } from '../adapters/errors.ts';
import type { ChatSecrets } from './core/signature.ts';

export const CHAT_SECRETS_PARAMETER_ENV = 'CHAT_SECRETS_PARAMETER';

/** The environment variable of each secret, and its field in the parameter. */
const FIELDS = {
  slackSigningSecret: 'CHAT_SLACK_SIGNING_SECRET',
  dingtalkAppSecret: 'CHAT_DINGTALK_APP_SECRET',
  feishuVerificationToken: 'CHAT_FEISHU_VERIFICATION_TOKEN',
  feishuEncryptKey: 'CHAT_FEISHU_ENCRYPT_KEY',
  feishuAppSecret: 'CHAT_FEISHU_APP_SECRET',
} as const;

export type ChatSecretsWithApp = ChatSecrets & { feishuAppSecret?: string };

/** The secrets the environment sets. */
export function chatSecretsInEnv(env: NodeJS.ProcessEnv): ChatSecretsWithApp {
  return Object.fromEntries(
    Object.entries(FIELDS).flatMap(([field, variable]) => (env[variable] ? [[field, env[variable]]] : [])),
  ) as ChatSecretsWithApp;
}

/** The environment's secrets, then the parameter's for those it does not set. */
export async function chatSecretsFromEnv(
  env: NodeJS.ProcessEnv,
  read?: (parameter: string, label: string) => Promise<string>,
): Promise<ChatSecretsWithApp> {
  const own = chatSecretsInEnv(env);
  const parameter = env[CHAT_SECRETS_PARAMETER_ENV];
  if (!parameter) return own;
  const where = `${CHAT_SECRETS_PARAMETER_ENV} (ssm:${parameter})`;
  const text = await (read ?? (await import('../adapters/ssm.ts')).readSecureString)(parameter, 'chat secrets');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ConfigurationError(`${where} is not JSON: expected {"slackSigningSecret": "…", …}`, {
      what: CHAT_SECRETS_PARAMETER_ENV,
    });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new ConfigurationError(`${where}: expected a JSON object of secrets`, { what: CHAT_SECRETS_PARAMETER_ENV });
  const unknown = Object.keys(json).filter((k) => !(k in FIELDS));
  if (unknown.length > 0)
    throw new ConfigurationError(
      `${where}: unknown field(s) ${unknown.join(', ')} (known: ${Object.keys(FIELDS).join(', ')})`,
      { what: CHAT_SECRETS_PARAMETER_ENV },
    );
  const bad = Object.entries(json)
    .filter(([, v]) => typeof v !== 'string' || v === '')
    .map(([k]) => k);
  if (bad.length > 0)
    throw new ConfigurationError(`${where}: ${bad.join(', ')}: must be a non-empty string`, {
      what: CHAT_SECRETS_PARAMETER_ENV,
    });
  return { ...(json as ChatSecretsWithApp), ...own };
}
