import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Dry run at the wiring for autoscale-pools (issue #10's rule, issue #13's function): with
 * DRY_RUN=true the cloud port is the recording decorator, so the pool-autoscale scenario buys
 * nothing — no instance boots, no node joins, the pods keep waiting — while GPU Pool Scaled is still
 * published, marked dry-run, saying what would have been done. (Own file: the functions wire once
 * per process.)
 */
describe('autoscale-pools in dry run (DRY_RUN=true)', () => {
  let result: StackResult;
  const saved = process.env.DRY_RUN;
  beforeAll(async () => {
    process.env.DRY_RUN = 'true';
    result = await simulateScenario('pool-autoscale.yaml', []);
  }, 120_000);
  afterAll(() => {
    if (saved === undefined) delete process.env.DRY_RUN;
    else process.env.DRY_RUN = saved;
  });

  it('grows no pool: no node joins and the pods still wait', () => {
    const { report } = result;
    expect(
      report.final.nodes
        .filter((n) => n.metadata.labels?.['alibabacloud.com/nodepool-id'] === 'np-t4-inference')
        .map((n) => n.metadata.name),
    ).toEqual(['t4-infer-0', 't4-infer-1']);
    expect(
      report.final.pods.filter((p) => p.metadata.name.startsWith('batch-embed')).map((p) => p.spec.nodeName ?? null),
    ).toEqual([null, null, null]);
  });

  it('still reports what it would have done, marked dry-run', () => {
    const scaled = result.report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.length).toBeGreaterThan(0);
    for (const e of scaled)
      expect(e).toMatchObject({ nodepoolId: 'np-t4-inference', state: 'requested', from: 2, to: 5, dryRun: true });
  });
});
