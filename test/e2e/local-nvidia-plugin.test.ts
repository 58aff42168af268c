import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';

/**
 * Issue #11, NVIDIA's device plugin backend on the embedded stack: the stand-in plugin latches GPU 0
 * on XID 95 by itself (allocatable 8 → 7); gpu-reflex writes no fence file, verifies the latch in
 * the allocatable, repairs the GPU (reset, probe), and only then evicts the plugin's pod; its
 * DaemonSet recreates it, the new plugin counts the GPU again (7 → 8) and an 8-GPU pod runs.
 */
describe('gpu-reflex simulate, nvidia-plugin scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('nvidia-plugin.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);
  const remediations = () => result.report.actions.filter((a) => a.detailType === 'Remediation');

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(2);
  });

  it('the latch is undone only after the verified reset: the plugin pod is restarted after the passed probe, then the GPU returns', () => {
    const latched = at(/node a100-nv-0 allocatable nvidia\.com\/gpu 8 → 7/);
    const reset = at(/a100-nv-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = at(/a100-nv-0\s+GPU Action Result\s+probe probe passed/);
    const restored = at(/remediate\s+restore restored/);
    const back = at(/node a100-nv-0 allocatable nvidia\.com\/gpu 7 → 8/);
    const runs = at(/pod ml-train\/whole-node scheduled on a100-nv-0/);
    expect(latched).toBeLessThan(reset);
    expect(reset).toBeLessThan(probed);
    expect(probed).toBeLessThanOrEqual(restored);
    expect(restored).toBeLessThan(back);
    expect(back).toBeLessThanOrEqual(runs);
    // gpu-reflex asked for no fence file, and never tainted or cordoned the node
    const [quarantine, restore] = remediations();
    expect((quarantine!.detail.steps as { kind: string }[]).map((s) => s.kind)).not.toContain('fence');
    expect(String(quarantine!.detail.reason)).toContain("NVIDIA's device plugin takes");
    expect(lines.some((l) => /node a100-nv-0 (cordoned|tainted)/.test(l))).toBe(false);
    // the restore evicts the plugin's pod on the node, and nothing else
    expect(restore!.detail).toMatchObject({ action: 'restore', phase: 'restored' });
    expect((restore!.detail.target as { pods: { namespace: string; name: string }[] }).pods).toEqual([
      { namespace: 'kube-system', name: expect.stringMatching(/^nvidia-device-plugin-daemonset-/) },
    ]);
    expect(String(restore!.detail.reason)).toContain("NVIDIA's device plugin keeps it unhealthy until it restarts");
    // a new plugin pod runs there, and the incident records the verified fence, the restart and the unfence
    const plugins = result.report.final.pods.filter(
      (p) => p.metadata.namespace === 'kube-system' && p.spec.nodeName === 'a100-nv-0',
    );
    expect(plugins).toHaveLength(1);
    expect(plugins[0]!.metadata.name).not.toBe((restore!.detail.target as { pods: { name: string }[] }).pods[0]!.name);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'a100-nv-0')!;
    const history = JSON.parse(node.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as {
      incidents: { fence?: Record<string, string>; unfencedAt?: string }[];
    };
    expect(history.incidents[0]).toMatchObject({
      fence: { backend: 'nvidia-plugin', verifiedAt: expect.any(String), restartedAt: expect.any(String) },
      unfencedAt: expect.any(String),
    });
  });
});
