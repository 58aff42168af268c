import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #33: a Volcano PodGroup grows its empty pool all at once (scenario pool-gang.yaml). */
describe('gangs in scale-out on the embedded stack (issue #33)', () => {
  it('grows an empty pool by 4 in one step for a 4-pod × 8-GPU PodGroup, and the gang starts together', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-gang.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((s) => [s.nodepoolId, s.from, s.to, s.state])).toEqual([['np-a100-train', 0, 4, 'requested']]);
    expect(scaled[0]!.reason).toMatch(/for PodGroup ml-infer\/train \(4 pods, all or none\)/);
    // Volcano binds the four together, once the fourth node is Ready.
    const bound = [0, 1, 2, 3].map((i) => lineAt(lines, new RegExp(`pod ml-infer/train-${i} scheduled on`)));
    expect(new Set(bound).size).toBe(1);
  }, 180_000);
});
