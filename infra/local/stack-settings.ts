import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { labelNothingConfigText } from './cluster-identity.ts';
import type { Scenario } from './scenario.ts';
import { withEnv } from './stack-env.ts';
import type { StackOptions } from './stack-types.ts';

/**
 * The scenario's settings for the functions: its policy files written under `work` and named in the
 * environment, its `env`; each `withEnv` undone by a cleanup pushed onto `cleanups`, in order.
 */
export function applyScenarioSettings(
  scenario: Scenario,
  o: Pick<StackOptions, 'kubeconfig' | 'kubeconfigIsSimulated'>,
  c: { work: string; progress: (s: string) => void; cleanups: (() => unknown)[] },
): void {
  const { work, progress, cleanups } = c;
  // The scenario's policy is the functions' policy file (else the caller's REMEDIATION_POLICY_FILE, else the
  // defaults).
  if (scenario.policyFile) {
    const policyPath = join(work, 'remediation-policy.yaml');
    writeFileSync(policyPath, scenario.policyFile.text);
    cleanups.push(withEnv({ REMEDIATION_POLICY_FILE: policyPath }));
    progress(`  remediation policy: the scenario's (${policyPath})`);
  }
  if (scenario.labelsFile) {
    const labelsPath = join(work, 'node-labels.yaml');
    writeFileSync(labelsPath, scenario.labelsFile.text);
    cleanups.push(withEnv({ LABELER_CONFIG_FILE: labelsPath }));
    progress(`  node labeler: the scenario's configuration (${labelsPath})`);
  }
  if (scenario.idleFile) {
    const idlePath = join(work, 'idle-policy.yaml');
    writeFileSync(idlePath, scenario.idleFile.text);
    cleanups.push(withEnv({ IDLE_POLICY_FILE: idlePath }));
    progress(`  idle GPUs: the scenario's policy (${idlePath})`);
  }
  if (scenario.migFile) {
    const migPath = join(work, 'mig-policy.yaml');
    writeFileSync(migPath, scenario.migFile.text);
    cleanups.push(withEnv({ MIG_POLICY_FILE: migPath }));
    progress(`  MIG policy: the scenario's (preemption ${scenario.migFile.policy.preemption.enabled ? 'on' : 'off'})`);
  }
  if (Object.keys(scenario.env).length > 0) {
    cleanups.push(withEnv(scenario.env));
    progress(
      `  function settings: the scenario's (${Object.entries(scenario.env)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')})`,
    );
  }
  if (o.kubeconfig && !o.kubeconfigIsSimulated) {
    const labelsPath = join(work, 'node-labels-none.json');
    writeFileSync(labelsPath, labelNothingConfigText());
    cleanups.push(withEnv({ LABELER_CONFIG_FILE: labelsPath }));
    progress(`  node labeler: labels nothing on this cluster (its agents read mock GPUs, not these nodes')`);
  }
  if (scenario.quotaFile) {
    const quotaPath = join(work, 'quota-teams.yaml');
    writeFileSync(quotaPath, scenario.quotaFile.text);
    cleanups.push(withEnv({ QUOTA_CONFIG_FILE: quotaPath }));
    progress(`  quota teams: the scenario's (${scenario.quotaFile.config.teams.map((t) => t.name).join(', ')})`);
  }
}
