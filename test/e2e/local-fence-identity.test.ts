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
 * Issue #27 on the embedded stack, real agents and the ACK device-plugin stand-in: ACK's own isolation
 * holds GPU 5; XID 95 on GPU 0 is fenced and verified by identity (the file lists GPU 0, past the one
 * device already out), repaired, and returned; GPU 5 stays ACK's.
 */
describe('gpu-reflex simulate, fence-identity scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('fence-identity.yaml', lines);
  }, 120_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('verifies our GPU by identity past the device ACK already held out, and leaves ACK its GPU', () => {
    expect(lineAt(lines, /allocatable nvidia\.com\/gpu 8 → 7/)).toBeLessThan(lineAt(lines, /inject XID 95/));
    expect(
      lines.some((l) =>
        /GPU Action Result\s+fence listed .*1 other device\(s\) were already listed there: index:5/.test(l),
      ),
    ).toBe(true);
    expect(lineAt(lines, /allocatable nvidia\.com\/gpu 7 → 6/)).toBeLessThanOrEqual(
      lineAt(lines, /probe probe passed/),
    );
    const inc = historyOf(result, 'a100-fit-0').incidents[0]!;
    expect(inc.fence).toMatchObject({ backend: 'ack-file', outBefore: 1, verifiedAt: expect.any(String) });
    expect(inc.fence?.fallback).toBeUndefined();
    expect(inc).toMatchObject({ probedAt: expect.any(String), unfencedAt: expect.any(String) });
    expect(lines.some((l) => /node a100-fit-0 tainted/.test(l))).toBe(false);
  });
});
