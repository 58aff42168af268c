import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #30, done when "a scenario where the GPU Operator reconciles (a new node joins) mid-relayout: the
 * layout still lands" — on the embedded stack (its own file: the functions' wiring is read once per process).
 */
describe('a GPU node joins while a MIG relayout is in flight', () => {
  it('the GPU Operator reconciles, and the layout still lands from gpu-reflex’s own ConfigMap', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-reconcile.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const started = lineAt(lines, /MIG Layout Change\s+h100-0: GPU 2 7×1g\.10gb → 2×3g\.40gb/);
    const joined = lineAt(lines, /scenario\s+node a100-new joins the cluster/);
    const applied = lineAt(lines, /MIG Layout Change\s+h100-0: mig-manager applied/);
    expect(started).toBeLessThan(joined);
    expect(joined).toBeLessThan(applied);
    expect(lineAt(lines, /node h100-0 allocatable nvidia\.com\/mig-3g\.40gb 0 → 2/)).toBeGreaterThan(joined);
  }, 60_000);
});
