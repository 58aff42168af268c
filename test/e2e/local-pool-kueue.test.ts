import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #34: Kueue-gated pods buy nothing until ungated (scenario pool-kueue.yaml). */
describe('node pools on the embedded stack (issue #34)', () => {
  it('buys nothing for Kueue-gated pods until Kueue lifts the gate, then grows the pool for them', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-kueue.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    expect(lineAt(lines, /autoscale-pools\s+no GPU pod to buy a node for: 2 held by scheduling gates/)).toBe(60);
    // Gated from 0:10 to 5:00: the first scale-out is the round after the gate is lifted.
    expect(lineAt(lines, /Kueue lifts the scheduling gates of 2 pods/)).toBe(300);
    expect(lineAt(lines, /autoscale-pools\s+GPU Pool Scaled\s+node pool t4-inference grow 2 → 4/)).toBe(360);
  }, 180_000);
});
