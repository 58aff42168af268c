import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #30 on the embedded stack: the kubelet reports the new MIG devices 150 s after mig-manager's
 * `success` (the simulated device plugin's lag, fleet field migAllocatableLagSeconds), while the agent's
 * NVML inventory shows them sooner. rebalance-mig announces success and uncordons only after the Node's
 * allocatable offers the new instances (its own file: the functions' wiring is read once per process).
 */
describe('a relayout whose new MIG devices the kubelet reports late', () => {
  it('is done only once the Node’s allocatable offers the new instances', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-allocatable-lag.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const allocatable = lineAt(lines, /node h100-0 allocatable nvidia\.com\/mig-3g\.40gb 0 → 2/);
    const applied = lineAt(lines, /MIG Layout Change\s+h100-0: mig-manager applied/);
    expect(applied).toBeGreaterThanOrEqual(allocatable);
  }, 120_000);
});
