import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #34: a bare pod keeps its node through scale-in, and the event says why (scenario pool-bare-pod.yaml). */
describe('node pools on the embedded stack (issue #34)', () => {
  it('keeps the idle node a bare pod runs on through scale-in, and its GPU Pool Scaled event says why', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-bare-pod.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const shrink = report.events
      .map((e) => e.detail as GpuPoolScaledDetail)
      .find((d) => d.state === 'requested' && d.to < d.from);
    expect(shrink).toMatchObject({ from: 4, to: 3 });
    expect(shrink!.reason).toContain(
      'cn-hangzhou.10.0.0.5 kept: ml-infer/debug-shell blocks its removal: it has no controller, ' +
        'nothing would recreate it (a bare pod)',
    );
    // The first round after the shrink says it (12:00); the shrink is told done at 13:00, the round after its node
    // is seen gone from the pool (before, at 12:00, on ACK's task alone).
    expect(lineAt(lines, /idle cn-hangzhou\.10\.0\.0\.5 kept: ml-infer\/debug-shell blocks its removal/)).toBe(12 * 60);
    expect(lineAt(lines, /GPU Pool Scaled\s+node pool t4-inference shrunk 4 → 3/)).toBe(13 * 60);
  }, 180_000);
});
