import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';
import { GPU_DEVICES_ANNOTATION, readGpuDevices } from '../../events/index.ts';
import { simulateScenario } from './scenario-run.ts';

type History = { incidents: { gpu?: string; fence?: { verifiedAt?: string; fallback?: string } }[] };

/**
 * Issue #27: under NVIDIA's plugin a fence is verified by PodResources' allocatable device IDs (the agent's
 * gpu-reflex.io/allocatable-devices), not by the Node's count, which GPU 5's latch alone would pass.
 */
describe('gpu-reflex simulate, nvidia-identity scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('nvidia-identity.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it("verifies GPU 0's fence by identity, with no fallback taint, and the agent's word is on the Node", () => {
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'a100-nv-0')!;
    const history = JSON.parse(node.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as History;
    const quarantine = history.incidents.find((i) => i.fence !== undefined);
    expect(quarantine?.fence?.verifiedAt).toEqual(expect.any(String));
    expect(quarantine?.fence?.fallback).toBeUndefined();
    expect(lines.some((l) => /tainted gpu-reflex\.io\/unhealthy/.test(l))).toBe(false);
    const devices = readGpuDevices(node.metadata.annotations ?? {});
    expect(node.metadata.annotations?.[GPU_DEVICES_ANNOTATION]).toBeDefined();
    // At the end every GPU is back: each lists its device allocatable again.
    expect(devices).toMatchObject({ known: true });
    expect(Object.values(devices!.gpus).every((ids) => ids.length === 1)).toBe(true);
  });
});
