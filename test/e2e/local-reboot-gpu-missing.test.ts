import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27, on the embedded stack and the virtual clock: a GPU that does not come back from its
 * node's reboot (scripted: `afterReboot: missing` — still off the bus, NVML and the device plugin no
 * longer list it) fails the node agent's health probe, so the node stays out, awaiting-repair, and a
 * person is told; on quiet time alone (the old behaviour) it returned with 7 GPUs.
 */
describe('a GPU missing after a reboot', () => {
  it('keeps the node out, awaiting-repair with a person told, when the GPU does not come back', async () => {
    const lines: string[] = [];
    const result = await simulateScenario('reboot-gpu-missing.yaml', lines);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(lines.some((l) => /GPU 3 of a100-train-0 does not come back from the reboot/.test(l))).toBe(true);
    expect(lineAt(lines, /a100-train-0\s+GPU Action Result\s+probe probe did not pass/)).toBeGreaterThan(0);
    const remediations = result.report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail);
    expect(remediations.some((r) => r.action === 'restore')).toBe(false);
    const told = remediations.find((r) => /NVML does not list it any more \(missing since the reboot\)/.test(r.reason));
    expect(told).toBeDefined();
    expect(told!.steps.some((s) => s.kind === 'notify')).toBe(true);
  }, 60_000);
});
