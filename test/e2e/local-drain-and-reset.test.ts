import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #11, DRAIN_AND_RESET on the embedded stack: NVML's recovery action on GPU 1 fences new
 * work off it at once (allocatable 8 → 7, node schedulable) but moves nothing: the training Job's
 * pod on it runs to its end (20 min). Only then is the GPU reset and probed; the passed probe returns
 * it (7 → 8) and the 7-GPU pod that waited all along runs.
 */
describe('gpu-reflex simulate, drain-and-reset scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('drain-and-reset.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(2);
  });

  it('evicts nothing, resets only after the training pod finished, and keeps the 7-GPU pod out until the probe passed', () => {
    expect(result.report.evicted).toEqual([]);
    expect(lines.some((l) => /node a100-0 cordoned/.test(l))).toBe(false);
    const fenced = at(/node a100-0 allocatable nvidia\.com\/gpu 8 → 7/);
    const reset = at(/a100-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = at(/a100-0\s+GPU Action Result\s+probe probe passed/);
    const back = at(/node a100-0 allocatable nvidia\.com\/gpu 7 → 8/);
    const runs = at(/pod ml-train\/wide scheduled on a100-0/);
    expect(fenced).toBeLessThan(120);
    // The Job's pod exits at 20 min (completeAfterSeconds 1200): the reset comes after, never before.
    expect(reset).toBeGreaterThanOrEqual(1200);
    expect(reset).toBeLessThan(probed);
    expect(probed).toBeLessThanOrEqual(back);
    expect(back).toBeLessThanOrEqual(runs);
    const job = result.report.final.pods.find((p) => p.metadata.name === 'train-epoch-0')!;
    expect(job.status?.phase).toBe('Succeeded');
    const first = result.report.actions.find((a) => a.detailType === 'Remediation')!;
    expect(String(first.detail.reason)).toContain('its 1 running pod is left to finish until 2041-07-01T08:01:00.000Z');
  });
});
