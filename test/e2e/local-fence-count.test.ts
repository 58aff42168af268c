import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27 on the embedded stack: ACK's isolation of GPU 5 makes "one device missing, one expected",
 * and no actuator fences GPU 0. A count would call GPU 0 fenced; by identity it is not, so the node
 * is tainted after fence.verifyMinutes and a person is told.
 */
describe('gpu-reflex simulate, fence-count scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('fence-count.yaml', lines);
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it("never takes ACK's isolation of another GPU for our fence: the node is tainted once the window passed, and the reason says why", () => {
    const tainted = lineAt(lines, /node a100-fit-0 tainted gpu-reflex\.io\/unhealthy/);
    expect(tainted - lineAt(lines, /inject XID 95/)).toBeGreaterThanOrEqual(120);
    const fallback = result.report.actions.find(
      (a) => a.detailType === 'Remediation' && /the node is tainted NoSchedule instead/.test(String(a.detail.reason)),
    )!;
    expect(String(fallback.detail.reason)).toContain(
      'the node agent has not answered the fence yet; 1 GPU device(s) missing from its allocatable, 2 expected (1 held out by gpu-reflex, 1 already out before the fence',
    );
  });
});
