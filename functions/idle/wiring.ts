/**
 * idle-gpus' own configuration, from its environment:
 *   IDLE_POLICY_FILE  YAML/JSON (core/policy.ts): threshold, window, prices, per-pool and per-namespace
 *                     rules, eviction opt-in. Unset: the defaults (under 5% for 2 h; tell, never evict).
 * Dry-run is the shared wiring's: DRY_RUN=true wraps every port that acts (lib/wiring.ts).
 */
import { configFileFromEnv, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { DEFAULT_IDLE_POLICY, IdlePolicyError, parseIdlePolicy, type IdlePolicy } from './core/policy.ts';

export type IdleWiring = FunctionDeps<{ idlePolicy: IdlePolicy }>;

export function idlePolicyFromEnv(env: NodeJS.ProcessEnv): IdlePolicy {
  return configFileFromEnv(env, 'IDLE_POLICY_FILE', parseIdlePolicy, IdlePolicyError) ?? DEFAULT_IDLE_POLICY;
}

export function wireIdle(service: string, env: NodeJS.ProcessEnv = process.env): Promise<IdleWiring> {
  return wireFromEnv(service, (own) => ({ own: { idlePolicy: idlePolicyFromEnv(own) } }), env);
}
