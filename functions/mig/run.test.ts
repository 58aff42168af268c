import { parse } from 'yaml';
import { beforeEach, describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION, MIG_LAYOUT_CHANGE, type MigInventory, type MigLayoutChangeDetail } from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../lib/logger.ts';
import { MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL, MIG_REBALANCE_ANNOTATION, readMigRecord } from './core/rebalance.ts';
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
    gpus: inUse.map((used, index) => ({ index, uuid: GPU(index), instances: SEVEN.map((profile, gi) => ({ profile, gi: gi + 1, start: gi, size: 1, inUse: gi < used })) })),
  };
  kube.cluster.addNode({
    name,
    labels: { 'nvidia.com/mig.strategy': 'mixed', 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3', 'nvidia.com/gpu.count': String(inUse.length), [MIG_CONFIG_LABEL]: 'all-1g.10gb', [MIG_CONFIG_STATE_LABEL]: 'success' },
    annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
    allocatable: { 'nvidia.com/mig-1g.10gb': String(7 * inUse.length) },
  });
  const busy = inUse.reduce((a, b) => a + b, 0);
  for (let i = 0; i < busy; i++) kube.cluster.addPod({ name: `${name}-nb-${i}`, namespace: 'research', uid: `${name}-nb-${i}`, nodeName: name, extendedResources: { 'nvidia.com/mig-1g.10gb': 1 } });
}
const waiting = (n: number) => {
  for (let i = 0; i < n; i++) kube.cluster.addPod({ name: `ft-${i}`, namespace: 'ml', uid: `ft-${i}`, phase: 'Pending', extendedResources: { 'nvidia.com/mig-3g.40gb': 1 } });
};
const layoutEvents = () => publisher.published.filter((e) => e.detailType === MIG_LAYOUT_CHANGE).map((e) => e.detail as MigLayoutChangeDetail);

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  publisher = new RecordingPublisher();
  notifier = new RecordingNotifier();
  deps = { nodes: kube.nodes, pods: kube.pods, leases: kube.leases, migParted: kube.migParted, publisher, notifier, clock, logger: silentLogger, holder: 'req-1', mig: DEFAULT_MIG_REBALANCE_CONFIG };
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
    expect(record).toMatchObject({ phase: 'writing', previous: 'all-1g.10gb', gpus: [{ gpu: 2, from: SEVEN, to: ['3g.40gb', '3g.40gb'] }] });
    const config = parse((await kube.migParted.read())!) as { 'mig-configs': Record<string, unknown> };
    expect(config['mig-configs'][record.config]).toEqual([
      { devices: [0, 1, 3], 'mig-enabled': true, 'mig-devices': { '1g.10gb': 7 } },
      { devices: [2], 'mig-enabled': true, 'mig-devices': { '3g.40gb': 2 } },
    ]);
    expect(layoutEvents()).toEqual([expect.objectContaining({ node: 'h100-0', config: record.config, state: 'pending', demand: { 'nvidia.com/mig-3g.40gb': 2 }, evictedPods: 0 })]);
    // Before the sync delay nothing moves; after it, the label.
    clock.advance(30_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'label' });
    node = await kube.nodes.get('h100-0');
    expect(node.labels[MIG_CONFIG_LABEL]).toBe(record.config);
    // mig-manager works, then reports success
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'pending';
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    kube.cluster.nodes.get('h100-0')!.labels[MIG_CONFIG_STATE_LABEL] = 'success';
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
    expect(readMigRecord(node.annotations).record).toMatchObject({ phase: 'failed', reason: expect.stringContaining('failed') });
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: MIG relayout failed on h100-0']);
    // It stays so: nothing is retried on that node until a person clears the record.
    clock.advance(600_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
  });

  it('leaves the node cordoned when a remediation drained it meanwhile', async () => {
    seed();
    waiting(1);
    await rebalanceMig(deps);
    clock.advance(90_000);
    await rebalanceMig(deps);
    const stored = kube.cluster.nodes.get('h100-0')!;
    stored.labels[MIG_CONFIG_STATE_LABEL] = 'success';
    stored.labels['gpu-reflex.io/state'] = 'draining';
    clock.advance(60_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'done' });
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(true);
    expect(layoutEvents().at(-1)?.reason).toContain('left cordoned: gpu-reflex remediation holds it (gpu-reflex.io/state=draining)');
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
    kube.cluster.addPod({ name: 'ft-new', namespace: 'ml', uid: 'ft-new', phase: 'Pending', createdAt: new Date(T0).toISOString(), extendedResources: { 'nvidia.com/mig-3g.40gb': 1 } });
    expect(await rebalanceMig(deps)).toMatchObject({ steps: {}, pending: 0 });
    clock.advance(59_000);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    clock.advance(1_000);
    expect((await rebalanceMig(deps)).steps).toEqual({ 'h100-0': 'start' });
  });

  it('touches nothing when every GPU runs something', async () => {
    seed('h100-0', [1, 1, 1, 1]);
    waiting(1);
    expect((await rebalanceMig(deps)).steps).toEqual({});
    expect(kube.cluster.callsTo('configFile.update')).toEqual([]);
    expect((await kube.nodes.get('h100-0')).unschedulable).toBe(false);
  });
});
