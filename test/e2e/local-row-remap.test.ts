import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27 on the embedded stack: a health condition that must fence. Row-remap failure on GPU 0 of
 * a100-fit-0 → fenced through the ACK file (allocatable 8 → 7), never reset, climbs to replace-node →
 * drained → awaiting-repair (no cloud), a person told; the GPU stays out to the end.
 */
describe('gpu-reflex simulate, row-remap scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('row-remap.yaml', lines);
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(3);
  });

  it('fences the GPU before it climbs, and never asks for a reset', () => {
    const fenced = lineAt(lines, /node a100-fit-0 allocatable nvidia\.com\/gpu 8 → 7/);
    const climbed = lineAt(lines, /remediate\s+replace-node/);
    expect(fenced).toBeLessThanOrEqual(climbed);
    expect(lines.some((l) => /GPU Action Result\s+reset/.test(l))).toBe(false);
    expect(lines.some((l) => /allocatable nvidia\.com\/gpu 7 → 8/.test(l))).toBe(false);
    const remediations = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .map((a) => `${String(a.detail.action)} ${String(a.detail.phase)}`);
    expect(remediations).toContain('replace-node awaiting-repair');
    const last = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .find((a) => a.detail.phase === 'awaiting-repair')!;
    expect(String(last.detail.reason)).toContain('a person must replace it');
  });
});
