import { describe, expect, it } from 'vitest';
import { startStack } from '../../infra/local/stack.ts';
import { endWhenMetScenario } from './end-when-met-scenario.ts';

/** endWhenMet whose check never holds: the run goes on to the deadline and fails there. Its own file: one stack run per module graph (see local-wall.test.ts). */
describe('a scenario with endWhenMet whose checks never hold', () => {
  it('runs to the deadline when a check never holds, and fails there', async () => {
    const { report, exitCode } = await (
      await startStack(endWhenMetScenario('  - { node: t4-1, cordoned: true }'), {
        clock: 'virtual',
        out: () => undefined,
      })
    ).run();
    expect(report.scenario.durationSeconds).toBe(3600);
    expect(report.summary.expectations).toEqual([expect.objectContaining({ ok: false, detail: 'not cordoned' })]);
    expect(exitCode).toBe(1);
  }, 60_000);
});
