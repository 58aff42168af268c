import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/** Acceptance (issue #27): XIDs 13, 31, 43 and 45, once each, fence, reset, evict and cordon nothing. */
describe('gpu-reflex simulate, accept-xid-noise scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('accept-xid-noise.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('asks nothing of the node agent, evicts no pod and leaves no mark on the node', () => {
    // Timeline lines only (mm:ss.s first): the summary's own "pods evicted: 0" is not an eviction.
    const timeline = lines.filter((l) => /^\d\d:\d\d\.\d/.test(l.trim()));
    expect(timeline.filter((l) => /terminating|evict|cordoned|tainted|gpu-action/.test(l))).toEqual([]);
    expect(timeline.filter((l) => /GPU XID Error/.test(l))).toHaveLength(4);
    expect(result.report.actions.filter((a) => a.detailType === 'GPU Action Result')).toEqual([]);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'a100-bad-0')!;
    expect(node.metadata.labels?.['gpu-reflex.io/state'] ?? 'healthy').toBe('healthy');
    expect(node.metadata.annotations?.['gpu-reflex.io/gpu-actions'] ?? '[]').toBe('[]');
  });
});
