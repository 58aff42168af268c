import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * dcgm-diag-fail's twin (local-dcgm-diag.test.ts), in a file of its own as each scenario run is: the policy asks
 * every return probe for DCGM's level-2 diagnostic, the local stack's dcgmi passes every test, and the rebooted
 * node returns on the probe and the diagnostic together.
 */
describe("DCGM's diagnostic after a reboot, passing", () => {
  it('returns the node when the probe and the diagnostic both pass', async () => {
    const { report, exitCode } = await simulateScenario('dcgm-diag-pass.yaml', []);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const restored = report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail)
      .find((d) => d.phase === 'restored');
    expect(restored?.reason).toContain('passed');
  }, 120_000);
});
