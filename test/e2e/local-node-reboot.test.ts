import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #13's repair hands for remediation, on the embedded stack and the virtual clock: XID 79
 * drains an A100 node; once drained the sweep reboots its ECS instance through the real Alibaba
 * Cloud SDK (the simulated region); the node goes NotReady, comes back with a new boot id and its
 * GPUs reset; once the node agent's health probe of the faulty GPU passes it returns to service (not
 * after the quiet period: evidence, not time), with no person in the loop.
 */
describe('a drained node rebooted through Alibaba Cloud', () => {
  it('reboots once, sees it back, and returns it on a passed health probe of its GPU', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('node-reboot.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const remediations = report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail);
    const rebooted = remediations.filter((r) => r.steps.some((s) => s.kind === 'reboot'));
    expect(rebooted).toHaveLength(1);
    expect(rebooted[0]!.steps.filter((s) => s.kind === 'reboot')).toEqual([
      expect.objectContaining({ result: 'done', target: 'node/a100-train-0' }),
    ]);
    expect(remediations.at(-1)).toMatchObject({ action: 'restore', phase: 'restored' });
    // Drained at 0:30 (XID) and rebooted at the next sweep; back 2 min later; probed (30 s, at the
    // agent's next ticks), and back in service on the passed probes, long before 10 quiet minutes.
    expect(lineAt(lines, /alicloud\s+i-\w+ \(a100-train-0\) is rebooting/)).toBe(60);
    expect(lineAt(lines, /a100-train-0 \(i-\w+\) is back from its reboot/)).toBe(180);
    expect(lineAt(lines, /a100-train-0\s+GPU Action Result\s+probe probe passed/)).toBeGreaterThan(180);
    expect(lineAt(lines, /remediate\s+restore restored/)).toBeLessThan(3 * 60 + 10 * 60);
    expect(remediations.at(-1)!.reason).toContain('health probe after its reboot passed');
    // The reboot reset the lost GPU: its agent says so.
    expect(lineAt(lines, /a100-train-0\s+GPU Health Changed\s+gpu-lost resolved/)).toBe(60);
  }, 60_000);
});
