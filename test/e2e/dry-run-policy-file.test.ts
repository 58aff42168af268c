import { beforeAll, describe, expect, it } from 'vitest';
import type { StackReport } from '../../infra/local/report.ts';
import { nodeShape, podsAtStart, simulateDryRun } from './dry-run-simulate.ts';

describe('gpu-reflex simulate in dry run, selected by a policy file dryRun: true', () => {
  let report: StackReport;
  beforeAll(async () => {
    report = await simulateDryRun('policy-file');
  }, 120_000);

  it('leaves every node exactly as it was: no taint, no cordon, no label or annotation', () => {
    expect(nodeShape(report, 'final')).toEqual(nodeShape(report, 'initial'));
  });

  it('leaves every pod that was there where it was: nothing evicted', () => {
    expect(report.evicted).toEqual([]);
    for (const p of podsAtStart(report)) expect(p).toEqual({ uid: p.uid, node: p.node, finalNode: p.node, deleting: false });
  });

  it('still reports each Remediation, marked dry-run, with what it would have done', () => {
    const remediations = report.actions.filter((a) => a.detailType === 'Remediation');
    expect(remediations.length).toBeGreaterThan(0);
    for (const r of remediations) expect(r.detail).toMatchObject({ dryRun: true });
    const drain = remediations.find((r) => r.detail.action === 'drain-node' && (r.detail.target as { node: string }).node === 'a100-train-1');
    const steps = (drain?.detail.steps ?? []) as { kind: string; result: string }[];
    expect(steps.map((s) => s.kind)).toEqual(expect.arrayContaining(['taint', 'cordon', 'evict']));
    expect(steps.filter((s) => s.kind !== 'notify').every((s) => s.result === 'dry-run')).toBe(true);
  });
});
