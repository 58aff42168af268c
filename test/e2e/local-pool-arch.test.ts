import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

/** Issue #34: an empty pool grows for pods that select arch/os (scenario pool-arch.yaml). One scenario a file: the
 * autoscale wiring is loaded once per process. */
describe('node pools on the embedded stack (issue #34)', () => {
  it('grows an empty pool for pods that select kubernetes.io/arch, kubernetes.io/os and the region', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-arch.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled[0]).toMatchObject({ nodepoolId: 'np-a10-general', from: 0, to: 2, state: 'requested' });
  }, 180_000);
});
