/** NodeOps and PodOps contracts; run by describePortContracts (contract.ts). */
import { beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError } from '../errors.ts';
import type { KubeHarness } from './contract.ts';

export function nodeAndPodContracts(harness: () => KubeHarness): void {
  let h: KubeHarness;
  beforeEach(() => {
    h = harness();
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

    it(
      "listMetadata filters by label selector and returns each node's name, labels and " + 'annotations as list does',
      async () => {
        await h.seedNode({ name: 'c-meta-a', labels: { 'c-meta': 'gpu' } });
        await h.nodes.setAnnotations('c-meta-a', { 'c-note': 'x' });
        await h.seedNode({ name: 'c-meta-b', labels: { 'c-meta': 'cpu' } });
        const meta = await h.nodes.listMetadata('c-meta=gpu');
        expect(meta).toEqual([
          {
            name: 'c-meta-a',
            labels: expect.objectContaining({ 'c-meta': 'gpu' }),
            annotations: expect.objectContaining({ 'c-note': 'x' }),
          },
        ]);
        const full = (await h.nodes.list('c-meta=gpu')).map((n) => ({
          name: n.name,
          labels: n.labels,
          annotations: n.annotations,
        }));
        expect(meta).toEqual(full);
      },
    );

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
      expect((await h.nodes.get('c-n3')).taints.map((t) => `${t.key}:${t.effect}`)).toEqual([
        'a:NoSchedule',
        'b:NoSchedule',
      ]);
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

    it('update applies taints, cordon, labels and annotations together, and a repeat changes nothing', async () => {
      await h.seedNode({ name: 'c-n5', labels: { keep: 'me', drop: 'x' } });
      await h.nodes.addTaint('c-n5', { key: 'other', value: 'v', effect: 'NoSchedule' });
      await h.nodes.addTaint('c-n5', { key: 'old', effect: 'NoExecute' });
      const change = {
        addTaints: [{ key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' as const }],
        removeTaints: [{ key: 'old' }],
        unschedulable: true,
        labels: { 'gpu-reflex.io/state': 'draining', drop: null },
        annotations: { 'gpu-reflex.io/history': '{"v":1}' },
      };
      expect(await h.nodes.update('c-n5', change)).toBe(true);
      const n = await h.nodes.get('c-n5');
      expect(n.unschedulable).toBe(true);
      expect(n.taints.map((t) => `${t.key}=${t.value ?? ''}:${t.effect}`).sort()).toEqual([
        'gpu-reflex.io/unhealthy=xid-79:NoSchedule',
        'other=v:NoSchedule',
      ]);
      expect(n.labels).toMatchObject({ keep: 'me', 'gpu-reflex.io/state': 'draining' });
      expect(n.labels.drop).toBeUndefined();
      expect(n.annotations['gpu-reflex.io/history']).toBe('{"v":1}');
      expect(await h.nodes.update('c-n5', change)).toBe(false);
      expect(await h.nodes.update('c-n5', {})).toBe(false);
    });

    it(
      'update against a basis patches without a read, and a node changed since the basis throws ConflictError, ' +
        'changing nothing',
      async () => {
        await h.seedNode({ name: 'c-n8' });
        const basis = await h.nodes.get('c-n8');
        expect(await h.nodes.update('c-n8', { labels: { a: '1' } }, { basis })).toBe(true);
        // basis is now stale: our own write moved the resourceVersion on
        await expect(h.nodes.update('c-n8', { unschedulable: true }, { basis })).rejects.toBeInstanceOf(ConflictError);
        expect((await h.nodes.get('c-n8')).unschedulable).toBe(false);
        const fresh = await h.nodes.get('c-n8');
        expect(await h.nodes.update('c-n8', { labels: { a: '1' } }, { basis: fresh })).toBe(false);
      },
    );

    it('a blind update removes an annotation without a basis, and refuses to touch taints', async () => {
      await h.seedNode({ name: 'c-n9' });
      await h.nodes.setAnnotations('c-n9', { 'gpu-reflex.io/outbox': '[]', keep: 'me' });
      await h.nodes.update('c-n9', { annotations: { 'gpu-reflex.io/outbox': null } }, { blind: true });
      expect((await h.nodes.get('c-n9')).annotations).toEqual({ keep: 'me' });
      await expect(
        h.nodes.update('c-n9', { addTaints: [{ key: 'k', effect: 'NoSchedule' }] }, { blind: true }),
      ).rejects.toThrow(/blind/);
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

    it('setCondition writes one condition through nodes/status, keeps the others, and is idempotent', async () => {
      await h.seedNode({ name: 'c-cond' });
      const fenced = {
        type: 'GpuReflexGpuFenced',
        status: 'True' as const,
        reason: 'GpuFenced',
        message: 'GPU-1 held out',
      };
      expect(await h.nodes.setCondition('c-cond', fenced)).toBe(true);
      expect(await h.nodes.setCondition('c-cond', fenced)).toBe(false);
      const n = await h.nodes.get('c-cond');
      expect(n.conditions?.GpuReflexGpuFenced).toEqual(fenced);
      expect(
        await h.nodes.setCondition('c-cond', { ...fenced, status: 'False', reason: 'NoGpuFenced', message: 'none' }),
      ).toBe(true);
      expect((await h.nodes.get('c-cond')).conditions?.GpuReflexGpuFenced?.status).toBe('False');
    });

    it('evict with the uid of the pod meant leaves a namesake alone: the pod meant is gone', async () => {
      await h.seedNode({ name: 'c-p7' });
      await h.seedPod({ namespace: 'team-a', name: 'ss-0', nodeName: 'c-p7' });
      const [meant] = await h.pods.listOnNode('c-p7');
      expect(await h.pods.evict('team-a', 'ss-0', { uid: `${meant!.uid}-not` })).toEqual({ outcome: 'gone' });
      expect((await h.pods.listOnNode('c-p7')).map((p) => [p.name, p.terminating])).toEqual([['ss-0', false]]);
      expect(await h.pods.evict('team-a', 'ss-0', { uid: meant!.uid })).toEqual({ outcome: 'evicted' });
      expect((await h.pods.listOnNode('c-p7')).map((p) => p.terminating)).toEqual([true]);
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
}
