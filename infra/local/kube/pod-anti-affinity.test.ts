import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from './index.ts';
import { clients } from './test-helpers.ts';

/** Required hostname anti-affinity in the simulated scheduler (pod-anti-affinity.ts, InterPodAffinity's filter). */
describe('the scheduler and required pod anti-affinity on kubernetes.io/hostname', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', count: 2, allocatable: { cpu: '64', memory: '256Gi', 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'ml' }],
      },
    });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  const replica = (name: string) =>
    c.core.createNamespacedPod({
      namespace: 'ml',
      body: {
        metadata: { name, labels: { app: 'serve' } },
        spec: {
          affinity: {
            podAntiAffinity: {
              requiredDuringSchedulingIgnoredDuringExecution: [
                { labelSelector: { matchLabels: { app: 'serve' } }, topologyKey: 'kubernetes.io/hostname' },
              ],
            },
          },
          containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/gpu': '1' } } }],
        },
      },
    });

  it('puts anti-affine replicas on distinct nodes and keeps the third Pending with the scheduler’s reason', async () => {
    for (const n of ['serve-0', 'serve-1', 'serve-2']) await replica(n);
    const nodes = ['serve-0', 'serve-1'].map((n) => sim.store.pod('ml', n)!.spec.nodeName);
    expect(nodes[0]).toBeDefined();
    expect(nodes[1]).toBeDefined();
    expect(nodes[0]).not.toBe(nodes[1]);
    const third = sim.store.pod('ml', 'serve-2')!;
    expect(third.spec.nodeName).toBeUndefined();
    expect(third.status?.conditions?.[0]).toMatchObject({
      reason: 'Unschedulable',
      message: "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules.",
    });
  });
});
