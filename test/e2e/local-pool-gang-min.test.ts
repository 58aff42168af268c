import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #34: a PodGroup's minMember, read from the cluster, sizes the first step (pool-gang-min.yaml). */
describe('a gang’s own size on the embedded stack (issue #34)', () => {
  it('grows an empty pool by 4, not 6, for a 6-pod PodGroup with minMember 4; the rest after it runs', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-gang-min.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled' && (e.detail as GpuPoolScaledDetail).state === 'requested')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((s) => [s.nodepoolId, s.from, s.to])).toEqual([
      ['np-a100-train', 0, 4],
      ['np-a100-train', 4, 6],
    ]);
    expect(scaled[0]!.reason).toMatch(/PodGroup ml-infer\/train \(4 of its 6 waiting pods, what it needs to start/);
    // Volcano binds the first four together, before the last two.
    const bound = [0, 1, 2, 3].map((i) => lineAt(lines, new RegExp(`pod ml-infer/train-${i} scheduled on`)));
    expect(new Set(bound).size).toBe(1);
    expect(lineAt(lines, /pod ml-infer\/train-4 scheduled on/)).toBeGreaterThan(bound[0]!);
  }, 240_000);
});
