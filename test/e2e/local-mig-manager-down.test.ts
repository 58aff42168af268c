import { describe, expect, it } from 'vitest';
import { readMigInventory, type MigLayoutChangeDetail } from '../../events/index.ts';
import { MIG_REBALANCE_ANNOTATION } from '../../functions/mig/core/rebalance.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #30 on the embedded stack: mig-manager is down on the node and its last run left
 * nvidia.com/mig.config.state=success. rebalance-mig must not read that as this change's completion:
 * no success is announced, the node is not uncordoned, and after MIG_TIMEOUT_MINUTES the previous
 * config comes back, the node stays cordoned with the reason, and a person is told.
 */
describe('rebalance-mig with mig-manager down', () => {
  it('announces no false success and fails back to the previous config, telling a person', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-manager-down.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const changes = report.events
      .filter((e) => e.detailType === 'MIG Layout Change')
      .map((e) => e.detail as MigLayoutChangeDetail);
    expect(changes.map((c) => c.state)).toEqual(['pending', 'failed']);
    expect(changes[1]!.reason).toContain('mig-manager never took');
    const node = report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;
    // The GPUs never left their layout: the agent's NVML still shows 7×1g.10gb on GPU 2.
    const inv = readMigInventory(node.metadata.annotations ?? {}).inventory!;
    expect(inv.gpus[2]?.instances.map((i) => i.profile)).toEqual(Array(7).fill('1g.10gb'));
    expect(JSON.parse(node.metadata.annotations?.[MIG_REBALANCE_ANNOTATION] ?? '{}')).toMatchObject({
      phase: 'failed',
    });
    // The waiting pods still wait. (The person's notice, sent with the failed event, is checked in
    // functions/mig/run.test.ts: this stack configures no chat.)
    for (const name of ['finetune-0', 'finetune-1'])
      expect(report.final.pods.find((p) => p.metadata.name === name)?.spec.nodeName).toBeUndefined();
    expect(lines).toContainEqual(
      expect.stringMatching(/^05:00\.0 +functions +MIG Layout Change +h100-0: mig-manager never took/),
    );
  }, 120_000);
});
