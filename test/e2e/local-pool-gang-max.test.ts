import { describe, expect, it } from 'vitest';
import { lineAt, simulateScenario } from './scenario-run.ts';

/** Issue #33: a PodGroup the pool's max cannot hold buys nothing, and says why (scenario pool-gang-max.yaml). */
describe('gangs in scale-out on the embedded stack (issue #33)', () => {
  it('does not grow a pool whose max leaves 3 of the 4 nodes a PodGroup needs, and says why', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-gang-max.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    expect(report.events.filter((e) => e.detailType === 'GPU Pool Scaled')).toEqual([]);
    const why = /PodGroup ml-infer\/train needs 4 nodes of pool a100-train, its max of 3 leaves 3: not growing/;
    expect(lineAt(lines, why)).toBe(60);
  }, 180_000);
});
