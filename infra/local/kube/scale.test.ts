import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, syntheticFleet, type KubeSim } from './index.ts';
import { clients, k8s } from './test-helpers.ts';

/**
 * The fleet size gpu-reflex's benchmarks use: 1,500 GPU nodes, 6,000 pods. The bounds are loose
 * (CI is a shared 2-core machine); they exist to catch a quadratic path, which would take minutes.
 */
describe('a 1,500-node fleet', () => {
  let sim: KubeSim;
  let seedMs = 0;
  beforeAll(async () => {
    const t = performance.now();
    sim = await startKubeSim({ fleet: syntheticFleet(1500, 4) });
    seedMs = performance.now() - t;
  }, 60_000);
  afterAll(() => sim?.close());

  it('seeds and schedules every pod', () => {
    expect(sim.store.count('nodes')).toBe(1500);
    expect(sim.store.count('pods')).toBe(6000);
    expect(sim.store.pods().filter((p) => p.status?.phase !== 'Running')).toEqual([]);
    expect(sim.store.podsOnNode('gpu-1499')).toHaveLength(4);
    expect(seedMs).toBeLessThan(30_000);
  });

  it('cordons 150 nodes through the client quickly and lists pods by node from the index', async () => {
    const { core } = clients(sim);
    const t = performance.now();
    await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        core.patchNode(
          { name: `gpu-${i * 10}`, body: { spec: { unschedulable: true } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.StrategicMergePatch),
        ),
      ),
    );
    const cordonMs = performance.now() - t;
    expect(sim.store.nodes().filter((n) => n.spec?.unschedulable)).toHaveLength(150);
    expect(cordonMs).toBeLessThan(15_000);
    const pods = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=gpu-750' });
    expect(pods.items.map((p) => p.spec?.nodeName)).toEqual(['gpu-750', 'gpu-750', 'gpu-750', 'gpu-750']);
  });

  it('evicts the pods of a cordoned node and keeps their replacements Pending when the fleet is full', async () => {
    const { core } = clients(sim);
    for (const p of sim.store.podsOnNode('gpu-0')) {
      await core.createNamespacedPodEviction({
        name: p.metadata.name,
        namespace: 'train',
        body: { metadata: { name: p.metadata.name } },
      });
    }
    sim.advance(30_000);
    expect(sim.store.podsOnNode('gpu-0')).toEqual([]);
    const pending = sim.store.pods('train').filter((p) => !p.spec.nodeName);
    expect(pending).toHaveLength(4);
    expect(pending[0]!.status?.conditions?.[0]?.message).toBe(
      '0/1500 nodes are available: 1350 Insufficient nvidia.com/gpu, 150 node(s) were unschedulable.',
    );
  });
});
