import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

/** Issue #33: anti-affine replicas land on distinct new nodes (scenario pool-anti-affinity.yaml). */
describe('anti-affinity in scale-out on the embedded stack (issue #33)', () => {
  it('grows an empty pool by one node per anti-affine replica in one step, each replica on its own node', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-anti-affinity.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((s) => [s.nodepoolId, s.from, s.to, s.state])).toEqual([['np-a100-serve', 0, 3, 'requested']]);
    const nodes = [0, 1, 2].map((i) => lines.find((l) => l.includes(`pod ml-infer/llm-ha-${i} scheduled on`)));
    expect(new Set(nodes.map((l) => l?.split(' scheduled on ')[1]))).toHaveProperty('size', 3);
  }, 180_000);
});
