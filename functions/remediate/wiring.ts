/**
 * Remediation's own configuration (remediate and remediate-sweep): the policy, from
 * REMEDIATION_POLICY_FILE (YAML or JSON; NVIDIA-guided defaults when unset). The file's `dryRun`
 * is not part of the policy: it selects the dry-run wiring (lib/wiring.ts).
 */
import { readFileSync } from 'node:fs';
import { configTextFromEnv } from '../lib/config-source.ts';
import * as z from 'zod';
import { ConfigError } from '../config.ts';
import type { DraVersions } from '../adapters/kube/index.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import { randomUUID } from 'node:crypto';
import { ackRepairOwner, aliCloudRepair, instanceIdOf, type PoolLock } from '../adapters/alicloud/repair.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';
import { POOL_SIZE_LEASE } from '../adapters/alicloud/ports.ts';
import { autoscalePolicyFromEnv } from '../lib/pool-policy.ts';
import { withLease } from '../lib/lease.ts';
import { aliCloudReplaceReader } from './replacements.ts';
import type { CloudOps } from '../lib/apply.ts';
import { wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import type { Capabilities } from './core/types.ts';
import type { RemediationDeps } from './run.ts';
import { DEFAULT_POLICY, type Policy } from './core/policy.ts';
import { loadPolicyFile } from './core/policy-file.ts';
import { wouldWords } from './core/words.ts';

const RemediationEnvSchema = z.object({
  REMEDIATION_POLICY_FILE: z.string().min(1).optional(),
  /**
   * `alicloud`: reboot drained nodes through ECS, and replace them through their ACK node pool
   * where the autoscale policy (AUTOSCALE_POLICY_FILE) lets gpu-reflex size it (the ALIBABA_CLOUD_*
   * variables say where). Unset: a person repairs.
   */
  REMEDIATION_REPAIR: z.enum(['alicloud']).optional(),
});

export type RemediationWiring = FunctionDeps<{
  policy: Policy;
  cloud?: CloudOps;
  capabilities?: Capabilities;
  repairOwner?: RemediationDeps['repairOwner'];
  replacements?: RemediationDeps['replacements'];
  unreachable?: RemediationDeps['unreachable'];
}>;

export function remediationConfig(env: NodeJS.ProcessEnv): {
  own: { policy: Policy };
  dryRun: boolean;
  kube: { dra: DraVersions };
  wouldWords: (reason: string) => string;
} {
  const r = RemediationEnvSchema.safeParse(env);
  if (!r.success)
    throw new ConfigError(
      `bad configuration: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  // The file, the parameter's text (lib/config-source.ts) or the defaults; loadPolicyFile's errors
  // are the CLI's (`gpu-reflex config check`).
  const doc = configTextFromEnv(env, 'REMEDIATION_POLICY_FILE', (path) => readFileSync(path, 'utf8'));
  const file = doc ? loadPolicyFile(doc.text, doc.source) : { policy: DEFAULT_POLICY, dryRun: false };
  // The DRA port speaks the resource.k8s.io versions the policy says this cluster serves.
  const { deviceTaintRuleVersion, resourceSliceVersion } = file.policy.fence.dra;
  return {
    own: { policy: file.policy },
    dryRun: file.dryRun,
    kube: { dra: { deviceTaintRuleVersion, resourceSliceVersion } },
    // A dry run's report says what it would do (core/words.ts), not "Now draining".
    wouldWords,
  };
}

/**
 * The shared wiring plus, with REMEDIATION_REPAIR=alicloud, the cloud's hands: reboots through ECS
 * and replacements through ACK node pools (dry run: wrapped like every port that acts, so a dry
 * run reboots, buys and releases nothing).
 */
export async function wireRemediation(
  service: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RemediationWiring> {
  const base: RemediationWiring = await wireFromEnv(service, remediationConfig, env);
  if (env['REMEDIATION_REPAIR'] !== 'alicloud') return base;
  // The Alibaba SDK clients load here, at the first invocation, and only where repair is on.
  const { AliCloudPools } = await import('../adapters/alicloud/client.ts');
  const { aliCloudSettingsWithSecret } = await import('../adapters/alicloud/access-key.ts');
  const real = new AliCloudPools(await aliCloudSettingsWithSecret(env), base.clock);
  const cloud = base.dryRun
    ? dryRunCloudPools(real, (a) => base.logger.info('dry run: would', { op: a.op, args: a.args }))
    : real;
  // A replacement sets pool sizes under the autoscaler's Lease, so the two never write over each other.
  const holder = `${service}-${randomUUID()}`;
  const lock: PoolLock = (work) =>
    withLease(
      POOL_SIZE_LEASE,
      60,
      { leases: base.kube.leases, clock: base.clock, logger: base.logger, holder },
      work,
      () => undefined,
    );
  const replacements = aliCloudReplaceReader(cloud, base.kube.nodes, autoscalePolicyFromEnv(base.configEnv).pools);
  // A node pool with ACK's own auto repair repairs its nodes itself: remediation defers to it there.
  // A node with no ECS instance behind it (a registered IDC node, another provider's) is a person's to repair.
  const unreachable = (n: NodeInfo) =>
    instanceIdOf(n.providerId) ? undefined : `it names no ECS instance: spec.providerID ${n.providerId ?? 'unset'}`;
  return {
    ...base,
    cloud: aliCloudRepair(cloud, base.kube.nodes, lock),
    capabilities: { reboot: true, replace: true },
    repairOwner: ackRepairOwner(real, () => base.clock.now()),
    unreachable,
    replacements,
  };
}
