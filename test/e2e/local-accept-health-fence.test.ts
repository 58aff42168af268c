import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Acceptance (issue #27): a health condition fences its GPU, as the docs promise; no reset is tried. */
describe('gpu-reflex simulate, accept-health-fence scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('accept-health-fence.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('takes the GPU out of the allocatable before the node is drained, and it stays out', () => {
    const out = lineAt(lines, /node a100-fit-0 allocatable nvidia\.com\/gpu 8 → 7/);
    expect(out).toBeLessThanOrEqual(lineAt(lines, /node a100-fit-0 cordoned/));
    expect(lines.some((l) => /allocatable nvidia\.com\/gpu 7 → 8/.test(l))).toBe(false);
  });
});
