import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

const remediationsOf = (r: Awaited<ReturnType<typeof simulateScenario>>) =>
  r.report.events.filter((e) => e.detailType === 'Remediation').map((e) => e.detail as RemediationDetail);

/**
 * Issue #27, evidence not time after a reboot, on the embedded stack and the virtual clock: a node
 * back from its reboot returns only on a passed health probe of the faulty GPU (quiet time is four
 * hours here, longer than the run). A GPU that does not come back: local-reboot-gpu-missing.test.ts
 * (one cloud scenario per file: the simulated cloud's environment is the process's).
 */
describe('after a reboot, the GPU returns on evidence', () => {
  it("returns the node once the node agent's probe of its GPU passes, hours before the quiet period", async () => {
    const lines: string[] = [];
    const result = await simulateScenario('reboot-probe.yaml', lines);
    expect(result.exitCode).toBe(0);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const back = lineAt(lines, /a100-train-0 \(i-\w+\) is back from its reboot/);
    expect(lineAt(lines, /a100-train-0\s+GPU Action Result\s+probe probe passed/)).toBeGreaterThan(back);
    expect(lineAt(lines, /remediate\s+restore restored/)).toBeLessThan(back + 5 * 60);
    expect(remediationsOf(result).at(-1)).toMatchObject({ action: 'restore', phase: 'restored' });
  }, 60_000);
});
