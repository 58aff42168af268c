import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeSimulateCommand } from '../../infra/local/cli.ts';
import type { StackReport } from '../../infra/local/report.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

/**
 * The storm scenario (XID 79 on 60% of a T4 pool) on the virtual clock: the blast-radius limit
 * lets one node drain and holds the others for approval; serving keeps its budget. Its own file:
 * the functions wire themselves once per process (see local-wall.test.ts).
 */
describe('gpu-reflex simulate, storm scenario', () => {
  it('drains the first faulty node only, asks approval for the rest, keeps the serving budget', async () => {
    const reportPath = join(mkdtempSync(join(tmpdir(), 'local-storm-')), 'report.json');
    const io = { out: () => undefined, err: () => undefined };
    expect(
      await makeSimulateCommand().run(
        ['--scenario', join(REPO_ROOT, 'infra/local/scenarios/storm.yaml'), '--report', reportPath],
        io,
      ),
    ).toBe(0);
    const r = JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
    const cordoned = r.final.nodes.filter((n) => n.spec?.unschedulable).map((n) => n.metadata.name);
    expect(cordoned).toEqual(['t4-0']);
    const phases = r.actions
      .filter((a) => a.detailType === 'Remediation')
      .map((a) => `${String(a.detail.target && (a.detail.target as { node: string }).node)} ${String(a.detail.phase)}`);
    expect(phases).toEqual(['t4-0 acted', 't4-1 awaiting-approval', 't4-2 awaiting-approval']);
    expect(r.events.filter((e) => e.detailType === 'Approval Requested')).toHaveLength(2);
    const serving = r.final.pods.filter(
      (p) => p.metadata.labels?.app === 'llm-serve' && p.spec.nodeName && !p.metadata.deletionTimestamp,
    );
    expect(serving.length).toBeGreaterThanOrEqual(6);
  }, 60_000);
});
