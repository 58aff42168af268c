import { describe, expect, it } from 'vitest';
import type { QuotaRewrittenDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #33 on the embedded stack: an idle notebook's GPU lent through the quota planner meanwhile. Once
 * idle-gpus has told the owner, rewrite-quotas (on that GPU Idle Allocation, not at its next round) counts
 * the idle GPU as free: vision's quota rises 2 → 3 and its pod that admission refused runs, while the
 * notebook still holds its GPU; the notebook is evicted at its deadline an hour later.
 */
describe('idle GPUs lent through quotas on the embedded stack', () => {
  it('lends the idle GPU at once, admits the borrower before the eviction, evicts at the deadline', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('idle-lend.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const told = lineAt(lines, /idle-gpus\s+GPU Idle Allocation\s+idle: research\/notebook/);
    const lent = lineAt(lines, /rewrite-quotas\s+Quota Rewritten\s+vision: requests\.nvidia\.com\/gpu 2 → 3/);
    const admitted = lineAt(lines, /pod vision\/serve-more-1 scheduled on/);
    const evicted = lineAt(lines, /pod research\/notebook terminating/);
    // The rewrite follows the idle event itself (its rule), not the 5-minute schedule.
    expect(lent).toBe(told);
    expect(told % 300).not.toBe(0);
    expect(admitted).toBeLessThan(evicted);
    const rewrites = report.events
      .filter((e) => e.detailType === 'Quota Rewritten')
      .map((e) => e.detail as QuotaRewrittenDetail);
    expect(rewrites.find((r) => r.namespace === 'research' && /lends 1 idle/.test(r.reason))).toBeDefined();
  }, 120_000);
});
