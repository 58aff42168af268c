/**
 * Alibaba Cloud settings where the AccessKey is a secret kept out of the function's environment:
 * `ALIBABA_CLOUD_ACCESS_KEY_PARAMETER` names an SSM Parameter Store SecureString holding
 * `{"accessKeyId": "...", "accessKeySecret": "..."}` (optionally `"securityToken"`), read with the
 * function's own role at its first invocation (serverless.yml grants `ssm:GetParameter` on that one
 * parameter to the functions that reach the cloud). An AccessKey in the environment wins; without
 * either, Alibaba's default credential chain (RRSA inside ACK). Errors name the parameter and what
 * is wrong with it, never a value.
 */
import { ConfigurationError } from '../errors.ts';
import { aliCloudSettingsFromEnv, type AliCloudSettings } from './client.ts';

export const ACCESS_KEY_PARAMETER_ENV = 'ALIBABA_CLOUD_ACCESS_KEY_PARAMETER';

/** `aliCloudSettingsFromEnv`, with the AccessKey read from the parameter where one is named. */
export async function aliCloudSettingsWithSecret(
  env: NodeJS.ProcessEnv = process.env,
  read?: (parameter: string, label: string) => Promise<string>,
): Promise<AliCloudSettings> {
  const settings = aliCloudSettingsFromEnv(env);
  const parameter = env[ACCESS_KEY_PARAMETER_ENV];
  if (!parameter || settings.accessKeyId) return settings;
  const text = await (read ?? (await import('../ssm.ts')).readSecureString)(parameter, 'Alibaba Cloud AccessKey');
  const where = `${ACCESS_KEY_PARAMETER_ENV} (ssm:${parameter})`;
  let key: { accessKeyId?: unknown; accessKeySecret?: unknown; securityToken?: unknown };
  try {
    key = JSON.parse(text) as typeof key;
  } catch {
    throw new ConfigurationError(`${where} is not JSON: expected {"accessKeyId": "...", "accessKeySecret": "..."}`, {
      what: ACCESS_KEY_PARAMETER_ENV,
    });
  }
  const str = (v: unknown) => typeof v === 'string' && v.length > 0;
  if (typeof key !== 'object' || key === null || !str(key.accessKeyId) || !str(key.accessKeySecret))
    throw new ConfigurationError(
      `${where} must hold {"accessKeyId": "...", "accessKeySecret": "..."} ` +
        '(strings' +
        (typeof key === 'object' && key !== null ? `; has ${Object.keys(key).sort().join(', ') || 'nothing'}` : '') +
        ')',
      { what: ACCESS_KEY_PARAMETER_ENV },
    );
  if (key.securityToken !== undefined && !str(key.securityToken))
    throw new ConfigurationError(`${where}: securityToken must be a string`, { what: ACCESS_KEY_PARAMETER_ENV });
  return {
    ...settings,
    accessKeyId: key.accessKeyId as string,
    accessKeySecret: key.accessKeySecret as string,
    ...(str(key.securityToken) ? { securityToken: key.securityToken as string } : {}),
  };
}
