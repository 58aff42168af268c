import { describe, expect, it } from 'vitest';
import type { GpuIdleAllocationDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #33 on the embedded stack, on the virtual clock: three notebooks hold a T4 each at 0%
 * utilization. At 2 h idle-gpus tells each owner with the cost; namespace research opted in to
 * eviction an hour later: notebook-a, still idle, is evicted at 3 h; notebook-b's GPU works again at
 * 2.5 h, which cancels its eviction; team vision's notebook-c is told and never evicted.
 */
describe('idle-gpus on the embedded stack', () => {
  it('tells the owners with the cost, evicts the opted-in idle notebook at its deadline, cancels the one that came back', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('idle-notebook.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const idle = report.events
      .filter((e) => e.detailType === 'GPU Idle Allocation')
      .map((e) => e.detail as GpuIdleAllocationDetail);
    expect(idle.map((d) => [d.state, d.pod.name, d.team])).toEqual([
      ['idle', 'notebook-a', 'research'],
      ['idle', 'notebook-b', 'research'],
      ['idle', 'notebook-c', 'vision'],
      ['cancelled', 'notebook-b', 'research'],
      ['evicted', 'notebook-a', 'research'],
    ]);
    // Two hours at the scenario's price (8.5 CNY per GPU-hour), the first window from 30 s on.
    for (const d of idle.slice(0, 3)) expect(d.cost).toMatchObject({ gpuHours: 2.008, amount: 17.07, currency: 'CNY' });
    expect(idle[0]!.evictAt).toBe('2026-01-01T03:00:30.000Z');
    expect(idle[2]!.evictAt).toBeUndefined();
    // Told at the window that completed two idle hours, evicted at the first window past the deadline.
    expect(
      lineAt(lines, /idle-gpus\s+GPU Idle Allocation\s+idle: research\/notebook-a on t4-0, 2\.0 h idle, 17\.07 CNY/),
    ).toBe(121 * 60);
    expect(lineAt(lines, /idle-gpus\s+GPU Idle Allocation\s+cancelled: research\/notebook-b/)).toBe(152 * 60);
    expect(lineAt(lines, /idle-gpus\s+GPU Idle Allocation\s+evicted: research\/notebook-a on t4-0, 3\.0 h idle/)).toBe(
      181 * 60,
    );
    const running = (app: string) =>
      report.final.pods.filter((p) => p.metadata.labels?.app === app && !p.metadata.deletionTimestamp).length;
    expect([running('notebook-a'), running('notebook-b'), running('notebook-c')]).toEqual([0, 1, 1]);
  }, 240_000);
});
