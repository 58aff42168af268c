import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27, on the embedded stack and the virtual clock: a replica its PodDisruptionBudget never
 * lets go holds a GPU that needs a reset (XID 95). The eviction is retried each sweep, quietly,
 * until the pool's deadline (10 min); then a person is told and the incident climbs as a stuck drain
 * does — never a silent retry every minute for 24 h.
 */
describe('a PDB-held pod on a GPU that needs a reset', () => {
  it('gets a deadline: a notice at it, then the drain for a reboot', async () => {
    const lines: string[] = [];
    const result = await simulateScenario('pdb-deadline.yaml', lines);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const remediations = result.report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail);
    const told = remediations.filter((r) => /min after they were asked to move/.test(r.reason));
    expect(told).toHaveLength(1);
    expect(told[0]!.steps.some((s) => s.kind === 'notify')).toBe(true);
    expect(told[0]).toMatchObject({ action: 'reboot-node' });
    // The fault at 1:00; the pool's deadline is 10 min: the sweep after it (11:00) tells, not before.
    expect(lineAt(lines, /remediate\s+reboot-node partial: tainted, cordoned/)).toBe(11 * 60);
    // Before it the retries were quiet: the quarantine itself told people, none of the ten retries after it.
    expect(
      remediations.filter((r) => r.action === 'quarantine-gpu' && r.steps.some((s) => s.kind === 'notify')),
    ).toHaveLength(1);
  }, 60_000);
});
