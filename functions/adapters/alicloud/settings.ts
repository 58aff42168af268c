import { ConfigurationError } from '../errors.ts';

/** Where, and as whom, the Alibaba Cloud adapter (client.ts) calls ACK and ECS. */
export interface AliCloudSettings {
  regionId: string;
  clusterId: string;
  /** Access keys (optionally STS); absent: the default credential chain (RRSA's OIDC env vars, ECS RAM role…). */
  accessKeyId?: string;
  accessKeySecret?: string;
  securityToken?: string;
  /**
   * One endpoint for both products (the local simulator): `127.0.0.1:8443`. Default: `cs.<region>.aliyuncs.com`,
   * `ecs.<region>.aliyuncs.com`.
   */
  endpoint?: string;
  /** `https` (default) or `http` (loopback simulator only). */
  protocol?: 'http' | 'https';
  /** Calls per operation including the first (default 5). */
  maxAttempts?: number;
  /** First backoff in ms, doubled each retry, at most 8 s (default 250). */
  backoffMs?: number;
  readTimeoutMs?: number;
}

/** Reads settings from the environment the functions run in; a missing value is named. */
export function aliCloudSettingsFromEnv(env: NodeJS.ProcessEnv = process.env): AliCloudSettings {
  const need = (name: string): string => {
    const v = env[name];
    if (!v) throw new ConfigurationError(`${name} is not set (needed to reach Alibaba Cloud)`, { what: name });
    return v;
  };
  const protocol = env['ALIBABA_CLOUD_PROTOCOL'];
  if (protocol !== undefined && protocol !== 'http' && protocol !== 'https')
    throw new ConfigurationError(`ALIBABA_CLOUD_PROTOCOL must be http or https (got ${protocol})`, {
      what: 'ALIBABA_CLOUD_PROTOCOL',
    });
  return {
    regionId: need('ALIBABA_CLOUD_REGION_ID'),
    clusterId: need('ACK_CLUSTER_ID'),
    ...(env['ALIBABA_CLOUD_ACCESS_KEY_ID']
      ? { accessKeyId: env['ALIBABA_CLOUD_ACCESS_KEY_ID'], accessKeySecret: need('ALIBABA_CLOUD_ACCESS_KEY_SECRET') }
      : {}),
    ...(env['ALIBABA_CLOUD_SECURITY_TOKEN'] ? { securityToken: env['ALIBABA_CLOUD_SECURITY_TOKEN'] } : {}),
    ...(env['ALIBABA_CLOUD_ENDPOINT'] ? { endpoint: env['ALIBABA_CLOUD_ENDPOINT'] } : {}),
    ...(protocol ? { protocol } : {}),
  };
}
