import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #34: a spot interruption notice moves the workload at once (scenario pool-spot-interruption.yaml). */
describe('spot interruption on the embedded stack (issue #34)', () => {
  it('evicts the replica at the notice and grows the pool, so the reclaim finds nothing of it', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-spot-interruption.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const cordoned = lineAt(lines, /node t4-infer-0 cordoned/);
    const drained = lineAt(lines, /pod ml-infer\/llm-serve-0 terminating on t4-infer-0/);
    const left = lineAt(lines, /t4-infer-0 left the cluster/);
    // The notice at 1:00 is read at the next round; the replica leaves then, long before the reclaim at 6:00.
    expect(cordoned).toBeLessThanOrEqual(2 * 60);
    expect(drained).toBe(cordoned);
    expect(left).toBe(6 * 60);
  }, 300_000);
});
