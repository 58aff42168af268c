/**
 * The ports' contracts as one test suite, run against the fakes (fake.test.ts) and against the
 * real adapters over the simulated cluster (kube-sim.test.ts). Running the same cases on both is
 * what keeps the fakes faithful: a fake that drifts from the real behaviour fails here.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.ts';
import { NotFoundError } from '../errors.ts';
import { drain, drainOnce, podsNamed } from './drain.ts';
import type { LeaseOps, NodeOps, PodOps, QuotaOps, StateStore } from './ports.ts';

export interface NodeSeed {
  name: string;
  labels?: Record<string, string>;
}

export interface PodSeed {
  namespace: string;
  name: string;
  nodeName: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** Owner kind, e.g. `DaemonSet` or `ReplicaSet`. */
  ownerKind?: string;
  gracePeriodSeconds?: number;
  gpus?: number;
}

export interface PdbSeed {
  namespace: string;
  name: string;
  matchLabels: Record<string, string>;
  minAvailable: number;
}

export interface KubeHarness {
  nodes: NodeOps;
  pods: PodOps;
  quotas: QuotaOps;
  state: StateStore;
  leases: LeaseOps;
  /** Test time; advancing it also moves the cluster's time (terminating pods finish). */
  clock: ManualClock;
  /** Creates a namespace (the real API refuses namespaced objects in a missing one). */
  seedNamespace(name: string): Promise<void>;
  seedNode(seed: NodeSeed): Promise<void>;
  seedPod(seed: PodSeed): Promise<void>;
  seedPdb(seed: PdbSeed): Promise<void>;
  close(): Promise<void>;
}

export function describePortContracts(label: string, setup: () => Promise<KubeHarness>): void {
  describe(`Kubernetes port contracts (${label})`, () => {
    let h: KubeHarness;
    beforeEach(async () => {
      h = await setup();
    });
    afterEach(async () => {
      await h.close();
    });

    describe('NodeOps', () => {
      it('get of a missing node throws NotFoundError', async () => {
        await expect(h.nodes.get('no-such-node')).rejects.toBeInstanceOf(NotFoundError);
      });

      it('list filters by label selector', async () => {
        await h.seedNode({ name: 'c-gpu-a', labels: { 'c-pool': 'gpu' } });
        await h.seedNode({ name: 'c-cpu-a', labels: { 'c-pool': 'cpu' } });
        const names = (await h.nodes.list('c-pool=gpu')).map((n) => n.name);
        expect(names).toEqual(['c-gpu-a']);
      });

      it('cordon and uncordon are idempotent and report whether they changed the node', async () => {
        await h.seedNode({ name: 'c-n1' });
        expect(await h.nodes.cordon('c-n1')).toBe(true);
        expect(await h.nodes.cordon('c-n1')).toBe(false);
        expect((await h.nodes.get('c-n1')).unschedulable).toBe(true);
        expect(await h.nodes.uncordon('c-n1')).toBe(true);
        expect(await h.nodes.uncordon('c-n1')).toBe(false);
        expect((await h.nodes.get('c-n1')).unschedulable).toBe(false);
      });

      it('cordon of a missing node throws NotFoundError', async () => {
        await expect(h.nodes.cordon('no-such-node')).rejects.toBeInstanceOf(NotFoundError);
      });

      it('addTaint replaces a taint with the same key and effect, and repeats are no-ops', async () => {
        await h.seedNode({ name: 'c-n2' });
        expect(await h.nodes.addTaint('c-n2', { key: 'gpu-reflex/xid', value: '79', effect: 'NoSchedule' })).toBe(true);
        expect(await h.nodes.addTaint('c-n2', { key: 'gpu-reflex/xid', value: '79', effect: 'NoSchedule' })).toBe(false);
        expect(await h.nodes.addTaint('c-n2', { key: 'gpu-reflex/xid', value: '48', effect: 'NoSchedule' })).toBe(true);
        expect(await h.nodes.addTaint('c-n2', { key: 'gpu-reflex/xid', effect: 'NoExecute' })).toBe(true);
        const taints = (await h.nodes.get('c-n2')).taints;
        expect(taints).toEqual([
          { key: 'gpu-reflex/xid', value: '48', effect: 'NoSchedule' },
          { key: 'gpu-reflex/xid', effect: 'NoExecute' },
        ]);
      });

      it('removeTaint removes by key and effect, and removing an absent taint is a no-op', async () => {
        await h.seedNode({ name: 'c-n3' });
        await h.nodes.addTaint('c-n3', { key: 'a', value: '1', effect: 'NoSchedule' });
        await h.nodes.addTaint('c-n3', { key: 'a', value: '1', effect: 'NoExecute' });
        await h.nodes.addTaint('c-n3', { key: 'b', effect: 'NoSchedule' });
        expect(await h.nodes.removeTaint('c-n3', 'zzz')).toBe(false);
        expect(await h.nodes.removeTaint('c-n3', 'a', 'NoExecute')).toBe(true);
        expect((await h.nodes.get('c-n3')).taints.map((t) => `${t.key}:${t.effect}`)).toEqual(['a:NoSchedule', 'b:NoSchedule']);
        expect(await h.nodes.removeTaint('c-n3', 'a')).toBe(true);
        expect((await h.nodes.get('c-n3')).taints.map((t) => t.key)).toEqual(['b']);
      });

      it('setLabels merges: a value sets, null removes, unnamed keys stay', async () => {
        await h.seedNode({ name: 'c-n4', labels: { keep: 'yes', drop: 'me' } });
        expect(await h.nodes.setLabels('c-n4', { 'gpu-reflex/state': 'quarantined', drop: null })).toBe(true);
        expect(await h.nodes.setLabels('c-n4', { 'gpu-reflex/state': 'quarantined', drop: null })).toBe(false);
        const labels = (await h.nodes.get('c-n4')).labels;
        expect(labels).toMatchObject({ keep: 'yes', 'gpu-reflex/state': 'quarantined' });
        expect(labels).not.toHaveProperty('drop');
      });

      it('setAnnotations merges the same way', async () => {
        await h.seedNode({ name: 'c-n5' });
        expect(await h.nodes.setAnnotations('c-n5', { 'gpu-reflex/reason': 'XID 79' })).toBe(true);
        expect(await h.nodes.setAnnotations('c-n5', { 'gpu-reflex/reason': null, other: 'x' })).toBe(true);
        const ann = (await h.nodes.get('c-n5')).annotations;
        expect(ann).toMatchObject({ other: 'x' });
        expect(ann).not.toHaveProperty('gpu-reflex/reason');
      });
    });

    describe('PodOps', () => {
      it('listOnNode returns the pods on that node across namespaces, and only those', async () => {
        await h.seedNode({ name: 'c-p1' });
        await h.seedNode({ name: 'c-p2' });
        await h.seedPod({ namespace: 'team-a', name: 'a1', nodeName: 'c-p1' });
        await h.seedPod({ namespace: 'team-b', name: 'b1', nodeName: 'c-p1' });
        await h.seedPod({ namespace: 'team-a', name: 'a2', nodeName: 'c-p2' });
        const keys = (await h.pods.listOnNode('c-p1')).map((p) => `${p.namespace}/${p.name}`).sort();
        expect(keys).toEqual(['team-a/a1', 'team-b/b1']);
      });

      it('list filters by namespace and label selector', async () => {
        await h.seedNode({ name: 'c-p3' });
        await h.seedPod({ namespace: 'team-a', name: 'x1', nodeName: 'c-p3', labels: { app: 'train' } });
        await h.seedPod({ namespace: 'team-a', name: 'x2', nodeName: 'c-p3', labels: { app: 'serve' } });
        await h.seedPod({ namespace: 'team-b', name: 'x3', nodeName: 'c-p3', labels: { app: 'train' } });
        const names = (await h.pods.list({ namespace: 'team-a', labelSelector: 'app=train' })).map((p) => p.name);
        expect(names).toEqual(['x1']);
      });

      it('evict answers evicted, the pod terminates within its grace period, then gone', async () => {
        await h.seedNode({ name: 'c-p4' });
        await h.seedPod({ namespace: 'team-a', name: 'e1', nodeName: 'c-p4', gracePeriodSeconds: 30 });
        expect(await h.pods.evict('team-a', 'e1')).toEqual({ outcome: 'evicted' });
        const [pod] = await h.pods.listOnNode('c-p4');
        expect(pod?.terminating).toBe(true);
        expect(await h.pods.evict('team-a', 'e1')).toEqual({ outcome: 'evicted' });
        await h.clock.advance(31_000);
        expect(await h.pods.listOnNode('c-p4')).toEqual([]);
        expect(await h.pods.evict('team-a', 'e1')).toEqual({ outcome: 'gone' });
      });

      it('evict with an explicit grace period overrides the pod own', async () => {
        await h.seedNode({ name: 'c-p6' });
        await h.seedPod({ namespace: 'team-a', name: 'g1', nodeName: 'c-p6', gracePeriodSeconds: 300 });
        expect(await h.pods.evict('team-a', 'g1', { gracePeriodSeconds: 10 })).toEqual({ outcome: 'evicted' });
        await h.clock.advance(9_000);
        expect((await h.pods.listOnNode('c-p6')).map((p) => p.terminating)).toEqual([true]);
        await h.clock.advance(1_000);
        expect(await h.pods.listOnNode('c-p6')).toEqual([]);
      });

      it('evict answers blocked while a PodDisruptionBudget forbids it', async () => {
        await h.seedNode({ name: 'c-p5' });
        await h.seedPdb({ namespace: 'team-a', name: 'serve', matchLabels: { app: 'serve' }, minAvailable: 2 });
        await h.seedPod({ namespace: 'team-a', name: 's1', nodeName: 'c-p5', labels: { app: 'serve' } });
        await h.seedPod({ namespace: 'team-a', name: 's2', nodeName: 'c-p5', labels: { app: 'serve' } });
        const res = await h.pods.evict('team-a', 's1');
        expect(res.outcome).toBe('blocked');
        expect(res.outcome === 'blocked' && res.reason).toMatch(/disruption budget/i);
        await h.seedPod({ namespace: 'team-a', name: 's3', nodeName: 'c-p5', labels: { app: 'serve' } });
        expect(await h.pods.evict('team-a', 's1')).toEqual({ outcome: 'evicted' });
      });
    });

    describe('drain', () => {
      it('skips DaemonSet and mirror pods, evicts the rest, and is done once they terminate', async () => {
        await h.seedNode({ name: 'c-d1' });
        await h.seedPod({ namespace: 'kube-system', name: 'dcgm', nodeName: 'c-d1', ownerKind: 'DaemonSet' });
        await h.seedPod({ namespace: 'kube-system', name: 'static', nodeName: 'c-d1', annotations: { 'kubernetes.io/config.mirror': 'abc' } });
        await h.seedPod({ namespace: 'team-a', name: 'train', nodeName: 'c-d1', ownerKind: 'ReplicaSet', gracePeriodSeconds: 10 });
        const report = await drain(h, 'c-d1', { deadlineMs: 60_000, clock: h.clock, intervalMs: 5_000 });
        expect(report.done).toBe(true);
        expect(report.evicted).toEqual(['team-a/train']);
        expect(report.skipped).toEqual(
          expect.arrayContaining([
            { pod: 'kube-system/dcgm', reason: 'daemonset' },
            { pod: 'kube-system/static', reason: 'mirror' },
          ]),
        );
        expect(report.remaining).toEqual([]);
        expect(report.passes).toBe(3);
        expect((await h.nodes.get('c-d1')).unschedulable).toBe(true);
      });

      it('stops at the deadline and reports what a PodDisruptionBudget still holds', async () => {
        await h.seedNode({ name: 'c-d2' });
        await h.seedPdb({ namespace: 'team-a', name: 'db', matchLabels: { app: 'db' }, minAvailable: 1 });
        await h.seedPod({ namespace: 'team-a', name: 'db-0', nodeName: 'c-d2', labels: { app: 'db' }, gracePeriodSeconds: 0 });
        await h.seedPod({ namespace: 'team-a', name: 'web', nodeName: 'c-d2', gracePeriodSeconds: 0 });
        const start = h.clock.now();
        const report = await drain(h, 'c-d2', { deadlineMs: 30_000, clock: h.clock, intervalMs: 10_000 });
        expect(report.done).toBe(false);
        expect(report.remaining).toEqual(['team-a/db-0']);
        expect(report.blocked).toEqual([{ pod: 'team-a/db-0', reason: expect.stringMatching(/disruption budget/i) }]);
        expect(report.evicted).toEqual(['team-a/web']);
        expect(h.clock.now() - start).toBe(30_000);
        expect(report.passes).toBe(4);
      });

      it('a pod filter limits eviction to the selected pods', async () => {
        await h.seedNode({ name: 'c-d3' });
        await h.seedPod({ namespace: 'team-a', name: 'on-gpu-3', nodeName: 'c-d3', gpus: 1 });
        await h.seedPod({ namespace: 'team-a', name: 'on-gpu-5', nodeName: 'c-d3', gpus: 1 });
        const pass = await drainOnce(h, 'c-d3', { podFilter: podsNamed(['team-a/on-gpu-3']), cordon: false });
        expect(pass.evicted).toEqual(['team-a/on-gpu-3']);
        const left = await h.pods.listOnNode('c-d3');
        expect(left.find((p) => p.name === 'on-gpu-5')?.terminating).toBe(false);
        expect((await h.nodes.get('c-d3')).unschedulable).toBe(false);
      });
    });

    describe('QuotaOps', () => {
      beforeEach(async () => {
        await h.seedNamespace('team-q');
      });

      it('applyQuota creates, leaves an equal quota alone, and replaces a different one', async () => {
        expect(await h.quotas.getQuota('team-q', 'gpu')).toBeUndefined();
        expect(await h.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '8' }, labels: { owner: 'gpu-reflex' } })).toBe('created');
        expect(await h.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '8' } })).toBe('unchanged');
        expect(await h.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '4' } })).toBe('updated');
        const q = await h.quotas.getQuota('team-q', 'gpu');
        expect(q?.hard).toEqual({ 'requests.nvidia.com/gpu': '4' });
        expect(q?.labels).toMatchObject({ owner: 'gpu-reflex' });
        expect((await h.quotas.listQuotas('team-q')).map((x) => x.name)).toEqual(['gpu']);
      });

      it('applyLimitRange creates, leaves an equal one alone, and replaces a different one', async () => {
        const limits = [{ type: 'Container', default: { 'nvidia.com/gpu': '1' }, max: { 'nvidia.com/gpu': '4' } }];
        expect(await h.quotas.getLimitRange('team-q', 'gpu')).toBeUndefined();
        expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits })).toBe('created');
        expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits })).toBe('unchanged');
        const tighter = [{ type: 'Container', default: { 'nvidia.com/gpu': '1' }, max: { 'nvidia.com/gpu': '2' } }];
        expect(await h.quotas.applyLimitRange('team-q', 'gpu', { limits: tighter })).toBe('updated');
        expect((await h.quotas.getLimitRange('team-q', 'gpu'))?.limits).toEqual(tighter);
        expect((await h.quotas.listLimitRanges('team-q')).map((x) => x.name)).toEqual(['gpu']);
      });
    });

    describe('StateStore', () => {
      it('update creates the store, passes the current value, and undefined deletes the key', async () => {
        expect(await h.state.get('cooldown.c-n1')).toBeUndefined();
        expect(await h.state.update('cooldown.c-n1', (cur) => (cur === undefined ? { until: 100 } : cur))).toEqual({ until: 100 });
        expect(await h.state.update('cooldown.c-n1', (cur) => ({ seen: cur ?? null }))).toEqual({ seen: { until: 100 } });
        await h.state.update('other', () => 1);
        expect(await h.state.getAll()).toEqual({ 'cooldown.c-n1': { seen: { until: 100 } }, other: 1 });
        expect(await h.state.update('cooldown.c-n1', () => undefined)).toBeUndefined();
        expect(await h.state.get('cooldown.c-n1')).toBeUndefined();
        expect(await h.state.get('other')).toBe(1);
      });

      it('concurrent updates of one key lose no increment', async () => {
        const inc = (cur: unknown): number => (typeof cur === 'number' ? cur : 0) + 1;
        await Promise.all([1, 2, 3, 4].map(() => h.state.update('counter', inc)));
        expect(await h.state.get('counter')).toBe(4);
      });
    });

    describe('LeaseOps', () => {
      it('only one holder at a time; the holder re-acquiring renews', async () => {
        const a = await h.leases.tryAcquire('rebalance-pool-a', 'fn-1', 60, h.clock);
        expect(a.acquired).toBe(true);
        expect(a.lease).toMatchObject({ holder: 'fn-1', durationS: 60, expiresAtMs: h.clock.now() + 60_000 });
        const b = await h.leases.tryAcquire('rebalance-pool-a', 'fn-2', 60, h.clock);
        expect(b).toMatchObject({ acquired: false, lease: { holder: 'fn-1' } });
        await h.clock.advance(30_000);
        const again = await h.leases.tryAcquire('rebalance-pool-a', 'fn-1', 60, h.clock);
        expect(again.acquired).toBe(true);
        expect(again.lease.expiresAtMs).toBe(h.clock.now() + 60_000);
      });

      it('an expired lease is taken over, and the old holder can no longer renew or release it', async () => {
        await h.leases.tryAcquire('rebalance-pool-b', 'fn-1', 60, h.clock);
        await h.clock.advance(61_000);
        expect((await h.leases.tryAcquire('rebalance-pool-b', 'fn-2', 60, h.clock)).acquired).toBe(true);
        expect(await h.leases.renew('rebalance-pool-b', 'fn-1', h.clock)).toBe(false);
        expect(await h.leases.release('rebalance-pool-b', 'fn-1')).toBe(false);
        expect((await h.leases.get('rebalance-pool-b'))?.holder).toBe('fn-2');
      });

      it('renew extends the holding; release frees it for others at once', async () => {
        await h.leases.tryAcquire('rebalance-pool-c', 'fn-1', 60, h.clock);
        await h.clock.advance(50_000);
        expect(await h.leases.renew('rebalance-pool-c', 'fn-1', h.clock)).toBe(true);
        await h.clock.advance(50_000);
        expect((await h.leases.tryAcquire('rebalance-pool-c', 'fn-2', 60, h.clock)).acquired).toBe(false);
        expect(await h.leases.release('rebalance-pool-c', 'fn-1')).toBe(true);
        expect(await h.leases.release('rebalance-pool-c', 'fn-1')).toBe(false);
        expect((await h.leases.tryAcquire('rebalance-pool-c', 'fn-2', 60, h.clock)).acquired).toBe(true);
      });
    });
  });
}
