import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32 on the embedded stack: NVIDIA's plugin from before its #1929 fix takes one replica of four out;
 * that is no fence, so the node is tainted after fence.verifyMinutes and the words say why.
 */
describe('gpu-reflex simulate, sharing-plugin-1929 scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('sharing-plugin-1929.yaml', lines);
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

  it("names the replicas the plugin left in and NVIDIA's issue", () => {
    const fallback = result.report.actions.find(
      (a) => a.detailType === 'Remediation' && /the node is tainted NoSchedule instead/.test(String(a.detail.reason)),
    );
    expect(String(fallback?.detail.reason)).toContain('the device plugin took only 1 of the 4 replica(s) out');
    expect(String(fallback?.detail.reason)).toContain('k8s-device-plugin#1929');
  });
});
