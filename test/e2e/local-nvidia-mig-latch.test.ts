import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #27 on the embedded stack: NVIDIA's plugin latches one MIG instance of the faulty GPU (its
 * upstream behaviour, modelled by the device-plugin stand-in); a count of one missing device would
 * pass for a fence. gpu-reflex taints the node at once, and the notebook that arrives waits.
 */
describe('gpu-reflex simulate, nvidia-mig-latch scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('nvidia-mig-latch.yaml', lines);
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('taints the node at once, says why, and nothing lands on the node after the fault', () => {
    // At once: in the XID's second, or at the retry of a patch that met the device plugin's own
    // allocatable update (a 409 conflict: the retry comes 0.8 s later).
    expect(lineAt(lines, /node h100-0 tainted gpu-reflex\.io\/unhealthy/)).toBeLessThanOrEqual(
      lineAt(lines, /inject XID 95/) + 1,
    );
    const q = result.report.actions.find(
      (a) => a.detailType === 'Remediation' && a.detail.action === 'quarantine-gpu',
    )!;
    expect(String(q.detail.reason)).toContain("NVIDIA's device plugin latches only one of its instances");
    expect(lines.some((l) => /pod research\/late-notebook scheduled/.test(l))).toBe(false);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;
    const history = JSON.parse(node.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}') as {
      incidents: { fence?: { fallback?: string } }[];
    };
    expect(history.incidents[0]?.fence?.fallback).toBe('plugin-latches-one-mig-device');
  });
});
