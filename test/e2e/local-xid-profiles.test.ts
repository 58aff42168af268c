import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #36, policy profiles on the embedded stack: the same XID 13 on two pools gets each pool's
 * profile's action, and each Remediation event names the profile that decided (docs/remediation.md
 * "Profiles"). Real agents, real functions, the policy as the scenario writes it.
 */
describe('gpu-reflex simulate, xid-profiles scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('xid-profiles.yaml', lines);
  }, 120_000);

  const remediations = (node: string) =>
    result.report.actions
      .filter((a) => a.detailType === 'Remediation' && (a.detail.target as { node: string }).node === node)
      .map((a) => ({ action: String(a.detail.action), profile: a.detail.profile, reason: String(a.detail.reason) }));
  const terminating = (prefix: string) =>
    lines
      .filter((l) => new RegExp(`pod ml/${prefix}-\\S+ terminating`).test(l))
      .map((l) => /pod (ml\/\S+)/.exec(l)![1]);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(5);
  });

  it('pool train: its profile restarts the workload of GPU 1, and the event and its words name the profile', () => {
    expect(remediations('a100-train-0')).toEqual([
      expect.objectContaining({ action: 'restart-workload', profile: 'train-a100-13' }),
    ]);
    expect(remediations('a100-train-0')[0]!.reason).toContain('XID 13 (profile train-a100-13) → restart-workload');
    expect(terminating('train')).toEqual(['ml/train-1']);
  });

  it('pool serve: the same XID is only observed, by the class profile; nothing moves', () => {
    expect(remediations('a100-serve-0')).toEqual([
      expect.objectContaining({ action: 'observe', profile: 'serve-app' }),
    ]);
    expect(terminating('serve')).toEqual([]);
  });
});
