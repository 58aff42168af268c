import { describe, expect, it } from 'vitest';
import type { MigLayoutChangeDetail } from '../../events/index.ts';
import { MIG_REBALANCE_ANNOTATION } from '../../functions/mig/core/rebalance.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #30 on the embedded stack: the GPU Operator's ClusterPolicy names its own default-mig-parted-config
 * (spec.migManager.config.name), so mig-manager would never see gpu-reflex's layouts. rebalance-mig makes no
 * MIG write — no ConfigMap entry, no nvidia.com/mig.config label, no cordon — and the refusal, with the exact
 * `kubectl patch` that fixes it, reaches the person on the bus (its own file: the wiring is read once per process).
 */
describe('rebalance-mig while the ClusterPolicy names another mig-parted ConfigMap', () => {
  it('writes nothing and tells the person the kubectl patch that fixes it', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-policy-refused.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const changes = report.events
      .filter((e) => e.detailType === 'MIG Layout Change')
      .map((e) => e.detail as MigLayoutChangeDetail);
    expect(changes.length).toBeGreaterThan(0);
    expect(new Set(changes.map((c) => c.state))).toEqual(new Set(['planned']));
    expect(changes[0]!.reason).toContain(
      `kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge -p ` +
        `'{"spec":{"migManager":{"config":{"name":"gpu-reflex-mig-parted-config"}}}}'`,
    );
    const node = report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;
    expect(node.spec?.unschedulable ?? false).toBe(false);
    expect(node.metadata.labels?.['nvidia.com/mig.config']).toBeUndefined();
    expect(node.metadata.annotations?.[MIG_REBALANCE_ANNOTATION]).toBeUndefined();
    expect(node.status?.allocatable?.['nvidia.com/mig-3g.40gb']).toBeUndefined();
    for (const name of ['finetune-0', 'finetune-1'])
      expect(report.final.pods.find((p) => p.metadata.name === name)?.spec.nodeName).toBeUndefined();
    expect(lines).toContainEqual(expect.stringMatching(/functions +MIG Layout Change +h100-0: not started/));
  }, 120_000);
});
