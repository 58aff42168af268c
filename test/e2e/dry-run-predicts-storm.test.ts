import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StackReport } from '../../infra/local/report.ts';

/**
 * Issue #31's shadow promise: the dry run predicts the live run. The storm scenario (XID 79 on 3 of
 * 5 nodes of a pool) is simulated twice, live and with DRY_RUN=true, each in its own process (the
 * functions wire once per process, as a Lambda container does), and the two reports are compared:
 * the same drains, the same holds for approval, in the same order. Before the dry-run overlay each
 * dry decision saw the ledger as the cluster held it (nobody out) and all three nodes "drained".
 */
const ROOT = join(import.meta.dirname, '..', '..');
const work = mkdtempSync(join(tmpdir(), 'gpu-reflex-storm-'));

async function simulate(dry: boolean): Promise<StackReport> {
  const report = join(work, `${dry ? 'dry' : 'live'}.json`);
  // The defaults' policy, whatever the caller's environment names.
  const { REMEDIATION_POLICY_FILE: _policy, ...rest } = process.env;
  const env = { ...rest, DRY_RUN: dry ? 'true' : 'false', NO_COLOR: '1' };
  await promisify(execFile)(
    process.execPath,
    ['bin/gpu-reflex.js', 'simulate', '--scenario', 'infra/local/scenarios/storm.yaml', '--report', report],
    { cwd: ROOT, env, timeout: 120_000 },
  ).catch((err: { code?: number }) => {
    // The dry run fails the scenario's own `cordoned` check: nothing was cordoned, that is the point.
    if (!dry || err.code !== 1) throw err;
  });
  return JSON.parse(readFileSync(report, 'utf8')) as StackReport;
}

interface Decision {
  node: string;
  action: string;
  phase: string;
}
const decisions = (r: StackReport): Decision[] =>
  r.actions
    .filter((a) => a.detailType === 'Remediation')
    .map((a) => {
      const d = a.detail as { target: { node: string }; action: string; phase: string };
      return { node: d.target.node, action: d.action, phase: d.phase };
    });
const reasons = (r: StackReport) =>
  r.actions.filter((a) => a.detailType === 'Remediation').map((a) => (a.detail as { reason: string }).reason);

describe('the storm in dry run predicts the live run', () => {
  let live: StackReport;
  let dry: StackReport;
  beforeAll(async () => {
    [live, dry] = await Promise.all([simulate(false), simulate(true)]);
  }, 150_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it('drains and holds exactly the nodes the live run drains and holds', () => {
    expect(decisions(live)).toEqual([
      { node: 't4-0', action: 'drain-node', phase: 'acted' },
      { node: 't4-1', action: 'drain-node', phase: 'awaiting-approval' },
      { node: 't4-2', action: 'drain-node', phase: 'awaiting-approval' },
    ]);
    expect(decisions(dry)).toEqual(decisions(live));
    // The holds' reasons are the live run's, word for word.
    expect(reasons(dry).slice(1)).toEqual(reasons(live).slice(1));
  });

  it('changes nothing, and says "would", never "Now draining"', () => {
    expect(dry.final.nodes.every((n) => !n.spec?.unschedulable && (n.spec?.taints ?? []).length === 0)).toBe(true);
    expect(dry.evicted).toEqual([]);
    expect(reasons(dry)[0]).toContain('Would drain node t4-0: taint, cordon, evict 2 pods');
    expect(reasons(dry).join(' ')).not.toContain('Now ');
    expect(dry.timeline.map((e) => e.text).filter((t) => t.startsWith('drain-node'))).toEqual([
      'drain-node would act: taint, cordon, evict 2 pods (dry run: nothing changed)',
      'drain-node would wait for approval: ask for approval (dry run: nothing changed)',
      'drain-node would wait for approval: ask for approval (dry run: nothing changed)',
    ]);
  });
});
