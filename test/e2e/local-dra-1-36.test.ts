import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';
/**
 * local-dra.test.ts's scenario on Kubernetes 1.36 (DeviceTaintRule at v1beta2 only) with the policy's default v1: the adapter
 * finds the version served and fences by a rule, never by a node taint (issue #28's kubernetesVersion). Its own file: the
 * functions' wiring is cached per process, so one scenario per file.
 */
describe('gpu-reflex simulate, dra-1-36 scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('dra-1-36.yaml', lines);
  }, 120_000);

  it('fences with a v1beta2 DeviceTaintRule, never a node taint, and meets every expectation', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const quarantine = result.report.actions.find((a) => a.detailType === 'Remediation');
    const fence = (quarantine!.detail.steps as { kind: string; result: string; message?: string }[]).find(
      (s) => s.kind === 'fence',
    );
    expect(fence).toMatchObject({ result: 'done', message: expect.stringMatching(/^DeviceTaintRule gpu-reflex-/) });
    expect(lines.some((l) => /node a100-dra-0 (cordoned|tainted)/.test(l))).toBe(false);
    expect(lineAt(lines, /device gpu\.nvidia\.com\/a100-dra-0\/gpu-0 tainted .*:NoSchedule/)).toBe(60);
  });
});
