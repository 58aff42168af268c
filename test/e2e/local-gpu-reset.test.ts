import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #11 on the embedded stack, real agents (their actuators) and the device-plugin stand-in:
 * XID 95 on GPU 0 of a100-fit-0 → fenced (allocatable 8 → 7, node schedulable), its pod evicted, an
 * 8-GPU pod waits → reset → probe passed → allocatable 8, the 8-GPU pod runs. On a100-bad-0 the GPU
 * does not come back from its reset → reboot-node → drained → awaiting-repair, a person told.
 */
describe('gpu-reflex simulate, gpu-reset scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('gpu-reset.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(3);
  });

  it('fences the GPU (allocatable 7, node schedulable), keeps an 8-GPU pod out until a passed probe returns it', () => {
    const fenced = at(/node a100-fit-0 allocatable nvidia\.com\/gpu 8 → 7/);
    const reset = at(/a100-fit-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = at(/a100-fit-0\s+GPU Action Result\s+probe probe passed/);
    const restored = at(/remediate\s+restore restored/);
    const back = at(/node a100-fit-0 allocatable nvidia\.com\/gpu 7 → 8/);
    const runs = at(/pod ml-train\/whole-node scheduled on a100-fit-0/);
    expect(fenced).toBeLessThan(reset);
    expect(reset).toBeLessThan(probed);
    expect(probed).toBeLessThanOrEqual(restored);
    expect(restored).toBeLessThanOrEqual(back);
    expect(back).toBeLessThanOrEqual(runs);
    expect(lines.some((l) => /node a100-fit-0 cordoned/.test(l))).toBe(false);
    const pod = result.report.final.pods.find((p) => p.metadata.name === 'whole-node')!;
    expect(pod.spec.nodeName).toBe('a100-fit-0');
    const condition = (name: string) =>
      (
        result.report.final.nodes.find((n) => n.metadata.name === name)?.status as {
          conditions?: { type: string; status: string; message?: string }[];
        }
      ).conditions?.find((c) => c.type === 'GpuReflexGpuFenced');
    expect(condition('a100-fit-0')).toMatchObject({ status: 'False' });
    // Still held out on the node waiting for a person, and said so where kubectl describe node shows it.
    expect(condition('a100-bad-0')).toMatchObject({ status: 'True', message: expect.stringContaining('GPU-') });
  });

  it('a GPU that does not come back from its reset climbs to reboot-node and waits for a person', () => {
    const remediations = result.report.actions
      .filter((a) => a.detailType === 'Remediation' && (a.detail.target as { node: string }).node === 'a100-bad-0')
      .map((a) => `${String(a.detail.action)} ${String(a.detail.phase)}`);
    expect(remediations).toEqual(['quarantine-gpu acted', 'reboot-node acted', 'reboot-node awaiting-repair']);
    const last = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .find((a) => a.detail.phase === 'awaiting-repair')!;
    expect(String(last.detail.reason)).toContain('a person must reboot it');
    const failed = result.report.actions.find((a) => a.detail.action === 'reboot-node' && a.detail.phase === 'acted')!;
    expect(String(failed.detail.reason)).toContain('did not come back from its reset');
  });
});
