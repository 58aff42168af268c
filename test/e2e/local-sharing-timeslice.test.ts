import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32 on the embedded stack: one tenant's application XIDs on a time-sliced card (a pid nothing
 * resolves) never move its neighbours; a hardware XID on the other card moves only that card's tenants,
 * fences it across its 4 replicas, and the first card keeps taking pods.
 */
describe('gpu-reflex simulate, sharing-timeslice scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('sharing-timeslice.yaml', lines);
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

  it('counts the unresolved XIDs as one unknown workload, never two', () => {
    expect(
      lines.some((l) => /counted: 3 of 3 toward escalation to restart-workload .*\(1 of 2 workloads\)/.test(l)),
    ).toBe(true);
  });
});
