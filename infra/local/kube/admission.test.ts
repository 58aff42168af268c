import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients, failure, k8s, patchWith } from './test-helpers.ts';

const fleet: Fleet = {
  nodes: [{ name: 'a100', count: 2, allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 } }],
  namespaces: [
    { name: 'team-a', quotas: [{ name: 'gpu', hard: { 'requests.nvidia.com/gpu': 4, pods: 10 } }] },
    {
      name: 'team-b',
      quotas: [{ name: 'compute', hard: { 'requests.cpu': '4', 'limits.memory': '8Gi' } }],
      limitRanges: [
        {
          name: 'defaults',
          limits: [
            {
              type: 'Container' as const,
              default: { cpu: '1', memory: '2Gi' },
              defaultRequest: { cpu: '250m', memory: '1Gi' },
              max: { cpu: '2' },
            },
          ],
        },
      ],
    },
  ],
  pods: [
    {
      name: 'train',
      namespace: 'team-a',
      count: 3,
      owner: { kind: 'Job' as const, name: 'train' },
      requests: { 'nvidia.com/gpu': 1 },
    },
  ],
};

const gpuPod = (name: string, gpus: string) => ({
  metadata: { name },
  spec: { containers: [{ name: 'main', image: 'x', resources: { limits: { 'nvidia.com/gpu': gpus } } }] },
});

describe('admission: ResourceQuota and LimitRange', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  it('reports quota usage computed from the pods in the namespace', async () => {
    const q = await c.core.readNamespacedResourceQuota({ name: 'gpu', namespace: 'team-a' });
    expect(q.status).toEqual({
      hard: { 'requests.nvidia.com/gpu': '4', pods: '10' },
      used: { 'requests.nvidia.com/gpu': '3', pods: '3' },
    });
  });

  it('refuses a pod over quota with 403 and the quota plugin message', async () => {
    const f = await failure(() => c.core.createNamespacedPod({ namespace: 'team-a', body: gpuPod('big', '2') }));
    expect(f.code).toBe(403);
    expect(f.status).toMatchObject({
      reason: 'Forbidden',
      message:
        'pods "big" is forbidden: exceeded quota: gpu, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=3, limited: requests.nvidia.com/gpu=4',
    });
    expect(sim.store.pod('team-a', 'big')).toBeUndefined();
  });

  it('admits a pod that fits the quota exactly, and counts it', async () => {
    await c.core.createNamespacedPod({ namespace: 'team-a', body: gpuPod('fits', '1') });
    const q = await c.core.readNamespacedResourceQuota({ name: 'gpu', namespace: 'team-a' });
    expect(q.status?.used?.['requests.nvidia.com/gpu']).toBe('4');
  });

  it('fills container defaults from the LimitRange', async () => {
    const pod = await c.core.createNamespacedPod({
      namespace: 'team-b',
      body: { metadata: { name: 'web' }, spec: { containers: [{ name: 'main', image: 'x' }] } },
    });
    expect(pod.spec?.containers[0]?.resources).toEqual({
      limits: { cpu: '1', memory: '2Gi' },
      requests: { cpu: '250m', memory: '1Gi' },
    });
    const q = await c.core.readNamespacedResourceQuota({ name: 'compute', namespace: 'team-b' });
    expect(q.status?.used).toEqual({ 'requests.cpu': '250m', 'limits.memory': '2Gi' });
  });

  it('keeps explicit limits as requests rather than the default request', async () => {
    const pod = await c.core.createNamespacedPod({
      namespace: 'team-b',
      body: {
        metadata: { name: 'explicit' },
        spec: { containers: [{ name: 'main', image: 'x', resources: { limits: { cpu: '2' } } }] },
      },
    });
    expect(pod.spec?.containers[0]?.resources?.requests).toEqual({ cpu: '2', memory: '1Gi' });
  });

  it('refuses a container above the LimitRange max with 403', async () => {
    const f = await failure(() =>
      c.core.createNamespacedPod({
        namespace: 'team-b',
        body: {
          metadata: { name: 'huge' },
          spec: { containers: [{ name: 'main', image: 'x', resources: { limits: { cpu: '3' } } }] },
        },
      }),
    );
    expect(f.code).toBe(403);
    expect(f.status.message).toBe('pods "huge" is forbidden: maximum cpu usage per Container is 2, but limit is 3');
  });

  it('rewrites a quota with server-side apply and creates one that does not exist', async () => {
    const apply = patchWith(k8s.PatchStrategy.ServerSideApply);
    await c.core.patchNamespacedResourceQuota(
      {
        name: 'gpu',
        namespace: 'team-a',
        fieldManager: 'gpu-reflex',
        body: {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'gpu', namespace: 'team-a' },
          spec: { hard: { 'requests.nvidia.com/gpu': '16', pods: '10' } },
        },
      },
      apply,
    );
    expect(
      (await c.core.readNamespacedResourceQuota({ name: 'gpu', namespace: 'team-a' })).spec?.hard?.[
        'requests.nvidia.com/gpu'
      ],
    ).toBe('16');
    await c.core.patchNamespacedResourceQuota(
      {
        name: 'mig',
        namespace: 'team-a',
        fieldManager: 'gpu-reflex',
        body: {
          apiVersion: 'v1',
          kind: 'ResourceQuota',
          metadata: { name: 'mig', namespace: 'team-a' },
          spec: { hard: { 'requests.nvidia.com/mig-1g.10gb': '2' } },
        },
      },
      apply,
    );
    expect((await c.core.readNamespacedResourceQuota({ name: 'mig', namespace: 'team-a' })).status?.used).toEqual({
      'requests.nvidia.com/mig-1g.10gb': '0',
    });
    await c.core.createNamespacedPod({ namespace: 'team-a', body: gpuPod('now-fits', '2') });
  });

  it('refuses server-side apply without a fieldManager with 422, as the real server', async () => {
    const f = await failure(() =>
      c.core.patchNamespacedResourceQuota(
        {
          name: 'gpu',
          namespace: 'team-a',
          body: { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'gpu' }, spec: { hard: { pods: '1' } } },
        },
        patchWith(k8s.PatchStrategy.ServerSideApply),
      ),
    );
    expect(f.code).toBe(422);
    expect(f.status.message).toContain('fieldManager: Required value: is required for apply patch');
  });

  it('accepts but never tracks a bare extended resource in a quota, as the real quota evaluator', async () => {
    await c.core.createNamespacedResourceQuota({
      namespace: 'team-a',
      body: { metadata: { name: 'bare' }, spec: { hard: { 'nvidia.com/gpu': '1' } } },
    });
    const q = await c.core.readNamespacedResourceQuota({ name: 'bare', namespace: 'team-a' });
    expect(q.status?.used).toEqual({});
    await c.core.createNamespacedPod({ namespace: 'team-a', body: gpuPod('untracked', '2') });
    expect(sim.store.pod('team-a', 'untracked')!.spec.nodeName).toBeDefined();
  });

  it('refuses a quota with a bad quantity as 422 naming the field', async () => {
    const f = await failure(() =>
      c.core.createNamespacedResourceQuota({
        namespace: 'team-a',
        body: { metadata: { name: 'bad' }, spec: { hard: { 'requests.nvidia.com/gpu': 'lots' } } },
      }),
    );
    expect(f.code).toBe(422);
    expect(f.status.message).toContain('spec.hard[requests.nvidia.com/gpu]');
  });

  it('refuses pods in a namespace that does not exist with 404', async () => {
    const f = await failure(() => c.core.createNamespacedPod({ namespace: 'nowhere', body: gpuPod('x', '1') }));
    expect(f.code).toBe(404);
    expect(f.status.message).toBe('namespaces "nowhere" not found');
  });

  it('refuses a duplicate name with 409 AlreadyExists', async () => {
    const f = await failure(() => c.core.createNamespacedPod({ namespace: 'team-a', body: gpuPod('fits', '0') }));
    expect(f.code).toBe(409);
    expect(f.status).toMatchObject({
      reason: 'AlreadyExists',
      message: 'pods "fits" already exists',
      details: { name: 'fits', kind: 'pods' },
    });
  });
});
