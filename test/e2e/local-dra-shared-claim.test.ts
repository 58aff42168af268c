import { describe, expect, it } from 'vitest';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32, a shared DRA claim end to end on the embedded stack: three pods share one ResourceClaim on
 * GPU 0, only one runs a GPU process (the XID's pid names only it), the simulated kubelet's PodResources
 * lists all three with the claim. A GPU leaving service moves every consumer of the claim, so the claim
 * can be deallocated from the broken GPU; the trainers on other GPUs keep running.
 */
describe('gpu-reflex simulate, dra-shared-claim scenario', () => {
  it('meets every expectation: every consumer of the claim is evicted, the reason says why', async () => {
    const lines: string[] = [];
    const result = await simulateScenario('dra-shared-claim.yaml', lines);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const terminating = lines.filter((l) => /pod \S+ terminating on/.test(l)).map((l) => /pod (\S+)/.exec(l)![1]);
    expect(terminating.sort()).toEqual(['ml-serve/serve-0', 'ml-serve/serve-warm-0', 'ml-serve/serve-warm-1']);
    const remediation = result.report.actions.find((a) => a.detailType === 'Remediation')!;
    expect(String(remediation.detail.reason)).toContain(
      'DRA claim ml-serve/serve-gpu is shared: 2 more of its pods move with it',
    );
  }, 120_000);
});
