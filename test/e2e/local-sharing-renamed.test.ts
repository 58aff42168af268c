import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32 on the embedded stack: renamed replicas (`nvidia.com/gpu.shared`) are counted: the fence of one
 * card verifies, and the node is not tainted for want of "GPU capacity".
 */
describe('gpu-reflex simulate, sharing-timeslice-renamed scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('sharing-timeslice-renamed.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('says, in the remediation that moves the broken card, how many teams it moves', () => {
    const moved = result.report.actions.find(
      (a) => a.detailType === 'Remediation' && /The GPU is shared/.test(String(a.detail.reason)),
    );
    expect(String(moved?.detail.reason)).toContain('2 pod(s) of 2 teams (team-b, team-d)');
  });
});
