import { parse } from 'yaml';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  readMigInventory,
  MIG_INVENTORY_ANNOTATION,
  MIG_INVENTORY_STALE_MS,
  MIG_LAYOUT_CHANGE,
  type MigInventory,
  type MigLayoutChangeDetail,
} from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { TransientError } from '../adapters/errors.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import type { PodInfo } from '../adapters/kube/model.ts';
import { createLogger, silentLogger } from '../adapters/logger.ts';
import { MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MIG_REBALANCE_ANNOTATION, readMigRecord } from './core/rebalance.ts';
import { PreemptionPolicySchema } from './core/policy.ts';
import { decideHeldPlan, type CommandPorts } from '../chatops/actions.ts';
import { getApproval, MIG_APPROVALS_SHARD } from '../lib/approvals.ts';
import { STATE_LABEL } from '../lib/node-state.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { withPartedEntry } from './core/parted.ts';
import { DEFAULT_MIG_REBALANCE_CONFIG, rebalanceMig, type MigRebalanceDeps } from './run.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const SEVEN = Array<string>(7).fill('1g.10gb');
const GPU = (i: number) => `GPU-0000000${i}-0000-4000-8000-000000000000`;

let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let notifier: RecordingNotifier;
let deps: MigRebalanceDeps;

/** An H100 node, 4 GPUs of 7×1g.10gb, notebooks on GPUs 0 and 1 (as its agent's inventory says). */
function seed(name = 'h100-0', inUse: number[] = [7, 3, 0, 0]) {
  const inventory: MigInventory = {
    v: 1,
    at: new Date(T0).toISOString(),
    gpus: inUse.map((used, index) => ({
      index,
      uuid: GPU(index),
      instances: SEVEN.map((profile, gi) => ({ profile, gi: gi + 1, start: gi, size: 1, inUse: gi < used })),
    })),
  };
  kube.cluster.addNode({
    name,
    labels: {
      'nvidia.com/mig.strategy': 'mixed',
      'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
      'nvidia.com/gpu.count': String(inUse.length),
      [MIG_CONFIG_LABEL]: 'all-1g.10gb',
      [MIG_CONFIG_STATE_LABEL]: 'success',
    },
    annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
    allocatable: { 'nvidia.com/mig-1g.10gb': String(7 * inUse.length) },
  });
  const busy = inUse.reduce((a, b) => a + b, 0);
  for (let i = 0; i < busy; i++)
    kube.cluster.addPod({
      name: `${name}-nb-${i}`,
      namespace: 'research',
      uid: `${name}-nb-${i}`,
      nodeName: name,
      extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
    });
}
const waiting = (n: number) => {
  for (let i = 0; i < n; i++)
    kube.cluster.addPod({
      name: `ft-${i}`,
      namespace: 'ml',
      uid: `ft-${i}`,
      phase: 'Pending',
      extendedResources: { 'nvidia.com/mig-3g.40gb': 1 },
    });
};
/** The kubelet reports the device plugin's devices: the Node's allocatable `nvidia.com/mig-*` counts. */
function kubeletReports(name: string, counts: Record<string, number>) {
  const stored = kube.cluster.nodes.get(name)!;
  for (const [k, v] of Object.entries(counts)) stored.allocatable[k] = String(v);
}
/** The node agent reads NVML again: GPU `gpu` now holds `profiles` (nothing in use), at the clock's now. */
function agentShows(name: string, gpu: number, profiles: string[]) {
  const stored = kube.cluster.nodes.get(name)!;
  const inv = readMigInventory(stored.annotations).inventory!;
  inv.at = new Date(clock.now()).toISOString();
  inv.gpus[gpu]!.instances = profiles.map((profile, gi) => ({ profile, gi: gi + 1, inUse: false }));
  stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
}
const layoutEvents = () =>
  publisher.published.filter((e) => e.detailType === MIG_LAYOUT_CHANGE).map((e) => e.detail as MigLayoutChangeDetail);

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  notifier = new RecordingNotifier();
  deps = {
    nodes: kube.nodes,
    pods: kube.pods,
    leases: kube.leases,
    migParted: kube.migParted,
    publisher,
    notifier,
    clock,
    logger: silentLogger,
    holder: 'req-1',
    mig: DEFAULT_MIG_REBALANCE_CONFIG,
  };
});

describe('rebalance-mig', () => {
  it('relays the idle GPU through mig-manager: config, cordon, label after the sync, uncordon on success', async () => {
    seed();
    waiting(2);
    const first = await rebalanceMig(deps);
    expect(first.steps).toEqual({ 'h100-0': 'start' });
    let node = await kube.nodes.get('h100-0');
    expect(node.unschedulable).toBe(true);
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    const record = readMigRecord(node.annotations).record!;
    expect(record).toMatchObject({
      phase: 'writing',
      previous: 'all-1g.10gb',
      gpus: [{ gpu: 2, from: SEVEN, to: ['3g.40gb', '3g.40gb'] }],
    });
    const config = parse((await kube.migParted.read())!) as { 'mig-configs': Record<string, unknown> };
    expect(config['mig-configs'][record.config]).toEqual([
      { devices: [0, 1, 3], 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } },
      { devices: [2], 'mig-enabled': true, 'mig-devices': { '3g.40gb': 2 } },
    ]);
    expect(layoutEvents()).toEqual([
      expect.objectContaining({
        node: 'h100-0',
        config: record.config,
        state: 'pending',
        demand: { 'nvidia.com/mig-3g.40gb': 2 },
        evictedPods: 0,
      }),
    ]);
    // Before the sync delay nothing moves; after it, the label.
    clock.advance(30_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
    node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe(record.config);
    // The last run's success went with the label write: only mig-manager writes it again.
    expect(node.labels[MIG_CONFIG_STATE_LABEL]).toBeUndefined();
    // mig-manager works (seen and recorded), then reports success
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'pending';
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'observe' });
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'success';
    clock.advance(60_000);
    // success, but the agent has not read the new instances yet: not done
    expect((await rebalanceMig(deps)).steps).toEqual({});
    agentShows('h100-0', 2, ['3g.40gb', '3g.40gb']);
    // NVML shows them, but the kubelet has not reported the new devices yet (allocatable 0 while the
    // device plugin restarts): the scheduler cannot place the pods, not done
    kubeletReports('h100-0', { 'nvidia.com/mig-3g.40gb': 0 });
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(true);
    kubeletReports('h100-0', { 'nvidia.com/mig-3g.40gb': 2 });
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'done' });
    node = await kube.nodes.get('h100-0');
    expect(node.unschedulable).toBe(false);
    expect(node.annotations[MIG_REBALANCE_ANNOTATION]).toBeUndefined();
    expect(layoutEvents().map((e) => e.state)).toEqual(['pending', 'success']);
    // No pod was evicted: the relaid GPU held none.
    expect(kube.cluster.callsTo('pods.evict')).toEqual([]);
  });

  it('puts the previous config back and leaves the node cordoned when mig-manager fails, telling a person', async () => {
    seed();
    waiting(1);
    await rebalanceMig(deps);
    clock.advance(90_000);
    await rebalanceMig(deps);
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'failed';
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'failed' });
    const node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    expect(node.unschedulable).toBe(true);
    expect(readMigRecord(node.annotations).record).toMatchObject({
      phase: 'failed',
      reason: expect.stringContaining('failed'),
    });
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: MIG relayout failed on h100-0']);
    // It stays so: nothing is retried on that node until a person clears the record.
    clock.advance(600_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
  });

  it('tells a person of a failed relayout that chat refused at first: the notice waits in the outbox', async () => {
    seed();
    waiting(1);
    await rebalanceMig(deps);
    clock.advance(90_000);
    await rebalanceMig(deps);
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'failed';
    clock.advance(60_000);
    deps.notifier = {
      async notify() {
        throw new Error('chat webhook: 502');
      },
    };
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'failed' });
    // The failed record is never stepped again (a person clears it): its outbox is all that remains to send.
    deps.notifier = notifier;
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: MIG relayout failed on h100-0']);
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices).toHaveLength(1);
  });

  it('publishes the success the bus refused at the done round: a later round sends the outbox', async () => {
    seed();
    waiting(2);
    await rebalanceMig(deps);
    clock.advance(90_000);
    await rebalanceMig(deps);
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'pending';
    clock.advance(60_000);
    await rebalanceMig(deps);
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'success';
    agentShows('h100-0', 2, ['3g.40gb', '3g.40gb']);
    kubeletReports('h100-0', { 'nvidia.com/mig-3g.40gb': 2 });
    clock.advance(60_000);
    deps.publisher = {
      async publish() {
        throw new TransientError('PutEvents: the bus is unreachable');
      },
    };
    // A refusal the bus may lift is not the round's failure (the round sends MIG nodes' outboxes each time).
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'done' });
    // Done: the record is gone, so the node is never stepped again; the success waits in its outbox.
    expect(readMigRecord((await kube.nodes.get('h100-0')).annotations).record).toBeUndefined();
    deps.publisher = publisher;
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(layoutEvents().map((e) => e.state)).toEqual(['pending', 'success']);
    expect((await kube.nodes.get('h100-0')).annotations[OUTBOX_ANNOTATION]).toBeUndefined();
  });

  it('goes on relaying while the bus refuses every publish: the events wait in the node outboxes, nothing lost', async () => {
    // An EventBridge outage or throttling must not hold MIG pods pending: the bus has no say in a relayout.
    const errors: string[] = [];
    deps.logger = { ...silentLogger, error: (m: string) => void errors.push(m) };
    deps.publisher = { publish: () => Promise.reject(new TransientError('PutEvents: ThrottlingException')) };
    seed();
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    clock.advance(90_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
    expect(errors.length).toBeGreaterThan(0);
    expect(layoutEvents()).toEqual([]);
    // The bus is back: what the rounds decided goes out, once each.
    deps.publisher = publisher;
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(layoutEvents().map((e) => e.state)).toEqual(['pending']);
  });

  it('announces no success when mig-manager never answers: previous config back, cordoned, a person told', async () => {
    seed();
    waiting(1);
    await rebalanceMig(deps);
    clock.advance(90_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
    for (let m = 1; m < 20; m++) {
      clock.advance(60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({});
    }
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'failed' });
    const node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    expect(node.unschedulable).toBe(true);
    expect(readMigRecord(node.annotations).record?.reason).toContain('mig-manager never took');
    expect(layoutEvents().map((e) => e.state)).toEqual(['pending', 'failed']);
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: MIG relayout failed on h100-0']);
  });

  it('refuses to write into a mig-parted ConfigMap the GPU Operator owns, saying what to set', async () => {
    seed();
    waiting(2);
    kube.cluster.configFileOwners.set('gpu-operator/gpu-reflex-mig-parted-config', {
      labels: {},
      ownerReferences: [{ apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', name: 'cluster-policy' }],
    });
    const out = await rebalanceMig(deps);
    expect(out.steps).toEqual({});
    expect(out.refused).toContain("owned by the GPU Operator's ClusterPolicy cluster-policy");
    expect(out.refused).toContain('spec.migManager.config.name');
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    const node = await kube.nodes.get('h100-0');
    expect(node.unschedulable).toBe(false);
    expect(node.annotations[MIG_REBALANCE_ANNOTATION]).toBeUndefined();
    // Its own (no owner): the relayout starts.
    kube.cluster.configFileOwners.clear();
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
  });

  it("refuses to write while the GPU Operator's ClusterPolicy names another ConfigMap, saying what to set", async () => {
    seed();
    waiting(2);
    kube.cluster.clusterPolicies = [{ name: 'cluster-policy', ignored: false }];
    const out = await rebalanceMig(deps);
    expect(out.steps).toEqual({});
    expect(out.refused).toContain('ClusterPolicy cluster-policy has spec.migManager.config.name unset');
    expect(out.refused).toContain(
      `kubectl patch clusterpolicies.nvidia.com cluster-policy --type merge -p ` +
        `'{"spec":{"migManager":{"config":{"name":"gpu-reflex-mig-parted-config"}}}}'`,
    );
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    const node = await kube.nodes.get('h100-0');
    expect(node.unschedulable).toBe(false);
    expect(node.annotations[MIG_REBALANCE_ANNOTATION]).toBeUndefined();
    // The person is told on the bus: the layout planned, not started, and the command that fixes it.
    expect(layoutEvents().map((e) => [e.state, e.node])).toEqual([['planned', 'h100-0']]);
    expect(layoutEvents()[0]!.reason).toMatch(
      /^not started: .*kubectl patch clusterpolicies\.nvidia\.com cluster-policy/,
    );
    // Patched as it says: the relayout starts.
    kube.cluster.clusterPolicies = [
      { name: 'cluster-policy', configName: 'gpu-reflex-mig-parted-config', ignored: false },
    ];
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    expect(layoutEvents().map((e) => e.state)).toEqual(['planned', 'pending']);
    expect(new Set(layoutEvents().map((e) => e.eventId)).size).toBe(2);
  });

  it('tells a refusal once while it holds, and again once it came back after being lifted', async () => {
    seed();
    waiting(2);
    deps = { ...deps, state: kube.state };
    kube.cluster.clusterPolicies = [{ name: 'cluster-policy', ignored: false }];
    for (let round = 0; round < 3; round++) {
      expect((await rebalanceMig(deps)).refused).toContain('ClusterPolicy cluster-policy');
      await clock.advance(5 * 60_000);
    }
    expect(layoutEvents().map((e) => e.state)).toEqual(['planned']);
    // Another refusal (the ConfigMap taken by someone else) is news.
    kube.cluster.clusterPolicies = [];
    kube.cluster.configFileOwners.set('gpu-operator/gpu-reflex-mig-parted-config', {
      labels: {},
      ownerReferences: [{ apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', name: 'cluster-policy' }],
    });
    await rebalanceMig(deps);
    await rebalanceMig(deps);
    expect(layoutEvents().map((e) => e.state)).toEqual(['planned', 'planned']);
    // Lifted: the relayout starts, and the next refusal would be told again.
    kube.cluster.configFileOwners.clear();
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    expect(await kube.state.get('mig-parted-refusal')).toBeUndefined();
  });

  it('tells a refusal the bus refused at first on a later round, not never', async () => {
    seed();
    waiting(2);
    deps = { ...deps, state: kube.state };
    kube.cluster.clusterPolicies = [{ name: 'cluster-policy', ignored: false }];
    deps.publisher = { publish: () => Promise.reject(new TransientError('PutEvents: ThrottlingException')) };
    expect((await rebalanceMig(deps)).refused).toContain('ClusterPolicy cluster-policy');
    deps.publisher = publisher;
    await clock.advance(5 * 60_000);
    await rebalanceMig(deps);
    await clock.advance(5 * 60_000);
    await rebalanceMig(deps);
    expect(layoutEvents().map((e) => e.state)).toEqual(['planned']);
  });

  it('leaves the node cordoned when a remediation drained it meanwhile', async () => {
    seed();
    waiting(1);
    await rebalanceMig(deps);
    clock.advance(90_000);
    await rebalanceMig(deps);
    const stored = kube.cluster.nodes.get('h100-0')!;
    for (const g of readMigRecord(stored.annotations).record!.gpus) agentShows('h100-0', g.gpu, g.to);
    kubeletReports('h100-0', { 'nvidia.com/mig-3g.40gb': 2 });
    stored.labels[MIG_CONFIG_STATE_LABEL] = 'success';
    stored.labels['gpu-reflex.io/state'] = 'draining';
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'done' });
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(true);
    expect(layoutEvents().at(-1)?.reason).toContain(
      'left cordoned: gpu-reflex remediation holds it (gpu-reflex.io/state=draining)',
    );
  });

  it('reconfigures one node at a time', async () => {
    seed('h100-0');
    seed('h100-1');
    waiting(4);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    clock.advance(30_000);
    expect(Object.values((await rebalanceMig(deps)).steps)).not.toContain('start');
  });

  it('counts a pending pod as demand only once it has waited minPendingSeconds', async () => {
    seed();
    kube.cluster.addPod({
      name: 'ft-new',
      namespace: 'ml',
      uid: 'ft-new',
      phase: 'Pending',
      createdAt: new Date(T0).toISOString(),
      extendedResources: { 'nvidia.com/mig-3g.40gb': 1 },
    });
    expect(await rebalanceMig(deps)).toMatchObject({ steps: {}, pending: 0 });
    clock.advance(59_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    clock.advance(1_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
  });

  it('relays nothing on a node whose relayout record it cannot read: it may be one under way, or failed', async () => {
    // A record written by a newer gpu-reflex (v: 2) or hand-edited: unknown, not absent. Read as absent, the node was
    // planned again and a second relayout started over the first (its `previous` the first's config, never restored).
    seed('h100-0');
    seed('h100-1');
    kube.cluster.nodes.get('h100-0')!.annotations[MIG_REBALANCE_ANNOTATION] = JSON.stringify({
      v: 2,
      phase: 'applying',
    });
    kube.cluster.nodes.get('h100-0')!.unschedulable = true;
    waiting(2);
    const out = await rebalanceMig(deps);
    // Nor does a second node start beside it: it counts as under way (MIG_MAX_NODES_AT_ONCE).
    expect(out.steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    // A person uncordons it: still not relaid, the record not overwritten.
    kube.cluster.nodes.get('h100-0')!.unschedulable = false;
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect(kube.cluster.nodes.get('h100-0')!.annotations[MIG_REBALANCE_ANNOTATION]).toBe(
      JSON.stringify({ v: 2, phase: 'applying' }),
    );
  });

  it('relays nothing on a node where mig-manager reports failed and no relayout of ours is under way', async () => {
    // mig-manager re-applied the node's config (a restart, a reboot: it applies at start) and failed: the GPUs may be
    // half made. A relayout there would also remove the state label, the one sign of it a person has.
    seed();
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'failed';
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    const node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_STATE_LABEL]).toBe('failed');
    expect(node.unschedulable).toBe(false);
  });

  it('reads the node again before the label: a process started since the plan on the GPU it relays holds it', async () => {
    // Planned with GPU 2 idle; between the cordon and the label a process outside Kubernetes starts on it (the
    // agent names no pod for it). The label then makes mig-manager fail with IN_USE, or wipe what runs there.
    seed();
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    const config = readMigRecord((await kube.nodes.get('h100-0')).annotations).record!.config;
    clock.advance(90_000);
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    inv.checked = new Date(clock.now()).toISOString();
    inv.gpus[2]!.instances[4] = { ...inv.gpus[2]!.instances[4]!, inUse: true };
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    const lines: string[] = [];
    deps = { ...deps, logger: createLogger({ service: 'test', sink: (l) => lines.push(JSON.stringify(l)) }) };
    expect((await rebalanceMig(deps)).steps).toEqual({});
    let node = await kube.nodes.get('h100-0');
    // Left as it is: the label unset, still cordoned, the relayout still writing for the next round to decide.
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    expect(node.unschedulable).toBe(true);
    expect(readMigRecord(node.annotations).record).toMatchObject({ phase: 'writing', config });
    expect(lines.join('\n')).toContain(`GPU 2 (${GPU(2)}) has instance(s) in use the plan did not clear`);
    // The process ends and the agent says so: the label goes on.
    clock.advance(60_000);
    inv.checked = new Date(clock.now()).toISOString();
    inv.gpus[2]!.instances[4] = { ...inv.gpus[2]!.instances[4]!, inUse: false };
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
    node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe(config);
  });

  it('fails a relayout whose GPU stays in use right before the label past its timeout, and tells a person', async () => {
    // Held at the label (as above), round after round: a GPU that stays busy is not waited on in silence forever.
    seed();
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    inv.gpus[2]!.instances[4] = { ...inv.gpus[2]!.instances[4]!, inUse: true };
    const minutes = deps.mig.timeoutMinutes;
    for (let t = 2; t < minutes; t += 2) {
      clock.advance(120_000);
      inv.checked = new Date(clock.now()).toISOString();
      stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
      expect((await rebalanceMig(deps)).steps).toEqual({});
    }
    expect(notifier.notices).toEqual([]);
    clock.advance(120_000);
    inv.checked = new Date(clock.now()).toISOString();
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'failed' });
    const node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    expect(node.unschedulable).toBe(true);
    expect(readMigRecord(node.annotations).record).toMatchObject({ phase: 'failed' });
    expect(readMigRecord(node.annotations).record!.reason).toContain(`held right before the label for ${minutes} min`);
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: MIG relayout failed on h100-0']);
  });

  it('sets no label once the agent stopped confirming its inventory after the plan: the GPUs are unknown', async () => {
    seed();
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    inv.checked = new Date(T0).toISOString();
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
    // The agent died right after the plan: nothing confirms what GPU 2 holds when the label is due.
    clock.advance(MIG_INVENTORY_STALE_MS + 60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    const node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe('all-1g.10gb');
    expect(readMigRecord(node.annotations).record).toMatchObject({ phase: 'writing' });
  });

  it("relays no GPU while a running MIG pod is named in none of the agent's instances (its inventory is behind)", async () => {
    // The agent names each instance's pods. Its inventory still shows nb-old on GPU 0, which has ended; nb-new now
    // runs on the node and is named nowhere: by count (one 1g.10gb in use, one held) all looks right, but nb-new may
    // sit on GPU 2 or 3, which the inventory calls idle. Relaid, its instance is wiped under it.
    seed('h100-0', [0, 0, 0, 0]);
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    inv.gpus[0]!.instances[0] = { ...inv.gpus[0]!.instances[0]!, inUse: true, pods: ['nb-old'] };
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    kube.cluster.addPod({
      name: 'nb-new',
      namespace: 'research',
      uid: 'nb-new',
      nodeName: 'h100-0',
      extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
    });
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
  });

  it('keeps checking a layout it applied against the GPUs: a person is told once when it drifts, and when it is back', async () => {
    // The relayout was done long ago (its record removed): the node's label names gpu-reflex's config, GPU 2 holds
    // 2×3g.40gb as that config says, the others 7×1g.10gb.
    seed('h100-0', [0, 0, 0, 0]);
    const layout = [SEVEN, SEVEN, ['3g.40gb', '3g.40gb'], SEVEN];
    const config = 'gpu-reflex-h100-0-0badc0de';
    await kube.migParted.update(() => withPartedEntry(undefined, config, layout, new Set()));
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_LABEL] = config;
    // A remediation restored the node once (its state label stays `healthy`): checked all the same.
    kube.cluster.nodes.get('h100-0')!.labels[STATE_LABEL] = 'healthy';
    agentShows('h100-0', 2, ['3g.40gb', '3g.40gb']);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(notifier.notices).toEqual([]);
    // A person carves GPU 2 with nvidia-smi: mig-manager would put its config back at its next start, wiping theirs.
    clock.advance(60_000);
    agentShows('h100-0', 2, ['4g.40gb', '3g.40gb']);
    await rebalanceMig(deps);
    expect(notifier.notices).toEqual([
      expect.objectContaining({
        title: 'gpu-reflex: the MIG layout on h100-0 is not the one gpu-reflex applied',
        text: expect.stringContaining(`GPU 2 (${GPU(2)}) holds 4g.40gb + 3g.40gb, not 2×3g.40gb`),
        severity: 'warning',
      }),
    ]);
    // Told once while it holds.
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices).toHaveLength(1);
    // mig-manager's own word counts too: it re-applied the config and failed.
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'failed';
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices.map((n) => n.text)).toEqual([
      expect.anything(),
      expect.stringContaining(`mig-manager reports ${MIG_CONFIG_STATE_LABEL}=failed for ${config}`),
    ]);
    // Put right: said so, and a later drift is news again.
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'success';
    agentShows('h100-0', 2, ['3g.40gb', '3g.40gb']);
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices.map((n) => n.title)).toEqual([
      expect.anything(),
      expect.anything(),
      'gpu-reflex: the MIG layout on h100-0 is again the one gpu-reflex applied',
    ]);
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices).toHaveLength(3);
  });

  it('never calls a layout it applied checked when the agent stopped confirming its inventory: it says why', async () => {
    seed('h100-0', [0, 0, 0, 0]);
    const config = 'gpu-reflex-h100-0-0badc0de';
    await kube.migParted.update(() => withPartedEntry(undefined, config, [SEVEN, SEVEN, SEVEN, SEVEN], new Set()));
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_LABEL] = config;
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify({ ...inv, checked: new Date(T0).toISOString() });
    const lines: Record<string, unknown>[] = [];
    deps.logger = createLogger({ service: 'test', sink: (l) => lines.push(l) });
    clock.advance(MIG_INVENTORY_STALE_MS + 60_000);
    await rebalanceMig(deps);
    expect(notifier.notices).toEqual([]);
    expect(lines).toContainEqual(
      expect.objectContaining({
        node: 'h100-0',
        note: expect.stringMatching(/cannot be checked against the GPUs: the node agent last confirmed its MIG inv/),
      }),
    );
  });

  it('tells a person when a GPU of a layout it applied was emptied and no remediation holds the node', async () => {
    // A person destroyed GPU 2's instances (nvidia-smi mig -dci -dgi), or reset it by hand: no remediation works on
    // the node (its state label healthy), so nobody has mig-manager apply the config again, and an empty MIG GPU
    // offers nothing (the device plugin lists no device of it). Not "remediation's to restore": drift, told.
    seed('h100-0', [0, 0, 0, 0]);
    const config = 'gpu-reflex-h100-0-0badc0de';
    await kube.migParted.update(() => withPartedEntry(undefined, config, [SEVEN, SEVEN, SEVEN, SEVEN], new Set()));
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_LABEL] = config;
    kube.cluster.nodes.get('h100-0')!.labels[STATE_LABEL] = 'healthy';
    agentShows('h100-0', 2, []);
    await rebalanceMig(deps);
    expect(notifier.notices).toEqual([
      expect.objectContaining({
        title: 'gpu-reflex: the MIG layout on h100-0 is not the one gpu-reflex applied',
        text: expect.stringContaining(`GPU 2 (${GPU(2)}) holds no MIG instance, not 7×1g.10gb`),
      }),
    ]);
    // While a remediation works on the node (it reset the GPU and has mig-manager restore it): its to tell.
    kube.cluster.nodes.get('h100-0')!.labels[STATE_LABEL] = 'quarantined';
    delete kube.cluster.nodes.get('h100-0')!.annotations['gpu-reflex.io/mig-drift'];
    notifier.notices.length = 0;
    clock.advance(60_000);
    await rebalanceMig(deps);
    expect(notifier.notices).toEqual([]);
  });

  it('tells a person when a GPU of a layout it applied has a MIG mode NVML no longer answers', async () => {
    // The agent lists such a GPU with no instance and says why (migModeUnknown): it may hold anything, drift to be
    // told with NVML's answer.
    seed('h100-0', [0, 0, 0, 0]);
    const config = 'gpu-reflex-h100-0-0badc0de';
    await kube.migParted.update(() => withPartedEntry(undefined, config, [SEVEN, SEVEN, SEVEN, SEVEN], new Set()));
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_LABEL] = config;
    agentShows('h100-0', 2, []);
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    inv.gpus[2]!.migModeUnknown = 'NVML_ERROR_UNKNOWN';
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify(inv);
    await rebalanceMig(deps);
    expect(notifier.notices).toEqual([
      expect.objectContaining({
        title: 'gpu-reflex: the MIG layout on h100-0 is not the one gpu-reflex applied',
        text: expect.stringContaining(`GPU 2 (${GPU(2)}): NVML does not answer its MIG state (NVML_ERROR_UNKNOWN)`),
      }),
    ]);
  });

  it('relays no GPU of a node its agent has not reported a MIG inventory for: layout and use unknown, done unprovable', async () => {
    // Without gpu-reflex.io/mig-inventory each GPU's layout is guessed from the node's totals and nothing says what
    // runs in it (a process outside Kubernetes); and a relayout is done only once that inventory shows it (step 3),
    // so it could only end failed after MIG_TIMEOUT_MINUTES, the node cordoned and its GPUs wiped twice.
    seed('h100-0', [0, 0, 0, 0]);
    delete kube.cluster.nodes.get('h100-0')!.annotations[MIG_INVENTORY_ANNOTATION];
    kube.cluster.nodes.get('h100-0')!.capacity = { 'nvidia.com/mig-1g.10gb': '28' };
    waiting(2);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(false);
  });

  it('relays no GPU of a node whose agent stopped confirming its inventory: what the GPUs hold now is unknown', async () => {
    // The agent confirmed its inventory at T0 and then died (its DaemonSet pod gone): the annotation stays, two idle
    // GPUs in it. A relayout there would cordon the node, wipe GPUs nobody reads, and could never be confirmed.
    seed('h100-0', [7, 3, 0, 0]);
    const stored = kube.cluster.nodes.get('h100-0')!;
    const inv = readMigInventory(stored.annotations).inventory!;
    stored.annotations[MIG_INVENTORY_ANNOTATION] = JSON.stringify({ ...inv, checked: new Date(T0).toISOString() });
    waiting(2);
    clock.advance(MIG_INVENTORY_STALE_MS + 60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(false);
  });

  it('touches nothing when every GPU runs something', async () => {
    seed('h100-0', [1, 1, 1, 1]);
    waiting(1);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(false);
  });

  describe('with preemption', () => {
    /** Two GPUs, each whole (7g.80gb) and running one low-priority notebook; high priority waits for 1g.10gb. */
    function notebooks() {
      const inventory: MigInventory = {
        v: 1,
        at: new Date(T0).toISOString(),
        gpus: [0, 1].map((index) => ({
          index,
          uuid: GPU(index),
          instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: true }],
        })),
      };
      kube.cluster.addNode({
        name: 'h100-0',
        labels: {
          'nvidia.com/mig.strategy': 'mixed',
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          'nvidia.com/gpu.count': '2',
          [MIG_CONFIG_LABEL]: 'all-7g',
          [MIG_CONFIG_STATE_LABEL]: 'success',
        },
        annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
        allocatable: { 'nvidia.com/mig-7g.80gb': '2' },
      });
      // Both GPUs hold a 7g.80gb in use: which notebook runs on which is not known.
      kube.cluster.addPod({
        name: 'notebook-0',
        namespace: 'research',
        uid: 'nb-0',
        nodeName: 'h100-0',
        priority: 0,
        labels: { app: 'notebook' },
        extendedResources: { 'nvidia.com/mig-7g.80gb': 1 },
      });
      kube.cluster.addPod({
        name: 'notebook-1',
        namespace: 'research',
        uid: 'nb-1',
        nodeName: 'h100-0',
        priority: 0,
        labels: { app: 'notebook' },
        extendedResources: { 'nvidia.com/mig-7g.80gb': 1 },
      });
      for (let i = 0; i < 2; i++)
        kube.cluster.addPod({
          name: `infer-${i}`,
          namespace: 'serve',
          uid: `infer-${i}`,
          phase: 'Pending',
          priority: 1000,
          extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
        });
    }
    const on = (o = {}) => ({
      ...DEFAULT_MIG_REBALANCE_CONFIG,
      preemption: PreemptionPolicySchema.parse({ enabled: true, ...o }),
    });
    /** GPU 0: 4g.40gb + 3g.40gb, GPU 1: 7g.80gb, each instance a notebook at 0; two pods at 1000 wait for 1g.10gb. */
    function twoGpus(big: Partial<PodInfo> = {}) {
      const inventory: MigInventory = {
        v: 1,
        at: new Date(T0).toISOString(),
        gpus: [
          {
            index: 0,
            uuid: GPU(0),
            instances: [
              { profile: '4g.40gb', gi: 1, start: 0, size: 4, inUse: true },
              { profile: '3g.40gb', gi: 2, start: 4, size: 4, inUse: true },
            ],
          },
          { index: 1, uuid: GPU(1), instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: true }] },
        ],
      };
      kube.cluster.addNode({
        name: 'h100-0',
        labels: {
          'nvidia.com/mig.strategy': 'mixed',
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          'nvidia.com/gpu.count': '2',
          [MIG_CONFIG_LABEL]: 'mine',
          [MIG_CONFIG_STATE_LABEL]: 'success',
        },
        annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
        allocatable: { 'nvidia.com/mig-4g.40gb': '1', 'nvidia.com/mig-3g.40gb': '1', 'nvidia.com/mig-7g.80gb': '1' },
      });
      kube.cluster.addPod({
        name: 'nb-a',
        namespace: 'research',
        uid: 'a',
        nodeName: 'h100-0',
        priority: 0,
        extendedResources: { 'nvidia.com/mig-4g.40gb': 1 },
      });
      kube.cluster.addPod({
        name: 'nb-b',
        namespace: 'research',
        uid: 'b',
        nodeName: 'h100-0',
        priority: 0,
        extendedResources: { 'nvidia.com/mig-3g.40gb': 1 },
      });
      kube.cluster.addPod({
        name: 'nb-c',
        namespace: 'research',
        uid: 'c',
        nodeName: 'h100-0',
        priority: 0,
        extendedResources: { 'nvidia.com/mig-7g.80gb': 1 },
        ...big,
      });
      for (let i = 0; i < 2; i++)
        kube.cluster.addPod({
          name: `infer-${i}`,
          namespace: 'serve',
          uid: `infer-${i}`,
          phase: 'Pending',
          priority: 1000,
          extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
        });
    }

    it('never preempts when off, nor where it cannot tell which pod holds which GPU', async () => {
      notebooks();
      expect((await rebalanceMig(deps)).steps).toEqual({});
      expect((await rebalanceMig({ ...deps, mig: on() })).steps).toEqual({});
      expect(kube.cluster.callsTo('pods.evict')).toEqual([]);
    });

    it('evicts the preempted pod after the cordon, waits for it to leave, then relabels; a PDB that blocks holds the GPU back', async () => {
      twoGpus({ labels: { app: 'nb-c' }, terminationGracePeriodSeconds: 120 });
      kube.cluster.addPdb({ namespace: 'research', matchLabels: { app: 'nb-c' }, minAvailable: 1 });
      deps = { ...deps, mig: on() };

      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
      let node = await kube.nodes.get('h100-0');
      expect(node.unschedulable).toBe(true);
      expect(readMigRecord(node.annotations).record).toMatchObject({
        phase: 'writing',
        gpus: [{ gpu: 1, from: ['7g.80gb'] }],
        preempt: [{ namespace: 'research', name: 'nb-c', uid: 'c' }],
      });
      expect(kube.cluster.callsTo('pods.evict').map((c) => c.args.slice(0, 2))).toEqual([['research', 'nb-c']]);
      // The budget blocked it: the event says what is preempted, and that the GPU waits.
      expect(layoutEvents()).toEqual([
        expect.objectContaining({
          state: 'pending',
          evictedPods: 0,
          preempted: [{ namespace: 'research', name: 'nb-c', priority: 0 }],
          reason: expect.stringContaining('eviction of research/nb-c refused'),
        }),
      ]);
      expect(notifier.notices.map((n) => n.title)).toEqual([
        'gpu-reflex: preempting 1 pod(s) on h100-0 for a MIG relayout',
      ]);
      // Past the config sync, still blocked: asked again, no label.
      clock.advance(120_000);
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'evict' });
      expect((await kube.nodes.get('h100-0')).labels[MIG_CONFIG_LABEL]).toBe('mine');
      // The budget lets go: evicted; the label waits out its grace period.
      kube.cluster.pdbs.length = 0;
      clock.advance(60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'evict' });
      clock.advance(60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'evict' });
      expect((await kube.nodes.get('h100-0')).labels[MIG_CONFIG_LABEL]).toBe('mine');
      clock.advance(61_000);
      // nb-c has left, and the agent has read its instance free since: the label goes on (read again before it).
      agentShows('h100-0', 1, ['7g.80gb']);
      // A StatefulSet's replacement under the same name (another uid) is not the preempted pod.
      kube.cluster.addPod({
        name: 'nb-c',
        namespace: 'research',
        uid: 'c2',
        nodeName: 'h100-0',
        priority: 0,
        extendedResources: { 'nvidia.com/mig-7g.80gb': 1 },
      });
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
      node = await kube.nodes.get('h100-0');
      expect(node.labels[MIG_CONFIG_LABEL]).toBe(readMigRecord(node.annotations).record!.config);
      expect(kube.cluster.pod('research', 'nb-a')).toBeDefined();
    });

    it('holds a preempting relayout for approval in chat: asked once, waits, carried out once approved', async () => {
      twoGpus();
      deps = { ...deps, state: kube.state, mig: on({ approvalMinutes: 30 }) };
      expect((await rebalanceMig(deps)).steps).toEqual({});
      expect(kube.cluster.callsTo('pods.evict')).toEqual([]);
      expect(notifier.notices).toEqual([
        expect.objectContaining({
          title: 'gpu-reflex: approve preempting 1 pod(s) on h100-0 for a MIG relayout?',
          approval: { id: expect.stringMatching(/^apr-mig-/) },
        }),
      ]);
      const id = notifier.notices[0]!.approval!.id;
      expect(notifier.notices[0]!.text).toContain(`Answer "approve ${id}" or "deny ${id}" within 30 min`);
      expect(await getApproval(kube.state, id, MIG_APPROVALS_SHARD)).toMatchObject({
        status: 'open',
        node: 'h100-0',
        mig: { gpus: [1], preempts: ['research/nb-c'] },
      });
      clock.advance(60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({});
      expect(notifier.notices).toHaveLength(1);
      const chat = { kube, clock } as unknown as CommandPorts;
      expect(await decideHeldPlan(chat, id, 'approved', 'slack:U-OPS')).toEqual({
        answer: `approved ${id}: rebalance-mig preempts research/nb-c and relays h100-0 GPU 1 at its next round`,
        decided: true,
      });
      expect((await decideHeldPlan(chat, id, 'approved', 'slack:U-OPS'))!.decided).toBe(false);
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
      expect(kube.cluster.callsTo('pods.evict').map((c) => c.args.slice(0, 2))).toEqual([['research', 'nb-c']]);
    });

    it('does not preempt what was denied or left to expire, and does not ask again for the same pods', async () => {
      twoGpus();
      deps = { ...deps, state: kube.state, mig: on({ approvalMinutes: 30 }) };
      await rebalanceMig(deps);
      const id = notifier.notices[0]!.approval!.id;
      expect(
        (await decideHeldPlan({ kube, clock } as unknown as CommandPorts, id, 'rejected', 'slack:U-OPS'))!.answer,
      ).toBe(`rejected ${id}: research/nb-c keep h100-0 GPU 1; not asked again while they hold them`);
      clock.advance(60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({});
      expect(notifier.notices).toHaveLength(1);
      expect(kube.cluster.callsTo('pods.evict')).toEqual([]);
      // Another node, left undecided past its 30 minutes: expired, never carried out.
      kube = fakeKube({ clock });
      deps = {
        ...deps,
        nodes: kube.nodes,
        pods: kube.pods,
        leases: kube.leases,
        migParted: kube.migParted,
        state: kube.state,
      };
      twoGpus();
      await rebalanceMig(deps);
      const late = notifier.notices[1]!.approval!.id;
      clock.advance(31 * 60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({});
      expect(await getApproval(kube.state, late, MIG_APPROVALS_SHARD)).toMatchObject({ status: 'expired' });
      expect(
        (await decideHeldPlan({ kube, clock } as unknown as CommandPorts, late, 'approved', 'slack:U-OPS'))!.answer,
      ).toBe(`${late} is already expired: nothing more done`);
      expect(kube.cluster.callsTo('pods.evict')).toEqual([]);
    });

    it('gives up before relaying anything when the preempted pod never leaves', async () => {
      const inventory: MigInventory = {
        v: 1,
        at: new Date(T0).toISOString(),
        gpus: [{ index: 0, uuid: GPU(0), instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: true }] }],
      };
      kube.cluster.addNode({
        name: 'h100-0',
        labels: {
          'nvidia.com/mig.strategy': 'mixed',
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          'nvidia.com/gpu.count': '1',
        },
        annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
        allocatable: { 'nvidia.com/mig-7g.80gb': '1' },
      });
      kube.cluster.addPod({
        name: 'nb',
        namespace: 'research',
        uid: 'nb',
        nodeName: 'h100-0',
        priority: 0,
        labels: { app: 'nb' },
        extendedResources: { 'nvidia.com/mig-7g.80gb': 1 },
      });
      kube.cluster.addPod({
        name: 'infer',
        namespace: 'serve',
        uid: 'infer',
        phase: 'Pending',
        priority: 1000,
        extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
      });
      kube.cluster.addPdb({ namespace: 'research', matchLabels: { app: 'nb' }, minAvailable: 1 });
      deps = { ...deps, mig: on({ notify: false }) };
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
      expect(notifier.notices).toEqual([]);
      clock.advance(21 * 60_000);
      expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'failed' });
      const node = await kube.nodes.get('h100-0');
      expect(node.labels[MIG_CONFIG_LABEL]).toBeUndefined();
      expect(readMigRecord(node.annotations).record?.reason).toContain('did not leave within 20 min');
    });
  });
});
