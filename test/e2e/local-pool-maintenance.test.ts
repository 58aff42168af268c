import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #34: a reboot announced 2 h ahead; the workload moves first (scenario pool-maintenance.yaml). */
describe('planned maintenance on the embedded stack (issue #34)', () => {
  it('moves the workload off a node before its ECS reboot, with capacity first, and returns the node', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-maintenance.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const cordoned = lineAt(lines, /node t4-infer-0 cordoned/);
    const joined = lineAt(lines, /joined the cluster: .*node pool t4-inference/);
    const drained = lineAt(lines, /pod ml-infer\/llm-serve-0 terminating on t4-infer-0/);
    const moved = lineAt(lines, /rescheduled on .*replaces ml-infer\/llm-serve-0/);
    const reboot = lineAt(lines, /\(t4-infer-0\) is rebooting/);
    // Prepared 90 min ahead; capacity first (the new node joined before the eviction); empty ≥ 30 min before.
    expect(cordoned).toBe(30 * 60);
    expect(joined).toBeLessThanOrEqual(drained);
    expect(moved).toBeLessThanOrEqual(reboot - 30 * 60);
    expect(reboot).toBe(120 * 60);
    // Nothing lost: the one eviction was replaced; no pod was deleted or left behind on the node.
    expect(lines.filter((l) => /terminating on t4-infer-0/.test(l))).toHaveLength(1);
    expect(lineAt(lines, /node t4-infer-0 uncordoned/)).toBeGreaterThan(reboot);
  }, 300_000);
});
