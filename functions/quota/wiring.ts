/**
 * The quota rewriter's own configuration, from its environment:
 *   QUOTA_CONFIG_FILE  YAML/JSON teams configuration (core/config.ts). Unset: no team is managed
 *                      (the function reads and changes nothing).
 */
import { configFileFromEnv, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { parseQuotaConfig, QuotaConfigError, type QuotaConfig } from './core/config.ts';

/** `quotaConfig`: `config` is the shared wiring's (functions/config.ts). */
export type QuotaWiring = FunctionDeps<{ quotaConfig?: QuotaConfig }>;

export function quotaConfigFromEnv(env: NodeJS.ProcessEnv): QuotaConfig | undefined {
  return configFileFromEnv(env, 'QUOTA_CONFIG_FILE', parseQuotaConfig, QuotaConfigError);
}

export function wireQuota(service: string, env: NodeJS.ProcessEnv = process.env): Promise<QuotaWiring> {
  return wireFromEnv(
    service,
    (own) => {
      const config = quotaConfigFromEnv(own);
      return { own: config ? { quotaConfig: config } : {} };
    },
    env,
  );
}
