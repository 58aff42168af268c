import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';
import { MIG_INVENTORY_ANNOTATION, type MigInventory } from '../../events/index.ts';

/**
 * Issue #11, a MIG GPU on the embedded stack: XID 95 on GPU 0 of an H100 carved 7×1g.10gb per GPU.
 * The reset destroys GPU 0's instances in the mock NVML; the agent lists it empty; gpu-reflex
 * restarts mig-manager's pod after the passed probe; the simulated mig-manager applies the node's
 * config again (the same layout), the mock lists the instances again, and only then is the GPU back.
 */
describe('gpu-reflex simulate, mig-reset scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('mig-reset.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);
  const node = () => result.report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(3);
  });

  it('fence → pods moved → reset → instances gone → mig-manager restarted → instances back → restored, in that order', () => {
    const fenced = at(/node h100-0 allocatable nvidia\.com\/mig-1g\.10gb 28 → 21/);
    const moved = at(/pod research\/notebook-6 terminating on h100-0/);
    const reset = at(/h100-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = at(/h100-0\s+GPU Action Result\s+probe probe passed/);
    const empty = at(/h100-0\s+GPU Utilization Summary .* of 21 MIG instances in use/);
    const restarted = at(/restarting gpu-operator\/nvidia-mig-manager-/);
    const restored = at(/remediate\s+restore restored/);
    // the fenced instances return to the allocatable after the restore (the unfence), not before
    const restoredLine = lines.findIndex((l) => /remediate\s+restore restored/.test(l));
    const lastBack = lines
      .map((l) => /node h100-0 allocatable nvidia\.com\/mig-1g\.10gb 21 → 28/.test(l))
      .lastIndexOf(true);
    expect(moved).toBeLessThanOrEqual(fenced);
    expect(fenced).toBeLessThan(reset);
    expect(reset).toBeLessThan(probed);
    expect(reset).toBeLessThan(empty);
    expect(probed).toBeLessThanOrEqual(restarted);
    expect(restarted).toBeLessThan(restored);
    expect(lastBack).toBeGreaterThan(restoredLine);
    // the restore names the instances the agent listed after the restart
    expect(lines.join('\n')).toMatch(
      /mig-manager applied\s+all-1g\.10gb again: the node agent lists its MIG instances at/,
    );
  });

  it("records the restart and the instances' return; a new mig-manager pod runs; GPU 0 has its seven instances, the other GPUs kept theirs", () => {
    const history = JSON.parse(node().metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as {
      incidents: Record<string, string>[];
    };
    const i = history.incidents[0]!;
    expect(i).toMatchObject({
      phase: 'closed',
      resetAt: expect.any(String),
      probedAt: expect.any(String),
      migRestartedAt: expect.any(String),
      migBackAt: expect.any(String),
      unfencedAt: expect.any(String),
    });
    expect(Date.parse(i.migRestartedAt!)).toBeGreaterThanOrEqual(Date.parse(i.probedAt!));
    expect(Date.parse(i.migBackAt!)).toBeGreaterThan(Date.parse(i.migRestartedAt!));
    expect(Date.parse(i.closedAt!)).toBeGreaterThanOrEqual(Date.parse(i.migBackAt!));
    const managers = result.report.final.pods.filter(
      (p) => p.metadata.namespace === 'gpu-operator' && p.spec.nodeName === 'h100-0',
    );
    expect(managers).toHaveLength(1);
    const evicted = result.report.actions
      .filter((a) => a.detailType === 'Remediation')
      .flatMap((a) => (a.detail.target as { pods: { namespace: string; name: string }[] }).pods)
      .filter((p) => p.namespace === 'gpu-operator');
    expect(evicted.map((p) => p.name)).not.toContain(managers[0]!.metadata.name);
    expect(evicted).toHaveLength(1);
    const inv = JSON.parse(node().metadata.annotations?.[MIG_INVENTORY_ANNOTATION] ?? '{}') as MigInventory;
    expect(inv.gpus.map((g) => g.instances.length)).toEqual([7, 7, 7, 7]);
    // the notebooks on GPU 1 were never moved
    expect(
      result.report.final.pods.filter((p) => p.metadata.namespace === 'research' && p.spec.nodeName === 'h100-0'),
    ).toHaveLength(3);
  });
});
