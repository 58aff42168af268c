import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../events/cli-kit/command.ts';
import { validateEvent } from '../../events/validate.ts';
import { main } from '../../bin/main.ts';
import { makeSimulateCommand } from '../../infra/local/cli.ts';
import type { Pod } from '../../infra/local/kube/types.ts';
import type { StackReport } from '../../infra/local/report.ts';
import type { StackResult } from '../../infra/local/stack.ts';

/**
 * The default scenario end to end on the virtual clock: faults injected at the NVML layer of
 * mock GPUs, the agents' events on the local bus, the functions of serverless.yml, the simulated
 * cluster. Assertions read the JSON report and the cluster's stored objects, never printed text.
 */
const capture = () => {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (l) => out.push(l), err: (l) => err.push(l) };
  return { io, out, err };
};

const dir = mkdtempSync(join(tmpdir(), 'local-stack-test-'));

describe('gpu-reflex simulate, default scenario', () => {
  let report: StackReport;
  let result: StackResult;
  let code: number;

  beforeAll(async () => {
    const reportPath = join(dir, 'report.json');
    const { io } = capture();
    code = await makeSimulateCommand({ onResult: (r) => (result = r) }).run(['--report', reportPath], io);
    report = JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
  }, 60_000);

  const xids = (node: string, xid: number) =>
    report.events.filter(
      (e) =>
        e.detailType === 'GPU XID Error' &&
        (e.detail as { node: string; xid: number }).node === node &&
        (e.detail as { xid: number }).xid === xid,
    );
  const podByUid = (uid: string) => report.initial.pods.find((p) => p.metadata.uid === uid);

  it('ends with every expectation of the scenario met', () => {
    expect(code).toBe(0);
    expect(report.summary.expectations?.every((x) => x.ok)).toBe(true);
  });

  it('delivers XID 79 once, from the agent, as a valid GPU XID Error naming the pod on that GPU', () => {
    const [e, ...more] = xids('a100-train-1', 79);
    expect(more).toHaveLength(0); // NVML and kernel log saw it; the deduper let one through
    expect(validateEvent(e!.event)).toMatchObject({ ok: true });
    expect(e!.event.source).toBe('gpu-reflex.node-agent');
    const d = e!.detail as { gpu: { index: number }; pods: { uid: string }[]; via: string };
    expect(d.gpu.index).toBe(3);
    expect(d.pods).toHaveLength(1);
    // The pod the agent named (NVML pid → fake /proc cgroup → UID) is a GPU pod the cluster had put on that node.
    const pod = report.initial.pods.find((p) => p.metadata.uid === d.pods[0]!.uid);
    expect(pod?.spec.nodeName).toBe('a100-train-1');
    expect(JSON.stringify(pod?.spec.containers)).toContain('nvidia.com/gpu');
    expect(e!.atMs).toBeGreaterThanOrEqual(6000);
  });

  it('reports the lost GPU as GPU Health Changed gpu-lost after the gpuLost fault', () => {
    const lost = report.events.filter(
      (e) => e.detailType === 'GPU Health Changed' && (e.detail as { condition: string }).condition === 'gpu-lost',
    );
    expect(lost).toHaveLength(1);
    expect(validateEvent(lost[0]!.event)).toMatchObject({ ok: true });
    expect(lost[0]!.atMs).toBeGreaterThanOrEqual(6500);
  });

  it('attributes the repeated XID 13 to both notebooks sharing the MIG GPU', () => {
    // The first at once; the agent holds its repeats and sends them as one event with their count.
    const repeats = xids('h100-mig-0', 13);
    expect(repeats).toHaveLength(2);
    expect(repeats.reduce((n, r) => n + ((r.detail as { count?: number }).count ?? 1), 0)).toBe(3);
    for (const r of repeats) {
      const names = (r.detail as { pods: { uid: string }[] }).pods.map((p) => podByUid(p.uid)?.metadata.name);
      expect(names).toEqual(expect.arrayContaining(['notebook-0', 'notebook-1']));
    }
  });

  it('has summary counts that match the report', () => {
    const byType: Record<string, number> = {};
    for (const e of report.events) byType[e.detailType] = (byType[e.detailType] ?? 0) + 1;
    expect(report.summary.eventsByDetailType).toEqual(byType);
    const failures: Record<string, number> = {};
    for (const d of report.deliveries) if (!d.ok) failures[d.function] = (failures[d.function] ?? 0) + 1;
    expect(report.summary.deliveryFailures).toEqual(failures);
    expect(report.summary.deadLetters).toBe(report.deadLetters.length);
    expect(report.summary.podsEvicted).toBe(report.evicted.length);
  });

  it('runs the MIG burst after relaying the two idle H100 GPUs, and the T4 batch after growing the T4 pool', () => {
    const pendingOn = (resource: string) =>
      report.final.pods.filter((p: Pod) => !p.spec.nodeName && JSON.stringify(p.spec.containers).includes(resource));
    expect(pendingOn('nvidia.com/mig-1g.20gb')).toEqual([]);
    expect(
      report.final.pods.filter(
        (p: Pod) => p.metadata.name.startsWith('mig-burst-') && p.spec.nodeName === 'h100-mig-0',
      ),
    ).toHaveLength(8);
    // The plan, as the timeline explains it: which GPUs, from what to what; the notebooks' GPUs untouched.
    const changes = report.events
      .filter((e) => e.detailType === 'MIG Layout Change')
      .map(
        (e) =>
          e.detail as {
            node: string;
            state: string;
            evictedPods?: number;
            preempted?: unknown[];
            gpus: { index: number; from: Record<string, number>; to: Record<string, number> }[];
          },
      );
    expect(changes.map((c) => [c.node, c.state])).toEqual([
      ['h100-mig-0', 'pending'],
      ['h100-mig-0', 'success'],
    ]);
    expect(changes[0]!.gpus.map((g) => [g.index, g.from, g.to])).toEqual(
      [6, 7].map((i) => [i, { '1g.10gb': 2, '2g.20gb': 1, '3g.40gb': 1 }, { '1g.20gb': 4 }]),
    );
    // Idle GPUs: nobody evicted or preempted for the relayout (the notebooks restarted at 22 s were remediation's XID 13).
    expect(changes.map((c) => [c.evictedPods ?? 0, c.preempted ?? []])).toEqual([
      [0, []],
      [0, []],
    ]);
    // The T4 pool: grown by the three pods' worth of its instance type (one T4 each), joined, the batch runs there.
    expect(pendingOn('nvidia.com/gpu')).toEqual([]);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as { nodepoolId: string; from: number; to: number; state: string });
    expect(scaled.map((e) => [e.nodepoolId, e.from, e.to, e.state])).toEqual([
      ['np-t4-inference', 2, 5, 'requested'],
      ['np-t4-inference', 2, 5, 'succeeded'],
    ]);
    const joined = new Set(
      report.final.nodes
        .filter((n) => !report.initial.nodes.some((i) => i.metadata.name === n.metadata.name))
        .map((n) => n.metadata.name),
    );
    expect(joined.size).toBe(3);
    expect(
      report.final.pods.filter(
        (p: Pod) => p.metadata.name.startsWith('batch-embed-') && joined.has(p.spec.nodeName ?? ''),
      ),
    ).toHaveLength(3);
  });

  it('matches the report to the cluster the simulation left', () => {
    const stored = result
      .sim!.store.list('pods')
      .map((p) => p.metadata.name)
      .sort();
    expect(report.final.pods.map((p) => p.metadata.name).sort()).toEqual(stored);
    expect(report.final.nodes.map((n) => n.metadata.name)).toContain('a100-train-1');
  });

  it('follows moved pods: the agent of their new node reports them on its GPUs', () => {
    const moved = report.rescheduled.filter((r) => r.replaces.startsWith('ml-train/finetune-'));
    expect(moved.length).toBeGreaterThan(0);
    const node = moved[0]!.node;
    const inventories = report.events.filter(
      (e) => e.detailType === 'GPU Inventory' && (e.detail as { node: string }).node === node,
    );
    const last = inventories[inventories.length - 1]!.detail as { gpus: { processes: { podUid?: string }[] }[] };
    const onGpus = new Set(last.gpus.flatMap((g) => g.processes.map((p) => p.podUid)));
    for (const m of moved) {
      const uid = report.final.pods.find((p) => `${p.metadata.namespace}/${p.metadata.name}` === m.pod)?.metadata.uid;
      expect(onGpus.has(uid)).toBe(true);
    }
  });

  it('drains the node whose GPU fell off the bus: tainted, cordoned, its GPU pods moved', () => {
    const node = report.final.nodes.find((n) => n.metadata.name === 'a100-train-1')!;
    expect(node.spec?.unschedulable).toBe(true);
    expect((node.spec?.taints ?? []).some((t) => t.key === 'gpu-reflex.io/unhealthy')).toBe(true);
    const gpuPodsLeft = report.final.pods.filter(
      (p) => p.spec.nodeName === 'a100-train-1' && JSON.stringify(p.spec.containers).includes('nvidia.com/gpu'),
    );
    expect(gpuPodsLeft).toHaveLength(0);
    expect(report.evicted.filter((k) => k.startsWith('ml-train/finetune-')).length).toBeGreaterThan(0);
    expect(
      report.rescheduled.some((r) => r.replaces.startsWith('ml-train/finetune-') && r.node !== 'a100-train-1'),
    ).toBe(true);
    expect(report.actions.some((a) => (a.detail as { action: string }).action === 'drain-node')).toBe(true);
  });

  it('answers XID 79 with exactly one Remediation, within seconds of the agent seeing it', () => {
    const xid = xids('a100-train-1', 79)[0]!;
    const answers = report.events.filter(
      (e) =>
        e.detailType === 'Remediation' &&
        (e.detail as { trigger: { eventId: string } }).trigger.eventId === (xid.detail as { eventId: string }).eventId,
    );
    expect(answers).toHaveLength(1);
    expect(answers[0]!.detail).toMatchObject({ action: 'drain-node', trigger: { xid: 79 } });
    expect(answers[0]!.atMs - xid.atMs).toBeLessThan(3000);
  });
});

describe('scenario files on the command line', () => {
  it.each([
    [
      'a wrong type',
      'name: x\ndurationSeconds: 5\nfleet: { nodes: [] }\ntimeline:\n  - { at: 1s, note: 5 }\n',
      /timeline\.0\.note/,
    ],
    ['a missing duration', 'name: x\nfleet: { nodes: [] }\n', /durationSeconds/],
    ['not YAML', 'name: [x\n', /not YAML or JSON/],
  ])('exits 1 and names the field for %s', async (_what, text, message) => {
    const path = join(dir, `bad-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(path, text);
    const { io, err } = capture();
    expect(await main(['simulate', '--scenario', path], io)).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toMatch(message);
  });
});
