import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import { GPU_POOL_SCALED, type GpuPoolScaledDetail } from '../../events/index.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import type { CloudFile } from '../../infra/local/alicloud/cloud-file.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import type { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { BadInputError, TransientError } from '../adapters/errors.ts';
import { createLogger } from '../adapters/logger.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { dryRunPorts, type DryRunAction } from '../adapters/kube/dry-run.ts';
import { dryRunCloudPools } from '../adapters/alicloud/dry-run.ts';
import { AutoscalePolicySchema } from '../lib/pool-policy.ts';
import { autoscalePools, NODEPOOL_LABEL, type AutoscaleDeps } from './run.ts';
import { simDeps } from '../../test/support/autoscale-sim-deps.ts';

/**
 * Planned maintenance and spot interruptions (issue #34) through the real Alibaba adapter against the simulated
 * region: the event is read from DescribeInstanceHistoryEvents, the spot notice from DescribeInstances.
 */
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const MIN = 60_000;
let sim: AliCloudSim;
let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
afterEach(() => sim.close());

async function world(cloud: Partial<CloudFile>, max = 4, policy: object = {}): Promise<AutoscaleDeps> {
  const { pool, ...rest } = cloud as Partial<CloudFile> & { pool?: object };
  const simClock = new VirtualClock(T0);
  sim = await startAliCloudSim({
    clock: simClock,
    cloud: {
      bootSeconds: 120,
      rebootSeconds: 60,
      pools: [
        {
          id: 'np-t4',
          name: 't4',
          instanceTypes: ['ecs.gn6i-c4g1.xlarge'],
          size: 2,
          nodeNames: ['n-a', 'n-b'],
          ...pool,
        },
      ],
      ...rest,
    },
  });
  clock = manualClock(T0, (ms) => simClock.advance(ms));
  kube = fakeKube({ clock });
  for (const inst of sim.cloud.members('np-t4')) {
    kube.cluster.addNode({
      name: inst.nodeName,
      providerId: `cn-hangzhou.${inst.id}`,
      labels: { [NODEPOOL_LABEL]: 'np-t4' },
      allocatable: { 'nvidia.com/gpu': '1', cpu: '3500m', memory: '14Gi' },
    });
    kube.cluster.addPod({
      name: `serving-${inst.nodeName}`,
      namespace: 'ml',
      nodeName: inst.nodeName,
      phase: 'Running',
      owners: [{ kind: 'ReplicaSet', name: 'serving', controller: true }],
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
    });
  }
  publisher = new RecordingPublisher();
  return simDeps(
    sim,
    kube,
    clock,
    publisher,
    AutoscalePolicySchema.parse({ pendingSeconds: 0, pools: { 'np-t4': { max } }, ...policy }),
  );
}

/** The instance the pool booted for the replacement joins as a Ready node (`gpus: false`: its driver is down). */
function joinNew(gpus = true): void {
  for (const inst of sim.cloud.members('np-t4'))
    if (!kube.cluster.nodes.has(inst.nodeName) && inst.status === 'Running')
      kube.cluster.addNode({
        name: inst.nodeName,
        providerId: `cn-hangzhou.${inst.id}`,
        labels: { [NODEPOOL_LABEL]: 'np-t4' },
        allocatable: { ...(gpus ? { 'nvidia.com/gpu': '1' } : {}), cpu: '3500m', memory: '14Gi' },
      });
}

const serving = () => kube.cluster.pod('ml', 'serving-n-a');
const reboot2h = { systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot' as const, notBeforeSeconds: 7200 }] };

describe('planned maintenance (ECS system events)', () => {
  it('cordons and grows the pool 90 min ahead, drains once the new node is Ready, returns the node after', async () => {
    const deps = await world(reboot2h);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual([]);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(false);

    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    const scaled = publisher.published.filter((e) => e.detailType === GPU_POOL_SCALED);
    expect((scaled[0]!.detail as GpuPoolScaledDetail).reason).toMatch(/capacity first.*n-a/);
    // Capacity first: nothing is evicted while the new node boots.
    expect(serving()!.terminating).toBe(false);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    expect(serving()!.terminating).toBe(false);

    await clock.advance(2 * MIN);
    joinNew();
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
    expect(serving()?.terminating ?? true).toBe(true);

    // The reboot (2 h) goes by: NotReady while the instance restarts, then Ready, and the event is over.
    await clock.advance(120 * MIN - 33 * MIN + 10_000);
    kube.cluster.nodes.get('n-a')!.ready = false;
    const during = await autoscalePools(deps);
    expect(during.maintenance.returned).toEqual([]);
    await clock.advance(2 * MIN);
    kube.cluster.nodes.get('n-a')!.ready = true;
    expect((await autoscalePools(deps)).maintenance.returned).toEqual(['n-a']);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(false);
  });

  it('keeps a node back Ready without its GPUs cordoned and tells a person once; returns it once they show', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    await autoscalePools(deps);
    await clock.advance(3 * MIN);
    joinNew();
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
    // The redeploy goes by; n-a is Ready again but its NVIDIA driver did not come up: no GPU in allocatable.
    await clock.advance(120 * MIN - 33 * MIN + 10_000);
    const a = kube.cluster.nodes.get('n-a')!;
    a.ready = false;
    await autoscalePools(deps);
    await clock.advance(2 * MIN);
    a.ready = true;
    a.allocatable = { cpu: '3500m', memory: '14Gi' };
    const notices = (deps.notifier as RecordingNotifier).notices;
    const kept = () => notices.filter((n) => n.title.includes('n-a is back'));
    expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    expect(a.unschedulable).toBe(true);
    expect(kept()).toEqual([
      expect.objectContaining({ severity: 'warning', text: expect.stringMatching(/none of its type's GPUs/) }),
    ]);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    expect(kept()).toHaveLength(1);
    // The driver comes up: its GPU shows, and it is given back to the scheduler.
    a.allocatable = { ...a.allocatable, 'nvidia.com/gpu': '1' };
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.returned).toEqual(['n-a']);
    expect(a.unschedulable).toBe(false);
  });

  it('tells a person once when a node is not Ready again 15 min after its event is over; keeps it cordoned', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    await autoscalePools(deps);
    await clock.advance(3 * MIN);
    joinNew();
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
    // The reboot goes by and the event is over, but the node never comes back Ready.
    await clock.advance(120 * MIN - 33 * MIN + 10_000);
    const a = kube.cluster.nodes.get('n-a')!;
    a.ready = false;
    const notices = (deps.notifier as RecordingNotifier).notices;
    const down = () => notices.filter((n) => n.title.includes('n-a is not Ready after maintenance'));
    for (let i = 0; i < 15; i++) {
      await clock.advance(1 * MIN);
      await autoscalePools(deps);
    }
    expect(down()).toEqual([]);
    for (let i = 0; i < 5; i++) {
      await clock.advance(1 * MIN);
      expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    }
    expect(a.unschedulable).toBe(true);
    expect(down()).toEqual([
      expect.objectContaining({ severity: 'warning', text: expect.stringMatching(/not Ready again 1[5-9] min after/) }),
    ]);
    // It comes back at last, with its GPUs: returned.
    a.ready = true;
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.returned).toEqual(['n-a']);
  });

  it('turned off, prepares no new node and returns the ones it moved off only once their events are over', async () => {
    const deps = await world({
      systemEvents: [
        { node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 7200 },
        { node: 'n-b', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 9000 },
      ],
    });
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    await clock.advance(3 * MIN);
    joinNew();
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
    // A person turns it off 10 min before n-a's reboot: n-a is not given back to the scheduler ahead of it…
    deps.policy.maintenance.enabled = false;
    await clock.advance(77 * MIN);
    expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
    // …nor is n-b prepared for its own, and n-a is returned once its reboot is over.
    await clock.advance(15 * MIN);
    const after = await autoscalePools(deps);
    expect(after.maintenance).toMatchObject({ preparing: [], returned: ['n-a'] });
    expect(kube.cluster.nodes.get('n-b')!.unschedulable).toBe(false);
  });

  /** Autoscale's ports with the node's cordon refused once (TransientError), as a round's only failure. */
  function cordonRefusedOnce(deps: AutoscaleDeps): void {
    const nodes = deps.nodes;
    let refused = false;
    deps.nodes = {
      list: () => nodes.list(),
      uncordon: (name) => nodes.uncordon(name),
      cordon: async (name) => {
        if (refused) return nodes.cordon(name);
        refused = true;
        throw new TransientError('PATCH node: the API server is unreachable');
      },
    };
  }

  it('a round that fails after recording a node as prepared still asks its pool for the node, once', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    // The cordon after the record is refused: the round fails with the node on the record as prepared, its
    // replacement promised (maintenance.ts: ours first, then the cordon), and is not prepared again after.
    cordonRefusedOnce(deps);
    await expect(autoscalePools(deps)).rejects.toThrow(TransientError);
    await clock.advance(1 * MIN);
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    await clock.advance(1 * MIN);
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    const requested = publisher.published.filter(
      (e) => e.detailType === GPU_POOL_SCALED && (e.detail as GpuPoolScaledDetail).state === 'requested',
    );
    expect(requested.map((e) => (e.detail as GpuPoolScaledDetail).reason)).toEqual([
      expect.stringMatching(/capacity first.*n-a/),
    ]);
  });

  it('cordons a node recorded as prepared whose cordon a failed round never made, before it is drained', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    cordonRefusedOnce(deps);
    await expect(autoscalePools(deps)).rejects.toThrow(TransientError);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    // Ours (the record says gpu-reflex cordons it), so uncordoned again once the event is over.
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
  });

  it('does not take a replacement that joined Ready without its GPUs for capacity: drains by the deadline', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    await clock.advance(3 * MIN);
    // Ready, but its driver or device plugin is down: the serving replica evicted now could land nowhere.
    joinNew(false);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    expect(serving()!.terminating).toBe(false);
    await clock.advance(26 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    // Its GPUs come up: now it is the replacement.
    const fresh = [...kube.cluster.nodes.values()].find((n) => !['n-a', 'n-b'].includes(n.name))!;
    fresh.allocatable = { ...fresh.allocatable, 'nvidia.com/gpu': '1' };
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('drains early only once a node new since the replacement was asked is Ready with GPUs, not on a count', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    // Someone lowers the pool back to 2 in the ACK console while n-a is being moved: its replacement never comes,
    // yet the pool's two members (n-a itself among them) are Ready with their GPUs, as many as it should have.
    sim.cloud.setDesired('np-t4', 2);
    await clock.advance(3 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    expect(serving()!.terminating).toBe(false);
    // …and by its drain deadline (30 min before the event) it is drained all the same.
    await clock.advance(57 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it("asks no replacement of a pool whose last scale-out's nodes did not arrive: drains by the deadline", async () => {
    // The pool grew for a pending pod at 0:00 and its node never joined; the reboot's window opens at 0:17.
    const deps = await world(
      { systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 107 * 60 }] },
      6,
    );
    kube.cluster.addPod({
      name: 'train-0',
      namespace: 'ml',
      uid: 'train-0',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
      createdAt: new Date(T0).toISOString(),
    });
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    await clock.advance(16 * MIN);
    await autoscalePools(deps);
    await clock.advance(1 * MIN + 1000);
    const out = await autoscalePools(deps);
    expect(out.maintenance.preparing).toEqual(['n-a']);
    // The same broken pool is not grown again for the replacement.
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(out.maintenance.refused).toEqual([
      { node: 'n-a', pool: 'np-t4', why: expect.stringMatching(/held: 1 of the 1 nodes it was grown by at 00:00/) },
    ]);
    const told = (deps.notifier as RecordingNotifier).notices.find((n) => n.title.includes('moving work off n-a'));
    expect(told?.text).toMatch(/no node is added to its pool: .*held/);
    await clock.advance(59 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('drains 30 min before the event at the latest when the pool is at its max (no replacement)', async () => {
    const deps = await world(reboot2h, 2);
    await clock.advance(30 * MIN);
    const out = await autoscalePools(deps);
    expect(out.maintenance.refused).toEqual([{ node: 'n-a', pool: 'np-t4', why: 'node pool np-t4 is at its max (2)' }]);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(2);
    await clock.advance(59 * MIN);
    await autoscalePools(deps);
    expect(serving()!.terminating).toBe(false);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('tells a person no replacement comes when ACK refuses the size asked for it; drains by the deadline', async () => {
    const deps = await world(reboot2h);
    const refusal = 'ModifyClusterNodePool: InvalidParameter: the node pool is being upgraded';
    deps.cloud = Object.assign(Object.create(deps.cloud) as typeof deps.cloud, {
      setDesiredSize: () => Promise.reject(new BadInputError(refusal)),
    });
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    const notices = (deps.notifier as RecordingNotifier).notices;
    // The prepare notice went out before ACK answered: it promised a node asked, not one added.
    expect(notices.find((n) => n.title.includes('moving work off n-a'))?.text).not.toMatch(/a node is added/);
    const refused = notices.find((n) => n.title.includes('ACK refused'));
    expect(refused?.text).toMatch(/n-a \(prepared for maintenance\) gets no replacement: drained by its deadline/);
    const rec = (await deps.state.get('autoscale.np-t4')) as { maintenance?: Record<string, { replacement: boolean }> };
    expect(rec.maintenance?.['n-a']).toMatchObject({ replacement: false, noReplacement: expect.stringMatching(/ACK/) });
    await clock.advance(59 * MIN);
    await autoscalePools(deps);
    expect(serving()!.terminating).toBe(false);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('asks no replacement of a pool whose size ACK refused, before its cooldown is over: says why', async () => {
    const deps = await world({
      systemEvents: [
        { node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 90 * 60 },
        { node: 'n-b', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 91 * 60 },
      ],
    });
    let asked = 0;
    deps.cloud = Object.assign(Object.create(deps.cloud) as typeof deps.cloud, {
      setDesiredSize: () => (asked++, Promise.reject(new BadInputError('ModifyClusterNodePool: QuotaExceeded'))),
    });
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    await clock.advance(1 * MIN);
    const out = await autoscalePools(deps);
    expect(out.maintenance.preparing).toEqual(['n-b']);
    expect(asked).toBe(1);
    expect(out.maintenance.refused).toEqual([
      { node: 'n-b', pool: 'np-t4', why: expect.stringMatching(/ACK refused its size at 00:00 \(.*QuotaExceeded/) },
    ]);
  });

  it('asks no replacement of a sold-out pool: says why, and drains by the deadline', async () => {
    // A scale-out of the pool failed NoStock at 0:02: its one type is sold out for the backoff; the window opens at 0:03.
    const deps = await world(
      {
        stock: { 'ecs.gn6i-c4g1.xlarge': 0 },
        systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 93 * 60 }],
      },
      6,
    );
    kube.cluster.addPod({
      name: 'train-0',
      namespace: 'ml',
      uid: 'train-0',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
      createdAt: new Date(T0).toISOString(),
    });
    await autoscalePools(deps);
    await clock.advance(2 * MIN);
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'failed' });
    const desired = sim.cloud.pools.get('np-t4')!.desired;
    await clock.advance(1 * MIN);
    const out = await autoscalePools(deps);
    expect(out.maintenance.preparing).toEqual(['n-a']);
    expect(out.maintenance.refused).toEqual([
      { node: 'n-a', pool: 'np-t4', why: expect.stringMatching(/sold out \(OperationDenied.NoStock\)/) },
    ]);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(desired);
    const told = (deps.notifier as RecordingNotifier).notices.find((n) => n.title.includes('moving work off n-a'));
    expect(told?.text).toMatch(/no node is added to its pool: .*sold out/);
    // The NoStock backoff over (its types no longer known sold out), it is asked after all, once.
    const forN = () =>
      publisher.published
        .filter((e) => e.detailType === GPU_POOL_SCALED)
        .map((e) => e.detail as GpuPoolScaledDetail)
        .filter((d) => d.state === 'requested' && /capacity first.*n-a/.test(d.reason));
    expect(forN()).toEqual([]);
    await clock.advance(5 * MIN);
    await autoscalePools(deps);
    expect(forN()).toHaveLength(1);
    const asked = (deps.notifier as RecordingNotifier).notices.filter((n) => n.title.includes('asked after all'));
    expect(asked.map((n) => n.title)).toEqual(['gpu-reflex: a replacement for n-a is asked after all']);
    await clock.advance(1 * MIN);
    await autoscalePools(deps);
    expect(forN()).toHaveLength(1);
  });

  it('tells a person no replacement comes when the task of the size asked for it fails; drains by the deadline', async () => {
    const deps = await world(reboot2h);
    sim.cloud.inject({ action: 'ModifyClusterNodePool', failTasks: 1 });
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    await clock.advance(2 * MIN);
    expect((await autoscalePools(deps)).finished).toEqual({ 'np-t4': 'failed' });
    const notices = (deps.notifier as RecordingNotifier).notices;
    const failed = notices.find((n) => n.title.includes('could not grow'));
    expect(failed?.text).toMatch(/n-a \(prepared for maintenance\) gets no replacement: drained by its deadline/);
    const rec = (await deps.state.get('autoscale.np-t4')) as { maintenance?: Record<string, { replacement: boolean }> };
    expect(rec.maintenance?.['n-a']).toMatchObject({
      replacement: false,
      noReplacement: expect.stringMatching(/failed/),
    });
    await clock.advance(57 * MIN);
    await autoscalePools(deps);
    expect(serving()!.terminating).toBe(false);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  /** DescribeInstanceHistoryEvents from now on lists its events with a NotBefore that cannot be read. */
  function undatedEvents(deps: AutoscaleDeps, logged: Record<string, unknown>[]): void {
    const read = deps.cloud.systemEvents.bind(deps.cloud);
    deps.cloud.systemEvents = async (ids) => (await read(ids)).map((e) => ({ ...e, notBefore: '' }));
    deps.logger = createLogger({ service: 'test', sink: (l) => logged.push(l) });
  }

  it('returns no node whose event is still listed with a NotBefore that cannot be read', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    await autoscalePools(deps);
    const logged: Record<string, unknown>[] = [];
    undatedEvents(deps, logged);
    await clock.advance(1 * MIN);
    expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
    // Still drained on the deadline it was prepared for.
    await clock.advance(59 * MIN);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('prepares no node on an event whose NotBefore cannot be read, and says so', async () => {
    const deps = await world(reboot2h);
    const logged: Record<string, unknown>[] = [];
    undatedEvents(deps, logged);
    await clock.advance(30 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual([]);
    expect(logged).toContainEqual(
      expect.objectContaining({ level: 'warn', message: expect.stringMatching(/NotBefore/), node: 'n-a' }),
    );
  });

  it('respects disruption budgets: a blocked eviction is tried again next round', async () => {
    const deps = await world(reboot2h, 2);
    kube.cluster.addPdb({ namespace: 'ml', matchLabels: {}, minAvailable: 2 });
    await clock.advance(90 * MIN);
    await autoscalePools(deps);
    expect(serving()!.terminating).toBe(false);
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict')).toHaveLength(1);
    await clock.advance(1 * MIN);
    await autoscalePools(deps);
    expect(kube.cluster.calls.filter((c) => c.op === 'pods.evict')).toHaveLength(2);
    expect(serving()!.terminating).toBe(false);
  });

  it('returns no node while the events cannot be read (unknown is not "over")', async () => {
    const deps = await world(reboot2h);
    await clock.advance(30 * MIN);
    await autoscalePools(deps);
    await clock.advance(100 * MIN);
    sim.cloud.inject({ action: 'DescribeInstanceHistoryEvents', throttle: 100 });
    expect((await autoscalePools(deps)).maintenance.returned).toEqual([]);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
  });
});

describe('dry run', () => {
  it('shows the cordon, the new size and the evictions without making them', async () => {
    const real = await world(reboot2h, 4);
    const did: DryRunAction[] = [];
    const kubePorts = dryRunPorts(
      { nodes: kube.nodes, pods: kube.pods, quotas: kube.quotas, state: kube.state, leases: kube.leases },
      (a) => did.push(a),
    );
    const deps = { ...real, ...kubePorts, cloud: dryRunCloudPools(real.cloud, (a) => did.push(a)) };
    await clock.advance(90 * MIN);
    const out = await autoscalePools(deps);
    expect(out.maintenance).toMatchObject({ preparing: ['n-a'], draining: ['n-a'] });
    expect(did.map((a) => a.op)).toEqual(
      expect.arrayContaining(['nodes.cordon', 'pods.evict', 'cloud.setDesiredSize']),
    );
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(false);
    expect(serving()!.terminating).toBe(false);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(2);
  });
});

describe('spot interruption (OperationLocks Recycling)', () => {
  it('drains a reclaimed spot node at once and asks its pool for another', async () => {
    const deps = await world({
      preemptions: [{ node: 'n-a', atSeconds: 60 }],
      pool: { spotStrategy: 'SpotAsPriceGo' },
      spotPrices: { 'ecs.gn6i-c4g1.xlarge': 2 },
    } as Partial<CloudFile> & { pool: object });
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual([]);
    await clock.advance(2 * MIN);
    const out = await autoscalePools(deps);
    expect(out.maintenance).toMatchObject({ preparing: ['n-a'], draining: ['n-a'] });
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
  });
});

describe('spot interruption: the instance released', () => {
  it('does not return a reclaimed spot node that still reads Ready once ECS no longer lists its instance', async () => {
    const deps = await world({
      preemptions: [{ node: 'n-a', atSeconds: 60 }],
      pool: { spotStrategy: 'SpotAsPriceGo' },
      spotPrices: { 'ecs.gn6i-c4g1.xlarge': 2 },
    } as Partial<CloudFile> & { pool: object });
    await clock.advance(2 * MIN);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    // Reclaimed at 6:00; the kubelet's Ready lingers until the node controller's grace period runs out.
    await clock.advance(4 * MIN + 10_000);
    const out = await autoscalePools(deps);
    expect(out.maintenance.returned).toEqual([]);
    expect(kube.cluster.nodes.get('n-a')!.unschedulable).toBe(true);
  });
});

describe('a replacement while a scale-out is still under way', () => {
  it("does not take the scale-out's node for the replacement: drains once a node beyond it has joined", async () => {
    // The warning enters the 90-minute window one minute in, while the node grown for train-0 still boots.
    const deps = await world(
      { systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 5460 }] },
      6,
    );
    kube.cluster.addPod({
      name: 'train-0',
      namespace: 'ml',
      uid: 'train-0',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
      createdAt: new Date(T0).toISOString(),
    });
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    await clock.advance(1 * MIN + 1000);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(4);
    // train-0's node joins first: it is train-0's, not n-a's replacement; serving-n-a stays where it runs.
    await clock.advance(1 * MIN);
    joinNew();
    expect(kube.cluster.nodes.size).toBe(3);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual([]);
    expect(serving()!.terminating).toBe(false);
    // The replacement joins: now there is room for both.
    await clock.advance(2 * MIN);
    joinNew();
    expect(kube.cluster.nodes.size).toBe(4);
    expect((await autoscalePools(deps)).maintenance.draining).toEqual(['n-a']);
  });

  it('follows both ACK tasks and reports each once (the replacement does not overwrite the earlier request)', async () => {
    // The warning enters the 90-minute window one minute in, while the scale-out for a pending pod still boots.
    const deps = await world(
      { systemEvents: [{ node: 'n-a', type: 'SystemMaintenance.Reboot', notBeforeSeconds: 5460 }] },
      6,
    );
    kube.cluster.addPod({
      name: 'train-0',
      namespace: 'ml',
      uid: 'train-0',
      phase: 'Pending',
      scheduled: { status: 'False', reason: 'Unschedulable' },
      extendedResources: { 'nvidia.com/gpu': 1 },
      requests: { 'nvidia.com/gpu': 1, cpu: 2 },
      createdAt: new Date(T0).toISOString(),
    });
    await autoscalePools(deps);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(3);
    await clock.advance(1 * MIN + 1000);
    expect((await autoscalePools(deps)).maintenance.preparing).toEqual(['n-a']);
    expect(sim.cloud.pools.get('np-t4')!.desired).toBe(4);
    await clock.advance(5 * MIN);
    await autoscalePools(deps);
    const ended = publisher.published
      .filter((e) => e.detailType === GPU_POOL_SCALED)
      .map((e) => e.detail as GpuPoolScaledDetail)
      .filter((d) => d.state !== 'requested')
      .map((d) => `${d.from}→${d.to} ${d.state}`);
    expect(ended.sort()).toEqual(['2→3 succeeded', '3→4 succeeded']);
  });
});
