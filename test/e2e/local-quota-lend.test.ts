import { describe, expect, it } from 'vitest';
import type { QuotaRewrittenDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #14 on the embedded stack, on the virtual clock: team b's new pods are refused by its full
 * quota while team a is idle; rewrite-quotas gives b its usage plus its share of what is free
 * (8 → 16), the pods its controller retries are admitted and run. Then an A100 node falls off
 * the bus: the Remediation triggers a rewrite at once, capacity is 16, and the quotas shrink with
 * it fairly — a's unused guarantee gives way, b keeps the 12 GPUs it runs.
 */
describe('rewrite-quotas on the embedded stack', () => {
  it('lends an idle team’s share to a quota-bound one, whose pods then run, and shrinks fairly when capacity drops', async () => {
    const lines: string[] = [];
    const result = await simulateScenario('quota-lend.yaml', lines);
    const { report, exitCode } = result;
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const rewrites = report.events
      .filter((e) => e.detailType === 'Quota Rewritten')
      .map((e) => e.detail as QuotaRewrittenDetail);
    // b is entitled to what it runs plus half of the 16 free (a keeps its guarantee of 8): 16.
    expect(rewrites.map((r) => [r.namespace, r.changes.map((c) => `${c.from}→${c.to}`).join()])).toEqual([
      ['team-b', '8→16'],
      ['team-a', '8→4'],
      ['team-b', '16→12'],
    ]);
    // The refused pods ran once the quota admitted them.
    expect(lineAt(lines, /pod team-b\/batch-0 refused: .*exceeded quota: gpu-reflex/)).toBe(30);
    expect(lineAt(lines, /pod team-b\/batch-0 created on its controller's retry/)).toBe(300);
    expect(lineAt(lines, /pod team-b\/batch-3 created on its controller's retry/)).toBe(300);
    for (let i = 0; i < 4; i++)
      expect(report.final.pods.find((p) => p.metadata.name === `batch-${i}`)?.spec.nodeName).toBeDefined();
    // The node falls off at 12:00 and the quotas follow at once, not at the next 5-minute round.
    expect(lineAt(lines, /rewrite-quotas\s+Quota Rewritten\s+team-a: requests\.nvidia\.com\/gpu 8 → 4/)).toBe(12 * 60);
    const hard = (ns: string) =>
      (
        result.sim!.store.get('resourcequotas', ns, 'gpu-reflex') as unknown as {
          spec: { hard: Record<string, string> };
        }
      ).spec.hard['requests.nvidia.com/gpu'];
    expect([hard('team-a'), hard('team-b')]).toEqual(['4', '12']);
  }, 60_000);
});
