import { describe, expect, it } from 'vitest';
import type { QuotaRewrittenDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #30 on the embedded stack (its own file: the functions' wiring is read once per process, so
 * one scenario per file): two teams of equal weight, no guarantee. Team a's batch ends and it goes
 * idle; team b borrows its share four GPUs a round, down to a's headroom of 2; when team a comes back
 * with two pods they are admitted at once, with no rewrite in between.
 */
describe('rewrite-quotas never strands a team on the embedded stack', () => {
  it('never strands a team that went idle: its share is lent down to its headroom, and its next pods are admitted at once', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('quota-idle.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const rewrites = report.events
      .filter((e) => e.detailType === 'Quota Rewritten')
      .map((e) => e.detail as QuotaRewrittenDetail);
    // a idle from ~5:30: 8 → 4 (at most 4 a round) → 2 (its headroom: the 2 it keeps are not lent).
    expect(rewrites.map((r) => [r.namespace, r.changes.map((c) => `${c.from}→${c.to}`).join()])).toEqual([
      ['team-a', '8→4'],
      ['team-b', '8→12'],
      ['team-a', '4→2'],
      ['team-b', '12→14'],
    ]);
    expect(lineAt(lines, /pod team-b\/more-0 refused: .*exceeded quota/)).toBe(6 * 60);
    // Admitted after the 15:00 rewrite, on the controller's next retry.
    expect(lineAt(lines, /pod team-b\/more-5 created on its controller's retry/)).toBeGreaterThanOrEqual(15 * 60);
    expect(lineAt(lines, /pod team-b\/more-5 created on its controller's retry/)).toBeLessThan(16 * 60);
    // Team a comes back at 16:00: no rewrite in between, and its two pods are admitted and placed at once.
    expect(lines.some((l) => /pod team-a\/next-\d refused/.test(l))).toBe(false);
    expect(lineAt(lines, /pod team-a\/next-1 scheduled on/)).toBe(16 * 60);
  }, 60_000);
});
