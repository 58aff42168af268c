import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { HISTORY_ANNOTATION } from '../../functions/remediate/core/state.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

type History = { incidents: { fence?: Record<string, unknown>; probedAt?: string; unfencedAt?: string }[] };
const historyOf = (r: StackResult, node: string): History =>
  JSON.parse(
    r.report.final.nodes.find((n) => n.metadata.name === node)?.metadata.annotations?.[HISTORY_ANNOTATION] ?? '{}',
  ) as History;

/**
 * A fence is held: ACK's NPD rewrites the file (dropping GPU 0) and later a person empties it; each
 * time the agent writes GPU 0 back within its tick, and the functions report it.
 */
describe('gpu-reflex simulate, fence-held scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('fence-held.yaml', lines);
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('restores a rewritten fence within one agent tick and reports it, every time', () => {
    const rewritten = lineAt(lines, /node-problem-detector replaces .*dropping GPU 0/);
    // The agent's tick is 5 s of virtual time: back within it, and the device plugin counts it out again.
    const written = lineAt(
      lines,
      /GPU Action Result\s+fence another writer removed the GPU from the fence file; written back \(1 time\)/,
    );
    expect(written - rewritten).toBeLessThanOrEqual(5);
    expect(
      lines.filter((l) => /node a100-fit-0 allocatable nvidia\.com\/gpu 7 → 6/.test(l)).length,
    ).toBeGreaterThanOrEqual(2);
    const reports = result.report.actions.filter(
      (a) => a.detailType === 'Remediation' && /holds again .*node agent wrote it back/.test(String(a.detail.reason)),
    );
    expect(reports).toHaveLength(2);
    expect(lines.some((l) => /written back \(2 times\)/.test(l))).toBe(true);
    expect(historyOf(result, 'a100-fit-0').incidents[0]?.fence).toMatchObject({ restoredSeen: expect.any(String) });
    // and where kubectl describe node shows it: a Kubernetes Event on the node each time
    const events = (result.sim?.store.list('events') ?? []) as {
      reason?: string;
      involvedObject?: { kind?: string; name?: string };
    }[];
    expect(
      events.filter((e) => e.reason === 'GpuFenceRestored' && e.involvedObject?.name === 'a100-fit-0'),
    ).toHaveLength(2);
  });
});
