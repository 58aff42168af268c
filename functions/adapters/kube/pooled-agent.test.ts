import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../../../infra/local/kube/index.ts';
import { loadKubeConfig } from './config.ts';
import { fromKubeError, TransientError } from '../errors.ts';
import { KUBE_REQUEST_TIMEOUT_MS, PooledKubeConfig } from './pooled-agent.ts';

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

describe('a request the API server never answers', () => {
  it('is aborted at the time limit and fails as a TransientError, not held until the Lambda timeout', async () => {
    // A server that accepts and never answers (what a hung API server looks like from here).
    const held: ServerResponse[] = [];
    const silent = createServer((_req, res) => void held.push(res));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    try {
      const kc = new PooledKubeConfig(100);
      kc.loadFromString(sim.kubeconfig().replace(/server: \S+/, `server: http://127.0.0.1:${port}`));
      const started = Date.now();
      const err = await kc
        .makeApiClient(CoreV1Api)
        .readNode({ name: 'gpu-0' })
        .catch((e: unknown) => e);
      expect(Date.now() - started).toBeLessThan(5_000);
      const mapped = fromKubeError(err, 'reading node gpu-0');
      expect(mapped).toBeInstanceOf(TransientError);
      expect(mapped.message).toBe('reading node gpu-0: no answer in time');
      expect(held).toHaveLength(1);
      expect(loadKubeConfig({ kubeconfigText: sim.kubeconfig() })).toMatchObject({
        requestTimeoutMs: KUBE_REQUEST_TIMEOUT_MS,
      });
    } finally {
      for (const r of held) r.destroy();
      silent.close();
    }
  });
});
