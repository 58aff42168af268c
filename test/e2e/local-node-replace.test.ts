import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #13's replace-node, capacity first, on the embedded stack and the virtual clock: XID 79
 * drains an A100 node, the sweep reboots it, the fault returns after the reboot, and the ladder
 * climbs to replace-node. Through the real Alibaba Cloud SDK (the simulated region): the ACK node
 * pool grows by one, the new instance boots and joins, and only once it is Ready is the broken
 * node's instance removed from the pool (no drain: remediation drained it) and released. The job
 * that had nowhere else to go runs on the new node; the incident closes when the old node is gone.
 */
describe('a node replaced through its ACK node pool, capacity first', () => {
  it('grows the pool, waits for the new node, then removes and releases the broken one', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('node-replace.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const remediations = report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail);
    const replaceSteps = remediations.flatMap((r) =>
      r.steps.filter((s) => s.kind === 'replace').map((s) => ({ phase: r.phase, ...s })),
    );
    // Each step said by a Remediation event: the grow, the removal, and the close once the node is gone.
    expect(replaceSteps).toEqual([
      expect.objectContaining({
        phase: 'awaiting-repair',
        result: 'done',
        target: 'node/a100-train-0',
        message: 'node pool np-a100-train: desired size 2 → 3 (capacity first)',
      }),
      expect.objectContaining({
        phase: 'awaiting-repair',
        result: 'done',
        message: expect.stringMatching(/^node pool np-a100-train: instance i-\w+ removed and released/),
      }),
      expect.objectContaining({ phase: 'acted', result: 'done' }),
    ]);
    expect(remediations.at(-1)).toMatchObject({
      action: 'replace-node',
      phase: 'acted',
      reason: expect.stringMatching(
        /node a100-train-0 is gone: replaced by cn-hangzhou\.[\d.]+ .*ACK task T-\w+ is success; the incident is closed/,
      ),
    });
    // Rebooted at 1:00, back at 3:00, probed; the fault again at 5:00, inside the probe's window: the
    // agent's probe fails on that XID and its answer grows the pool at once (before the 6:00 sweep).
    expect(lineAt(lines, /a100-train-0\s+GPU Action Result\s+probe probe did not pass/)).toBe(5 * 60);
    expect(lineAt(lines, /remediate\s+replace-node awaiting-repair: replace/)).toBe(5 * 60);
    // Capacity first: the new instance joins (3 min boot) before the broken one is taken out.
    const joined = lineAt(lines, /alicloud\s+cn-hangzhou\.[\d.]+ joined the cluster/);
    const removing = lineAt(lines, /alicloud\s+ACK removes a100-train-0 \(i-\w+\) from node pool a100-train$/);
    expect(joined).toBe(8 * 60); // the 3-minute boot from the 5:00 grow
    expect(removing).toBeGreaterThanOrEqual(joined);
    expect(lineAt(lines, /alicloud\s+a100-train-0 left the cluster; i-\w+ released/)).toBe(9 * 60);
    // The job's pods had nowhere else to go: they run on the new node.
    expect(lines.filter((l) => /pod ml-train\/finetune-\w+ rescheduled on cn-hangzhou\./.test(l))).toHaveLength(2);
  }, 60_000);
});
