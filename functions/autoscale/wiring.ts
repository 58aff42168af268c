/**
 * The pool autoscaler's own configuration and ports, from its environment:
 *   AUTOSCALE_POLICY_FILE   YAML/JSON policy (policy.ts): which node pools, bounds, patience.
 *                           Unset: no pool is managed (the function reads and changes nothing).
 *   ALIBABA_CLOUD_REGION_ID, ACK_CLUSTER_ID, ALIBABA_CLOUD_ACCESS_KEY_ID/_SECRET (or RRSA),
 *   ALIBABA_CLOUD_ENDPOINT, ALIBABA_CLOUD_PROTOCOL: the cloud (functions/adapters/alicloud/client.ts).
 * In a dry run (DRY_RUN=true) the cloud port is wrapped like the Kubernetes ones: reads go
 * through, writes are only logged.
 */
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import type { CloudPools } from '../adapters/alicloud/ports.ts';
import { ConfigError } from '../config.ts';
import { wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { autoscalePolicyFromEnv, type AutoscalePolicy } from '../lib/pool-policy.ts';

export type AutoscaleWiring = FunctionDeps<{ policy: AutoscalePolicy; cloud: CloudPools; clusterId: string }>;

/** Where no pool is managed, nothing may reach the cloud: every call says why. */
const NO_CLOUD = new Proxy({} as CloudPools, {
  get: (_t, method) => () =>
    Promise.reject(
      new ConfigError(
        `autoscale-pools: no node pool is managed (AUTOSCALE_POLICY_FILE names none), so the cloud is not ` +
          `wired; ${String(method)} was called`,
      ),
    ),
});

export async function wireAutoscale(service: string, env: NodeJS.ProcessEnv = process.env): Promise<AutoscaleWiring> {
  const base = await wireFromEnv(service, (own) => ({ own: { policy: autoscalePolicyFromEnv(own) } }), env);
  // A deployment that manages no pool needs no Alibaba Cloud settings.
  if (Object.keys(base.policy.pools).length === 0)
    return { ...base, cloud: NO_CLOUD, clusterId: env['ACK_CLUSTER_ID'] ?? '' };
  // The Alibaba SDK clients load here, at the first invocation, and only where a pool is managed.
  const { AliCloudPools } = await import('../adapters/alicloud/client.ts');
  const { aliCloudSettingsWithSecret } = await import('../adapters/alicloud/access-key.ts');
  const settings = await aliCloudSettingsWithSecret(env);
  const real = new AliCloudPools(settings, base.clock);
  const cloud = base.dryRun
    ? dryRunCloudPools(real, (a) => base.logger.info('dry run: would', { op: a.op, args: a.args }))
    : real;
  return { ...base, cloud, clusterId: settings.clusterId };
}
