import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27: a fence fallback's taint is what the card's reset waits for, so its landing asks for the reset
 * at once (functions/remediate/sweep-run.ts, reset-gate.ts awaitsTaint), not at the next minute's sweep.
 */
describe('gpu-reflex simulate, fence-fallback-reset scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('fence-fallback-reset.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('resets the card within one agent tick of the taint landing, never before it', () => {
    const tainted = lineAt(lines, /cluster\s+node a100-ts-0 tainted gpu-reflex\.io\/unhealthy/);
    const reset = lineAt(lines, /a100-ts-0\s+GPU Action Result\s+reset/);
    // The agent reads its Node every 30 s of virtual time here; the next sweep would have been 60 s later.
    expect(reset).toBeGreaterThan(tainted);
    expect(reset - tainted).toBeLessThanOrEqual(30);
    expect(lineAt(lines, /GPU Action Result\s+probe probe passed/)).toBeGreaterThan(reset);
  });
});
