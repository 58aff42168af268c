import { CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../../../infra/local/kube/index.ts';
import { loadKubeConfig } from './config.ts';
import { FakeCluster } from './fake-cluster.ts';
import { FakeConfigFile } from './fake-stores.ts';
import { KubeConfigFile } from './kube-config-file.ts';
import type { ConfigFileOps } from './ports.ts';

let sim: KubeSim;
let core: CoreV1Api;
beforeAll(async () => {
  sim = await startKubeSim({ fleet: { namespaces: [{ name: 'gpu-operator' }] } });
  core = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CoreV1Api);
});
afterAll(() => sim.close());

/** One contract, two implementations: the real adapter over the simulated API server, and the fake. */
const impls: [string, () => ConfigFileOps][] = [
  [
    'KubeConfigFile',
    () =>
      new KubeConfigFile(core, {
        namespace: 'gpu-operator',
        name: `cfg-${Math.random().toString(36).slice(2, 8)}`,
        key: 'config.yaml',
      }),
  ],
  ['FakeConfigFile', () => new FakeConfigFile(new FakeCluster())],
];

describe.each(impls)('%s', (_name, make) => {
  it('reads nothing before the first write, then the text written; each update sees the last', async () => {
    const f = make();
    expect(await f.read()).toBeUndefined();
    await f.update((cur) => `${cur ?? ''}a\n`);
    await f.update((cur) => `${cur ?? ''}b\n`);
    expect(await f.read()).toBe('a\nb\n');
  });
});

describe('KubeConfigFile', () => {
  it("keeps the ConfigMap's other keys", async () => {
    await core.createNamespacedConfigMap({
      namespace: 'gpu-operator',
      body: { metadata: { name: 'shared' }, data: { 'other.yaml': 'x: 1\n' } },
    });
    const f = new KubeConfigFile(core, { namespace: 'gpu-operator', name: 'shared', key: 'config.yaml' });
    await f.update(() => 'version: v1\n');
    const cm = await core.readNamespacedConfigMap({ namespace: 'gpu-operator', name: 'shared' });
    expect(cm.data).toEqual({ 'other.yaml': 'x: 1\n', 'config.yaml': 'version: v1\n' });
  });
});

describe('KubeConfigFile.clusterPolicies', () => {
  it("reads each ClusterPolicy's spec.migManager.config.name and whether the operator ignores it", async () => {
    const kc = loadKubeConfig({ kubeconfigText: sim.kubeconfig() });
    const custom = kc.makeApiClient(CustomObjectsApi);
    const f = new KubeConfigFile(core, { namespace: 'gpu-operator', name: 'mine', key: 'config.yaml' }, 3, custom);
    expect(await f.clusterPolicies()).toEqual([]);
    const put = (name: string, spec: object, state: string) =>
      custom.createClusterCustomObject({
        group: 'nvidia.com',
        version: 'v1',
        plural: 'clusterpolicies',
        body: { apiVersion: 'nvidia.com/v1', kind: 'ClusterPolicy', metadata: { name }, spec, status: { state } },
      });
    await put('cluster-policy', { migManager: { config: { name: 'mine', default: 'all-disabled' } } }, 'ready');
    await put('second', { migManager: { enabled: true } }, 'ignored');
    expect(await f.clusterPolicies()).toEqual([
      { name: 'cluster-policy', configName: 'mine', ignored: false },
      { name: 'second', ignored: true },
    ]);
    // Without the custom-objects client it reads as a cluster with no GPU Operator.
    expect(await new KubeConfigFile(core, f.ref).clusterPolicies()).toBeUndefined();
  });
});
