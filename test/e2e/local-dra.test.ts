import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';

/**
 * Issue #11, the DRA backend on the embedded stack: XID 95 on GPU 0 → a DeviceTaintRule on the
 * GPU's device in the node's ResourceSlice (the simulated scheduler then allocates it to no claim), no
 * node taint or cordon, no fence file; the agent resets and probes the GPU; only the passed probe
 * deletes the rule, and only then is the 8-GPU claim allocated and its pod run.
 */
describe('gpu-reflex simulate, dra scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('dra.yaml', lines);
  }, 120_000);

  const at = (re: RegExp) => lineAt(lines, re);
  const remediations = () => result.report.actions.filter((a) => a.detailType === 'Remediation');
  type Step = { kind: string; result: string; message?: string };

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(2);
  });

  it('fences with a DeviceTaintRule at once, keeps it through the repair, and deletes it only after the passed probe', () => {
    // A DRA node advertises no nvidia.com/gpu: the fence is the device's taint, and the 8-GPU claim
    // is allocated (by the simulated scheduler, from the ResourceSlice) only once the rule is gone.
    const out = at(/device gpu\.nvidia\.com\/a100-dra-0\/gpu-0 tainted gpu-reflex\.io\/unhealthy=xid-95:NoSchedule/);
    const reset = at(/a100-dra-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = at(/a100-dra-0\s+GPU Action Result\s+probe probe passed/);
    const back = at(/device gpu\.nvidia\.com\/a100-dra-0\/gpu-0 untainted/);
    const allocated = at(
      /claim ml-train\/whole-node-gpus-\w{5} allocated gpu\.nvidia\.com\/a100-dra-0\/gpu-0, .*gpu-7$/,
    );
    const runs = at(/pod ml-train\/whole-node scheduled on a100-dra-0/);
    expect(lines.some((l) => /allocatable nvidia\.com\/gpu/.test(l))).toBe(false);
    expect(out).toBe(60);
    expect(out).toBeLessThan(reset);
    expect(reset).toBeLessThan(probed);
    expect(probed).toBeLessThanOrEqual(back);
    expect(back).toBeLessThanOrEqual(allocated);
    expect(allocated).toBeLessThanOrEqual(runs);
    expect(runs).toBeGreaterThan(120); // it came at 2:00 and waited for the rule's deletion
    const [quarantine, restore] = remediations();
    const fence = (quarantine!.detail.steps as Step[]).find((s) => s.kind === 'fence');
    expect(fence).toMatchObject({
      result: 'done',
      message: expect.stringMatching(
        /^DeviceTaintRule gpu-reflex-[0-9a-f]{16}-[0-9a-f]{16}: gpu-reflex\.io\/unhealthy=xid-95:NoSchedule on DRA device gpu\.nvidia\.com\/a100-dra-0\/gpu-0$/,
      ),
    });
    expect((restore!.detail.steps as Step[]).find((s) => s.kind === 'unfence')).toMatchObject({
      result: 'done',
      message: expect.stringContaining('deleted'),
    });
    // no node taint, no cordon, and nothing asked of the agent but the repair
    expect(lines.some((l) => /node a100-dra-0 (cordoned|tainted)/.test(l))).toBe(false);
    expect(lines.some((l) => /GPU Action Result\s+(fence|unfence)/.test(l))).toBe(false);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'a100-dra-0')!;
    const history = JSON.parse(node.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as {
      incidents: { fence?: Record<string, string>; unfencedAt?: string; resetAt?: string; probedAt?: string }[];
    };
    expect(history.incidents[0]).toMatchObject({
      fence: { backend: 'dra', verifiedAt: expect.any(String) },
      resetAt: expect.any(String),
      probedAt: expect.any(String),
      unfencedAt: expect.any(String),
    });
  });
});
