/**
 * The remediation handler's run, end to end over the Kubernetes fakes: facts → plan → ledger →
 * apply → publish. (The same flow over the simulated cluster and the real client is in
 * test/e2e/remediation.test.ts.)
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  APPROVAL_REQUESTED,
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  REMEDIATION,
  validateDetail,
  type GpuActionRequest,
  type GpuActionState,
  type GpuXidErrorDetail,
} from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { BlockedError } from '../adapters/errors.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { DEFAULT_POLICY } from './core/policy.ts';
import { remediate, triggerOf, type RemediationDeps } from './run.ts';
import { HISTORY_ANNOTATION, REPAIRED_AT_ANNOTATION, STATE_LABEL } from './core/state.ts';
import { sweepRound } from './sweep-jobs.ts';
import { fakeDeps, PASSED_PROBE } from './testing.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const gpuUuid = (n: number, g: number) =>
  `GPU-${String(n).padStart(8, '0')}-0000-4000-8000-${String(g).padStart(12, '0')}`;

function xid(
  node: string,
  xidNo: number,
  atMs: number,
  opts: { gpu?: number; pods?: string[]; eventSuffix?: string } = {},
): GpuXidErrorDetail {
  const g = opts.gpu ?? 0;
  return {
    schemaVersion: 1,
    eventId: `xid:${node}:${g}:${xidNo}:${atMs}${opts.eventSuffix ?? ''}`,
    node,
    observedAt: new Date(atMs).toISOString(),
    gpu: {
      index: g,
      uuid: gpuUuid(Number(node.replace(/\D/g, '')) || 1, g),
      pciBusId: '00000000:3B:00.0',
      name: 'NVIDIA A100-SXM4-80GB',
    },
    xid: xidNo,
    via: 'nvml',
    pid: 100,
    process: 'python',
    message: `XID ${xidNo}`,
    pods: (opts.pods ?? []).map((uid) => ({ uid })),
  };
}

let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let notifier: RecordingNotifier;
let deps: RemediationDeps;

function seedNode(name: string, pool = 'a100-train') {
  kube.cluster.addNode({
    name,
    labels: { 'gpu-reflex.io/pool': pool, accelerator: 'nvidia-a100' },
    allocatable: { 'nvidia.com/gpu': '8' },
  });
  kube.cluster.addPod({
    name: `${name}-train`,
    namespace: 'ml',
    uid: `${name}-train-uid`,
    nodeName: name,
    extendedResources: { 'nvidia.com/gpu': 1 },
    owners: [{ kind: 'Job', name: 'train' }],
    labels: { app: 'train' },
  });
  kube.cluster.addPod({
    name: `${name}-agent`,
    namespace: 'gpu-reflex',
    uid: `${name}-agent-uid`,
    nodeName: name,
    owners: [{ kind: 'DaemonSet', name: 'agent' }],
  });
  kube.cluster.addPod({ name: `${name}-web`, namespace: 'web', uid: `${name}-web-uid`, nodeName: name });
}

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  notifier = new RecordingNotifier();
  deps = fakeDeps(kube, { clock, publisher, policy: DEFAULT_POLICY, notifier });
});

const remediations = () => publisher.published.filter((e) => e.detailType === REMEDIATION);
const writes = () =>
  kube.cluster.calls.filter(
    (c) =>
      !/\.(get|list|listMetadata|listOnNode)$/.test(c.op) && !c.op.startsWith('leases.') && !c.op.startsWith('state.'),
  );

describe('remediate', () => {
  it('drains a node whose GPU fell off the bus: taint, cordon, evict its workloads, one Remediation event', async () => {
    for (const n of ['gpu-a100-1', 'gpu-a100-2', 'gpu-a100-3', 'gpu-a100-4', 'gpu-a100-5']) seedNode(n);
    const out = await remediate(
      triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0, { pods: ['gpu-a100-1-train-uid'] })),
      deps,
    );
    expect(out.plan).toMatchObject({ kind: 'act', action: 'drain-node', scope: 'node' });
    const node = await kube.nodes.get('gpu-a100-1');
    expect(node.unschedulable).toBe(true);
    expect(node.taints).toContainEqual({
      key: 'gpu-reflex.io/unhealthy',
      value: expect.stringMatching(/79/),
      effect: 'NoSchedule',
    });
    expect(node.labels[STATE_LABEL]).toBe('draining');
    expect(JSON.parse(node.annotations[HISTORY_ANNOTATION]!).handled).toContain(`xid:gpu-a100-1:0:79:${T0}`);
    const evicted = kube.cluster.calls.filter((c) => c.op === 'pods.evict').map((c) => c.args.slice(0, 2).join('/'));
    // A node drain moves every workload off, and never the DaemonSet's pods.
    expect(evicted.sort()).toEqual(['ml/gpu-a100-1-train', 'web/gpu-a100-1-web']);
    expect(evicted).not.toContain('gpu-reflex/gpu-a100-1-agent');
    expect(remediations()).toHaveLength(1);
    const detail = remediations()[0]!.detail;
    expect(validateDetail(REMEDIATION, detail).ok).toBe(true);
    expect(detail).toMatchObject({ action: 'drain-node', phase: 'acted', trigger: { xid: 79, node: 'gpu-a100-1' } });
    expect(String(detail.reason)).toMatch(/fallen off the bus/);
  });

  it('changes nothing when the same event is delivered five times', async () => {
    for (const n of ['gpu-a100-1', 'gpu-a100-2', 'gpu-a100-3', 'gpu-a100-4', 'gpu-a100-5']) seedNode(n);
    const ev = triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0));
    await remediate(ev, deps);
    const after = writes().length;
    for (let i = 0; i < 4; i++) expect((await remediate(ev, deps)).plan.phase).toBe('skipped');
    expect(writes()).toHaveLength(after);
    expect(remediations()).toHaveLength(1);
  });

  it('only observes an application XID seen once', async () => {
    seedNode('gpu-a100-1');
    const out = await remediate(
      triggerOf('GPU XID Error', xid('gpu-a100-1', 13, T0, { pods: ['gpu-a100-1-train-uid'] })),
      deps,
    );
    expect(out.plan.action).toBe('observe');
    const node = await kube.nodes.get('gpu-a100-1');
    expect(node.unschedulable).toBe(false);
    expect(node.taints).toEqual([]);
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict')).toEqual([]);
  });

  it('escalates an application XID repeated on one GPU across different workloads', async () => {
    seedNode('gpu-a100-1');
    const actions: string[] = [];
    for (const [i, pod] of ['w-1', 'w-2', 'w-3'].entries()) {
      actions.push(
        (await remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', 13, T0 + i * 60_000, { pods: [pod] })), deps))
          .plan.action,
      );
    }
    expect(actions[0]).toBe('observe');
    expect(actions[2]).not.toBe('observe');
  });

  it('acts on at most the allowed share of a pool in a storm and asks a person about the rest', async () => {
    const names = Array.from({ length: 10 }, (_, i) => `gpu-t4-${i + 1}`);
    for (const n of names) seedNode(n, 't4-infer');
    for (const [i, n] of names.slice(0, 6).entries())
      await remediate(triggerOf('GPU XID Error', xid(n, 79, T0 + i * 1000)), deps);
    const phases = remediations().map((e) => e.detail.phase);
    // 20% of 10 nodes: two drained, four wait for a person.
    expect(phases.filter((p) => p === 'acted')).toHaveLength(2);
    expect(phases.filter((p) => p === 'awaiting-approval')).toHaveLength(4);
    expect((await kube.nodes.list()).filter((n) => n.unschedulable)).toHaveLength(2);
    expect(publisher.published.filter((e) => e.detailType === APPROVAL_REQUESTED)).toHaveLength(4);
  });

  it('refuses to work on a node another invocation holds, so the platform retries', async () => {
    seedNode('gpu-a100-1');
    await kube.leases.tryAcquire('remediate-gpu-a100-1', 'someone-else', 60, clock);
    await expect(remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0)), deps)).rejects.toBeInstanceOf(
      BlockedError,
    );
  });

  it('changes nothing in dry run but still reports what it would do, marked dry-run', async () => {
    seedNode('gpu-a100-1');
    const { dryRunPorts } = await import('../adapters/kube/dry-run.ts');
    const { DryRunNotifier, DryRunPublisher } = await import('../lib/dry-run.ts');
    const recorded: { op: string; args: unknown[] }[] = [];
    const dry = dryRunPorts(
      { nodes: kube.nodes, pods: kube.pods, quotas: kube.quotas, state: kube.state, leases: kube.leases },
      (a) => recorded.push(a),
    );
    // The dry-run wiring (lib/wiring.ts): the core itself is told nothing.
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0)), {
      ...deps,
      ...dry,
      publisher: new DryRunPublisher(publisher),
      notifier: new DryRunNotifier(),
    });
    expect((await kube.nodes.get('gpu-a100-1')).unschedulable).toBe(false);
    const update = recorded.find((a) => a.op === 'nodes.update');
    expect(update?.args[1]).toMatchObject({
      unschedulable: true,
      addTaints: [expect.objectContaining({ key: 'gpu-reflex.io/unhealthy' })],
    });
    expect(recorded.map((a) => a.op)).toContain('pods.evict');
    expect(kube.cluster.pods().every((p) => !p.terminating)).toBe(true);
    const detail = remediations()[0]!.detail as { dryRun: boolean; steps: { result: string }[] };
    expect(detail.dryRun).toBe(true);
    expect(detail.steps.every((s) => s.result === 'dry-run')).toBe(true);
  });

  it('puts a repaired node back in service once its GPU passes the health probe, and not on quiet time', async () => {
    for (const n of ['gpu-a100-1', 'gpu-a100-2', 'gpu-a100-3', 'gpu-a100-4', 'gpu-a100-5']) seedNode(n);
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0)), deps);
    await clock.advance(5 * 60_000);
    await sweepRound(deps); // drained → awaiting repair
    expect((await kube.nodes.get('gpu-a100-1')).labels[STATE_LABEL]).toBe('awaiting-repair');
    // A person (or the repair flow) marks the node repaired.
    await kube.nodes.setAnnotations('gpu-a100-1', { [REPAIRED_AT_ANNOTATION]: new Date(clock.now()).toISOString() });
    await clock.advance(60_000);
    await sweepRound(deps);
    expect((await kube.nodes.get('gpu-a100-1')).unschedulable).toBe(true);
    // The sweep asked the node agent for the health probe; the agent answers it passed.
    const probe = (
      JSON.parse((await kube.nodes.get('gpu-a100-1')).annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]
    ).find((r) => r.action === 'probe')!;
    expect(probe).toBeDefined();
    await clock.advance(60_000);
    const probed: GpuActionState = {
      state: 'done',
      action: 'probe',
      gpuUuid: probe.gpuUuid,
      at: new Date(clock.now()).toISOString(),
      probe: PASSED_PROBE,
    };
    await kube.nodes.setAnnotations('gpu-a100-1', {
      [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({ [probe.id]: probed }),
    });
    await sweepRound(deps);
    const node = await kube.nodes.get('gpu-a100-1');
    expect(node.unschedulable).toBe(false);
    expect(node.taints).toEqual([]);
    expect(node.labels[STATE_LABEL]).toBe('healthy');
    expect(remediations().at(-1)!.detail).toMatchObject({ action: 'restore', phase: 'restored' });
  });
});

/**
 * Issue #29: a drain that meets refusals (a disruption budget's 429, the API server's 500) is asked again every
 * sweep; those rounds change nothing anyone would notice and publish no report. The drain is reported when it
 * starts and when it ends: two reports, not one a minute with its failed evictions.
 */
describe('a drain that meets API errors', () => {
  it.each<[string, (node: string) => void]>([
    [
      'a disruption budget (429)',
      () => kube.cluster.addPdb({ namespace: 'ml', matchLabels: { app: 'train' }, minAvailable: 5 }),
    ],
    ['the API server (500)', () => kube.cluster.failNext('pods.evict', 500, 12)],
  ])('publishes one report when it starts and one when it ends, refused by %s in between', async (_, refuse) => {
    for (const n of ['gpu-a100-1', 'gpu-a100-2', 'gpu-a100-3', 'gpu-a100-4', 'gpu-a100-5']) seedNode(n);
    refuse('gpu-a100-1');
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', 79, T0, { pods: ['gpu-a100-1-train-uid'] })), deps);
    expect(remediations()).toHaveLength(1);
    for (let minute = 1; minute <= 6; minute++) {
      await clock.advance(60_000);
      await sweepRound(deps);
    }
    // Still draining (something is still refused), asked again each minute, and nothing said about it.
    const node = await kube.nodes.get('gpu-a100-1');
    expect(node.labels[STATE_LABEL]).toBe('draining');
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict' && c.args[0] === 'ml').length).toBeGreaterThan(3);
    expect(remediations()).toHaveLength(1);
    // The refusal lifts: the pods go, and the drain's end is reported once.
    kube.cluster.pdbs.length = 0;
    kube.cluster.failNext('pods.evict', 500, 0);
    for (let minute = 1; minute <= 6; minute++) {
      await clock.advance(60_000);
      await sweepRound(deps);
    }
    expect((await kube.nodes.get('gpu-a100-1')).labels[STATE_LABEL]).toBe('awaiting-repair');
    expect(remediations()).toHaveLength(2);
    expect(remediations()[1]!.detail).toMatchObject({ phase: 'awaiting-repair' });
  });
});
