/** The drain contracts; run by describePortContracts (contract.ts). */
import { beforeEach, describe, expect, it } from 'vitest';
import type { KubeHarness } from './contract.ts';
import { drain, drainOnce, podsNamed } from './drain.ts';

export function drainContracts(harness: () => KubeHarness): void {
  let h: KubeHarness;
  beforeEach(() => {
    h = harness();
  });

  describe('drain', () => {
    it('skips DaemonSet and mirror pods, evicts the rest, and is done once they terminate', async () => {
      await h.seedNode({ name: 'c-d1' });
      await h.seedPod({ namespace: 'kube-system', name: 'dcgm', nodeName: 'c-d1', ownerKind: 'DaemonSet' });
      await h.seedPod({
        namespace: 'kube-system',
        name: 'static',
        nodeName: 'c-d1',
        annotations: { 'kubernetes.io/config.mirror': 'abc' },
      });
      await h.seedPod({
        namespace: 'team-a',
        name: 'train',
        nodeName: 'c-d1',
        ownerKind: 'ReplicaSet',
        gracePeriodSeconds: 10,
      });
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
      await h.seedPod({
        namespace: 'team-a',
        name: 'db-0',
        nodeName: 'c-d2',
        labels: { app: 'db' },
        gracePeriodSeconds: 0,
      });
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
}
