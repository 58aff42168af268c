/**
 * The MIG rebalancer's own configuration, from its environment:
 *   MIG_PARTED_CONFIGMAP     namespace/name of gpu-reflex's own mig-parted config, the one the
 *                            ClusterPolicy's spec.migManager.config.name names (default
 *                            gpu-operator/gpu-reflex-mig-parted-config; the GPU Operator's
 *                            default-mig-parted-config is refused: core/parted-owner.ts),
 *                            MIG_PARTED_KEY its key (default config.yaml)
 *   MIG_CONFIG_SYNC_SECONDS  wait between writing the config and setting the label (default 90:
 *                            the kubelet takes up to a minute to show a ConfigMap's change)
 *   MIG_TIMEOUT_MINUTES      mig-manager must report success within this (default 20)
 *   MIG_MAX_NODES_AT_ONCE    nodes under reconfiguration at once (default 1)
 *   MIG_MIN_PENDING_SECONDS  a pending pod counts as demand once it waited this long (default 60)
 *   MIG_POLICY_FILE          YAML/JSON (core/policy.ts): preemption of lower-priority instances
 *                            (default: off)
 */
import * as z from 'zod';
import { DEFAULT_MIG_PARTED_CONFIG } from '../adapters/kube/index.ts';
import { ConfigError } from '../config.ts';
import { configFileFromEnv, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { partedConfigRefusal } from './core/parted-owner.ts';
import { DEFAULT_MIG_POLICY, MigPolicyError, parseMigPolicy } from './core/policy.ts';
import { DEFAULT_MIG_REBALANCE_CONFIG, type MigRebalanceConfig } from './run.ts';

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const MigEnvSchema = z.object({
  MIG_PARTED_CONFIGMAP: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'expected namespace/name')
    .optional(),
  MIG_PARTED_KEY: z
    .string()
    .regex(/^[-._a-zA-Z0-9]{1,253}$/, 'expected a ConfigMap key')
    .optional(),
  MIG_CONFIG_SYNC_SECONDS: int(0, 3600).optional(),
  MIG_TIMEOUT_MINUTES: int(1, 1440).optional(),
  MIG_MAX_NODES_AT_ONCE: int(1, 1000).optional(),
  MIG_MIN_PENDING_SECONDS: int(0, 86_400).optional(),
  MIG_POLICY_FILE: z.string().optional(),
});

export type MigWiring = FunctionDeps<{ mig: MigRebalanceConfig }>;

export function migConfig(env: NodeJS.ProcessEnv) {
  const r = MigEnvSchema.safeParse(env);
  if (!r.success)
    throw new ConfigError(
      `bad configuration: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const e = r.data;
  const [namespace, name] = (
    e.MIG_PARTED_CONFIGMAP ?? `${DEFAULT_MIG_PARTED_CONFIG.namespace}/${DEFAULT_MIG_PARTED_CONFIG.name}`
  ).split('/') as [string, string];
  // Refused at cold start, saying what to set: the operator's own ConfigMap loses our entries.
  const refusal = partedConfigRefusal({ namespace, name }, undefined);
  if (refusal) throw new ConfigError(`bad configuration: MIG_PARTED_CONFIGMAP: ${refusal}`);
  const mig: MigRebalanceConfig = {
    configSyncSeconds: e.MIG_CONFIG_SYNC_SECONDS ?? DEFAULT_MIG_REBALANCE_CONFIG.configSyncSeconds,
    timeoutMinutes: e.MIG_TIMEOUT_MINUTES ?? DEFAULT_MIG_REBALANCE_CONFIG.timeoutMinutes,
    maxNodesAtOnce: e.MIG_MAX_NODES_AT_ONCE ?? DEFAULT_MIG_REBALANCE_CONFIG.maxNodesAtOnce,
    minPendingSeconds: e.MIG_MIN_PENDING_SECONDS ?? DEFAULT_MIG_REBALANCE_CONFIG.minPendingSeconds,
    preemption: (configFileFromEnv(env, 'MIG_POLICY_FILE', parseMigPolicy, MigPolicyError) ?? DEFAULT_MIG_POLICY)
      .preemption,
  };
  return {
    own: { mig },
    kube: { migParted: { namespace, name, key: e.MIG_PARTED_KEY ?? DEFAULT_MIG_PARTED_CONFIG.key } },
  };
}

export function wireMig(service: string, env: NodeJS.ProcessEnv = process.env): Promise<MigWiring> {
  return wireFromEnv(service, migConfig, env);
}
