import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

/** Issue #34: a stock-out on the first instance type grows the pool with the next (scenario pool-stockout.yaml). */
describe('node pools on the embedded stack (issue #34)', () => {
  it('grows a two-type pool through a stock-out of its first type: the nodes join as the next type', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-stockout.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((e) => [e.nodepoolId, e.state, e.from, e.to])).toEqual([
      ['np-gpu-general', 'requested', 0, 2],
      ['np-gpu-general', 'succeeded', 0, 2],
    ]);
    expect(
      lines.filter((l) => /joined the cluster: .*ecs\.gn7i-c8g1\.2xlarge, node pool gpu-general/.test(l)),
    ).toHaveLength(2);
  }, 180_000);
});
