import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../../functions/adapters/kube/config.ts';
import { startKubeSim, type KubeSim } from './index.ts';
import { clients } from './test-helpers.ts';
import type { PodGroup } from './volcano.ts';

/**
 * Volcano's gang scheduling (volcano.ts, from volcano.sh/en/docs/podgroup/): a PodGroup's pods bind
 * all together once minMember of them fit, and none before; meanwhile each says Unschedulable.
 */
describe('the simulated Volcano scheduler and PodGroups', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  let custom: CustomObjectsApi;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', count: 3, allocatable: { cpu: '64', memory: '256Gi', 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'ml' }],
      },
    });
    c = clients(sim);
    custom = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CustomObjectsApi);
  });
  afterAll(() => sim.close());

  const group = (name: string, minMember: number) =>
    custom.createNamespacedCustomObject({
      group: 'scheduling.volcano.sh',
      version: 'v1beta1',
      namespace: 'ml',
      plural: 'podgroups',
      body: { apiVersion: 'scheduling.volcano.sh/v1beta1', kind: 'PodGroup', metadata: { name }, spec: { minMember } },
    });
  const pod = (name: string, pg: string) =>
    c.core.createNamespacedPod({
      namespace: 'ml',
      body: {
        metadata: { name, annotations: { 'scheduling.k8s.io/group-name': pg } },
        spec: {
          schedulerName: 'volcano',
          containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/gpu': '8' } } }],
        },
      },
    });
  const stored = (name: string) => sim.store.pod('ml', name)!;
  const pgStatus = (name: string) =>
    (sim.store.get('podgroups.scheduling.volcano.sh', 'ml', name) as PodGroup | undefined)?.status;

  it('keeps a gang of 4 × 8 GPUs Pending on 3 nodes, each pod Unschedulable, the PodGroup Pending', async () => {
    await group('big', 4);
    for (let i = 0; i < 4; i++) await pod(`big-${i}`, 'big');
    await c.core.listPodForAllNamespaces();
    for (let i = 0; i < 4; i++) {
      expect(stored(`big-${i}`).spec.nodeName).toBeUndefined();
      expect(stored(`big-${i}`).status?.conditions?.[0]).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    }
    expect(pgStatus('big')).toMatchObject({ phase: 'Pending', conditions: [{ type: 'Unschedulable' }] });
  });

  it('binds a gang of 3 that fits at once, all together', async () => {
    await group('small', 3);
    for (let i = 0; i < 3; i++) await pod(`small-${i}`, 'small');
    await c.core.listPodForAllNamespaces();
    const nodes = [0, 1, 2].map((i) => stored(`small-${i}`).spec.nodeName);
    expect(new Set(nodes).size).toBe(3);
    expect(pgStatus('small')).toMatchObject({ phase: 'Running', running: 3 });
    // The big gang still fits nowhere: the small one took every GPU.
    expect(stored('big-0').spec.nodeName).toBeUndefined();
  });
});
