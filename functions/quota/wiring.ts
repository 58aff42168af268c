/**
 * The quota rewriter's own configuration, from its environment:
 *   QUOTA_CONFIG_FILE  YAML/JSON teams configuration (core/config.ts). Unset: no team is managed
 *                      (the function reads and changes nothing).
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../config.ts';
import { lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { parseQuotaConfig, QuotaConfigError, type QuotaConfig } from './core/config.ts';

/** `quotaConfig`: `config` is the shared wiring's (functions/config.ts). */
export type QuotaWiring = FunctionDeps<{ quotaConfig?: QuotaConfig }>;

export function quotaConfigFromEnv(env: NodeJS.ProcessEnv): QuotaConfig | undefined {
  const file = env['QUOTA_CONFIG_FILE'];
  if (!file) return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`bad configuration: QUOTA_CONFIG_FILE ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return parseQuotaConfig(text, file);
  } catch (err) {
    if (err instanceof QuotaConfigError) throw new ConfigError(`bad configuration: ${err.message}`);
    throw err;
  }
}

export function wireQuota(service: string, env: NodeJS.ProcessEnv = process.env): QuotaWiring {
  return wireFromEnv(service, () => {
    const config = quotaConfigFromEnv(env);
    return { own: config ? { quotaConfig: config } : {} };
  }, env);
}

export const lazyQuotaWiring = (service: string) => lazy((): QuotaWiring => wireQuota(service));
