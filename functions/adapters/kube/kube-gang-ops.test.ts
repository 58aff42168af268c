import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../../../infra/local/kube/index.ts';
import { loadKubeConfig } from './config.ts';
import { KubeGangOps } from './kube-gang-ops.ts';

/** PodGroups through the generic client; a kind the cluster does not serve (Kueue here) lists as none. */
describe('KubeGangOps against the simulated API server', () => {
  let sim: KubeSim;
  let custom: CustomObjectsApi;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet: { nodes: [], namespaces: [{ name: 'ml' }, { name: 'cv' }] } });
    custom = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CustomObjectsApi);
  });
  afterAll(() => sim.close());

  it('lists the PodGroups of every namespace, page by page, with their minMember and minResources', async () => {
    for (const [namespace, name, minMember] of [
      ['ml', 'train', 4],
      ['cv', 'detect', 2],
      ['ml', 'eval', 1],
    ] as const)
      await custom.createNamespacedCustomObject({
        group: 'scheduling.volcano.sh',
        version: 'v1beta1',
        namespace,
        plural: 'podgroups',
        body: {
          apiVersion: 'scheduling.volcano.sh/v1beta1',
          kind: 'PodGroup',
          metadata: { name },
          spec: { minMember, minResources: { 'nvidia.com/gpu': '8' } },
        },
      });
    const got = await new KubeGangOps(custom, 2).list();
    expect(got.podGroups.map((g) => [g.metadata?.namespace, g.metadata?.name, g.spec?.minMember]).sort()).toEqual([
      ['cv', 'detect', 2],
      ['ml', 'eval', 1],
      ['ml', 'train', 4],
    ]);
    expect(got.podGroups[0]!.spec?.minResources).toEqual({ 'nvidia.com/gpu': '8' });
    expect(got.workloads).toEqual([]);
  });

  it('throws what is not a 404 (a refused list is not "no gangs")', async () => {
    const broken = {
      listClusterCustomObject: () => Promise.reject(Object.assign(new Error('forbidden'), { code: 403 })),
    } as unknown as CustomObjectsApi;
    await expect(new KubeGangOps(broken).list()).rejects.toThrow();
  });
});
