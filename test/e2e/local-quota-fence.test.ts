import { describe, expect, it } from 'vitest';
import type { QuotaRewrittenDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #30, faults move capacity, on the embedded stack (its own file: the functions' wiring is read
 * once per process): a GPU fenced by remediation lowers the capacity rewrite-quotas shares by one at
 * once — on the Remediation, before the device plugin has dropped it — and the Quota Rewritten says
 * which GPU and why; once the GPU is restored, the unfence's GPU Action Result shares all 8 again at once.
 */
describe('rewrite-quotas follows faults on the embedded stack', () => {
  it('shares one GPU less while one is fenced, says why, and shares it again after the restore', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('quota-fence.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const rewrites = report.events
      .filter((e) => e.detailType === 'Quota Rewritten')
      .map((e) => e.detail as QuotaRewrittenDetail);
    expect(rewrites.map((r) => [r.namespace, r.changes.map((c) => `${c.from}→${c.to}`).join()])).toEqual([
      ['team-b', '4→3'],
      ['team-b', '3→4'],
    ]);
    expect(rewrites[0]!.capacity).toEqual({
      resources: [{ resource: 'nvidia.com/gpu', capacity: 7, shared: 7 }],
      out: [{ node: 'a100-0', why: '1 GPU fenced by remediation', gpus: 1 }],
    });
    expect(rewrites[0]!.reason).toMatch(/capacity nvidia\.com\/gpu 7: a100-0: 1 GPU fenced by remediation$/);
    expect(rewrites[1]!.capacity).toEqual({
      resources: [{ resource: 'nvidia.com/gpu', capacity: 8, shared: 8 }],
      out: [],
    });
    // At the fault's Remediation, before the device plugin took the GPU out of the allocatable.
    const fenced = lineAt(lines, /rewrite-quotas\s+Quota Rewritten\s+team-b: requests\.nvidia\.com\/gpu 4 → 3/);
    expect(fenced).toBe(60);
    expect(fenced).toBeLessThanOrEqual(lineAt(lines, /node a100-0 allocatable nvidia\.com\/gpu 8 → 7/));
    // Back at the unfence's GPU Action Result (on rewrite-quotas' rule), not at the next 5-minute round.
    const unfenced = lineAt(lines, /node a100-0 allocatable nvidia\.com\/gpu 7 → 8/);
    const back = lineAt(lines, /rewrite-quotas\s+Quota Rewritten\s+team-b: requests\.nvidia\.com\/gpu 3 → 4/);
    expect(lineAt(lines, /a100-0\s+GPU Action Result\s+unfence/)).toBe(unfenced);
    expect(back).toBe(unfenced);
  }, 60_000);
});
