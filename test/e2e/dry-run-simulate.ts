/**
 * Acceptance of "dry-run in one place" (issue #10): `gpu-reflex simulate` of the default scenario
 * with dry-run selected (by a policy file's `dryRun: true`, or by `DRY_RUN=true`) leaves every node
 * and pod exactly as it was, and the report still shows each Remediation, marked dry-run, with
 * what it would have done.
 *
 * The functions wire themselves once per process from process.env (a Lambda cold start), so each
 * way of selecting dry-run runs in its own test file.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { makeSimulateCommand } from '../../infra/local/cli.ts';
import type { StackReport } from '../../infra/local/report.ts';
import { MIG_INVENTORY_ANNOTATION } from '../../events/index.ts';
import { GPU_DEVICES_ANNOTATION } from '../../events/gpu-devices.ts';
import { LABELER_ANNOTATION } from '../../functions/labels/core/planner.ts';
import { IDLE_ANNOTATION } from '../../functions/lib/idle-record.ts';

export async function simulateDryRun(how: 'policy-file' | 'env'): Promise<StackReport> {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-reflex-dry-run-'));
  const policyFile = join(dir, 'policy.yaml');
  writeFileSync(policyFile, how === 'policy-file' ? 'dryRun: true\n' : 'quietPeriodMinutes: 30\n');
  const saved = { REMEDIATION_POLICY_FILE: process.env.REMEDIATION_POLICY_FILE, DRY_RUN: process.env.DRY_RUN };
  process.env.REMEDIATION_POLICY_FILE = policyFile;
  if (how === 'env') process.env.DRY_RUN = 'true';
  else delete process.env.DRY_RUN;
  try {
    const io: CliIo = { out: () => {}, err: () => {} };
    const reportPath = join(dir, 'report.json');
    // The scenario's own expectations (a cordoned node) fail in a dry run: that is the point.
    await makeSimulateCommand().run(['--report', reportPath], io);
    return JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * What remediation could change on a node: scheduling and gpu-reflex's metadata. The node agents
 * are not in dry run (only the functions are): the MIG inventory their actuators write is their
 * report of the GPUs, not an action, and is left out; every other annotation counts.
 * `remediationOnly`: a remediation policy's `dryRun` is remediation's own; label-nodes,
 * rebalance-mig, idle-gpus and autoscale-pools, configured apart, still act, so the labels label-nodes' record
 * lists and the record itself, the MIG layout's labels (`nvidia.com/mig.config`, the device
 * plugin's `nvidia.com/mig-*.count`) and the simulated mig-manager's annotations, idle-gpus' record
 * (the ended idle runs it keeps for the cost report), and the nodes the pool autoscaler added are left out too.
 */
export function nodeShape(report: StackReport, which: 'initial' | 'final', remediationOnly = false) {
  const labelerKeys = (a: Record<string, string> = {}): string[] =>
    remediationOnly && a[LABELER_ANNOTATION]
      ? Object.keys((JSON.parse(a[LABELER_ANNOTATION]) as { labels: Record<string, string> }).labels)
      : [];
  const migKey = (k: string) =>
    remediationOnly &&
    (k === 'nvidia.com/mig.config' || /^nvidia\.com\/mig-.+\.count$/.test(k) || k.startsWith('sim.gpu-reflex.io/'));
  const annotations = (a: Record<string, string> = {}) =>
    Object.fromEntries(
      Object.entries(a).filter(
        // The agent's own reports (its MIG inventory, PodResources' allocatable devices) are written
        // whatever the functions' dry run: observations, not decisions.
        ([k]) =>
          k !== MIG_INVENTORY_ANNOTATION &&
          k !== GPU_DEVICES_ANNOTATION &&
          !(remediationOnly && (k === LABELER_ANNOTATION || k === IDLE_ANNOTATION)) &&
          !migKey(k),
      ),
    );
  const atStart = new Set(report.initial.nodes.map((n) => n.metadata.name));
  return Object.fromEntries(
    report[which].nodes
      .filter((n) => !remediationOnly || atStart.has(n.metadata.name))
      .map((n) => {
        const finalNode = report.final.nodes.find((f) => f.metadata.name === n.metadata.name);
        const theirs = new Set(labelerKeys(finalNode?.metadata.annotations));
        const labels = Object.fromEntries(
          Object.entries(n.metadata.labels ?? {}).filter(([k]) => !theirs.has(k) && !migKey(k)),
        );
        return [
          n.metadata.name,
          {
            unschedulable: n.spec?.unschedulable ?? false,
            taints: n.spec?.taints ?? [],
            labels,
            annotations: annotations(n.metadata.annotations),
          },
        ];
      }),
  );
}

/** The pods that were there at the start, as they stand at the end (same node, not deleted). */
export function podsAtStart(report: StackReport) {
  const final = new Map(report.final.pods.map((p) => [p.metadata.uid, p]));
  return report.initial.pods.map((p) => ({
    uid: p.metadata.uid,
    node: p.spec.nodeName,
    finalNode: final.get(p.metadata.uid)?.spec.nodeName,
    deleting: final.get(p.metadata.uid)?.metadata.deletionTimestamp !== undefined,
  }));
}

/** The dry-run promise, asserted on one `simulate` run (one per file: the functions wire once per process). */
export function describeDryRun(mode: 'env' | 'policy-file', how: string): void {
  describe(`gpu-reflex simulate in dry run, selected by ${how}`, () => {
    let report: StackReport;
    beforeAll(async () => {
      report = await simulateDryRun(mode);
    }, 120_000);

    it('leaves every node exactly as it was: no taint, no cordon, no label or annotation', () => {
      expect(nodeShape(report, 'final', mode === 'policy-file')).toEqual(
        nodeShape(report, 'initial', mode === 'policy-file'),
      );
    });

    it('leaves every pod that was there where it was: nothing evicted', () => {
      expect(report.evicted).toEqual([]);
      for (const p of podsAtStart(report))
        expect(p).toEqual({ uid: p.uid, node: p.node, finalNode: p.node, deleting: false });
    });

    it('still reports each Remediation, marked dry-run, with what it would have done', () => {
      const remediations = report.actions.filter((a) => a.detailType === 'Remediation');
      expect(remediations.length).toBeGreaterThan(0);
      for (const r of remediations) expect(r.detail).toMatchObject({ dryRun: true });
      const drain = remediations.find(
        (r) => r.detail.action === 'drain-node' && (r.detail.target as { node: string }).node === 'a100-train-1',
      );
      const steps = (drain?.detail.steps ?? []) as { kind: string; result: string }[];
      expect(steps.map((s) => s.kind)).toEqual(expect.arrayContaining(['taint', 'cordon', 'evict']));
      expect(steps.filter((s) => s.kind !== 'notify').every((s) => s.result === 'dry-run')).toBe(true);
    });
  });
}
