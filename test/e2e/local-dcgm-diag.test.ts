import { describe, expect, it } from 'vitest';
import type { GpuActionResultDetail, RemediationDetail } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * DCGM's diagnostic as return-probe evidence (issue #27), on the embedded stack: the policy asks every return probe
 * for `dcgmi diag -r 2`; the agent runs the local stack's dcgmi (infra/local/mock-nvml/dcgmi.mjs), which answers from
 * the node's mock scenario. A failed Memory test keeps a rebooted node out although NVML's probe passes; a passing
 * diagnostic lets it back on evidence.
 */
describe("DCGM's diagnostic after a reboot", () => {
  it('keeps the node out, awaiting repair, when the diagnostic fails, naming the test', async () => {
    const { report, exitCode } = await simulateScenario('dcgm-diag-fail.yaml', []);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const answers = report.events
      .filter((e) => e.detailType === 'GPU Action Result')
      .map((e) => e.detail as GpuActionResultDetail)
      .filter((d) => d.action === 'probe');
    expect(answers[0]?.probe).toMatchObject({
      nvmlAnswers: true,
      recoveryAction: 'none',
      diag: { level: 2, result: 'fail', failed: ['Memory'] },
      passed: false,
    });
    const reasons = report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => (e.detail as RemediationDetail).reason);
    expect(reasons.some((r) => r.includes('DCGM diagnostic level 2 failed: Memory'))).toBe(true);
  }, 120_000);
});
