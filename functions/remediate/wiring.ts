/**
 * Remediation's own configuration (remediate and remediate-sweep): the policy, from
 * REMEDIATION_POLICY_FILE (YAML or JSON; NVIDIA-guided defaults when unset). The file's `dryRun`
 * is not part of the policy: it selects the dry-run wiring (lib/wiring.ts).
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError } from '../config.ts';
import type { DraVersions } from '../adapters/kube/index.ts';
import { lazy, wireFromEnv, type FunctionDeps } from '../lib/wiring.ts';
import { DEFAULT_POLICY, type Policy } from './core/policy.ts';
import { loadPolicyFile } from './core/policy-file.ts';

const RemediationEnvSchema = z.object({ REMEDIATION_POLICY_FILE: z.string().min(1).optional() });

export type RemediationWiring = FunctionDeps<{ policy: Policy }>;

export function remediationConfig(env: NodeJS.ProcessEnv): { own: { policy: Policy }; dryRun: boolean; kube: { dra: DraVersions } } {
  const r = RemediationEnvSchema.safeParse(env);
  if (!r.success) throw new ConfigError(`bad configuration: ${r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  const path = r.data.REMEDIATION_POLICY_FILE;
  const file = path ? loadPolicyFile(readFileSync(path, 'utf8'), path) : { policy: DEFAULT_POLICY, dryRun: false };
  // The DRA port speaks the resource.k8s.io versions the policy says this cluster serves.
  const { deviceTaintRuleVersion, resourceSliceVersion } = file.policy.fence.dra;
  return { own: { policy: file.policy }, dryRun: file.dryRun, kube: { dra: { deviceTaintRuleVersion, resourceSliceVersion } } };
}

/** Wiring at the first invocation (a Lambda cold start), once per container. */
export const lazyRemediationWiring = (service: string) => lazy((): RemediationWiring => wireFromEnv(service, remediationConfig));
