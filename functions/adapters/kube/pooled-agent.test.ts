import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../../../infra/local/kube/index.ts';
import { loadKubeConfig } from './config.ts';
import { PooledKubeConfig } from './pooled-agent.ts';

let sim: KubeSim;
let connections = 0;

beforeAll(async () => {
  sim = await startKubeSim({
    fleet: { nodes: [{ name: 'gpu', count: 3, labels: { pool: 'a' }, allocatable: { cpu: '8', memory: '32Gi' } }] },
  });
  sim.server.on('connection', () => connections++);
});
afterAll(() => sim?.close());

describe('PooledKubeConfig', () => {
  it('sends consecutive API calls over one kept-alive connection', async () => {
    const kc = loadKubeConfig({ kubeconfigText: sim.kubeconfig() });
    expect(kc).toBeInstanceOf(PooledKubeConfig);
    const core = kc.makeApiClient(CoreV1Api);
    const before = connections;
    for (let i = 0; i < 5; i++) await core.readNode({ name: 'gpu-0' });
    const listed = await core.listNode({ labelSelector: 'pool=a' });
    expect(listed.items).toHaveLength(3);
    expect(connections - before).toBe(1);
    expect((kc as PooledKubeConfig).pooledAgents).toBe(1);
    (kc as PooledKubeConfig).destroyAgents();
  });

  it('keeps the stock behaviour of one connection per call for a plain KubeConfig (what the pool fixes)', async () => {
    const kc = new KubeConfig();
    kc.loadFromString(sim.kubeconfig());
    const core = kc.makeApiClient(CoreV1Api);
    const before = connections;
    for (let i = 0; i < 3; i++) await core.readNode({ name: 'gpu-0' });
    expect(connections - before).toBe(3);
  });

  it('serves concurrent calls and keeps one agent for one option set', async () => {
    const kc = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }) as PooledKubeConfig;
    const core = kc.makeApiClient(CoreV1Api);
    const names = await Promise.all(
      ['gpu-0', 'gpu-1', 'gpu-2'].map(async (name) => (await core.readNode({ name })).metadata?.name),
    );
    expect(names).toEqual(['gpu-0', 'gpu-1', 'gpu-2']);
    expect(kc.pooledAgents).toBe(1);
    kc.destroyAgents();
    expect(kc.pooledAgents).toBe(0);
    // A destroyed pool builds a fresh agent on the next call.
    await core.readNode({ name: 'gpu-0' });
    expect(kc.pooledAgents).toBe(1);
    kc.destroyAgents();
  });
});
