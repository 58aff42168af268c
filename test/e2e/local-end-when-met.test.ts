import { describe, expect, it } from 'vitest';
import { startStack } from '../../infra/local/stack.ts';
import { endWhenMetScenario as scenario } from './end-when-met-scenario.ts';

/**
 * endWhenMet: the run ends at the first whole second at which every check holds, so a scenario can
 * give a loaded machine a long deadline without making an idle one wait for it. A run whose checks
 * never hold goes on to the deadline and fails there.
 */
describe('a scenario with endWhenMet', () => {
  it('ends once the XID 79 node is cordoned, long before its one-hour deadline', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await (
      await startStack(scenario('  - { node: t4-0, cordoned: true, tainted: gpu-reflex.io/unhealthy }'), {
        clock: 'virtual',
        out: (l) => void lines.push(l),
      })
    ).run();
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.map((x) => x.ok)).toEqual([true]);
    // The fault is at 2 min; the cordon follows at once (virtual time); the run stops at that check.
    expect(report.scenario.durationSeconds).toBeGreaterThanOrEqual(120);
    expect(report.scenario.durationSeconds).toBeLessThan(300);
    expect(lines.join('\n')).toMatch(/expect: every check holds at \d+\.\ds; the run ends here \(endWhenMet\)/);
    // What a person reads (issue #31): the run's last line is its verdict; a node's first labelling,
    // six labels in one update, is one line, not six.
    expect(lines.at(-1)).toBe('verdict: PASS, 1 of 1 expectations hold');
    const labelled = lines.filter((l) => / node t4-0 labelled /.test(l));
    expect(labelled.length).toBeGreaterThan(0);
    expect(labelled[0]).toMatch(/labelled gpu-reflex\.io\/\S+=\S+, gpu-reflex\.io\//);
  }, 60_000);
});
