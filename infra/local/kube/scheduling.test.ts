import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients } from './test-helpers.ts';

const GPU_TAINT = { key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' as const };
const fleet: Fleet = {
  nodes: [
    {
      name: 'a100',
      count: 2,
      labels: { accelerator: 'nvidia-a100' },
      taints: [GPU_TAINT],
      allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 },
    },
    {
      name: 'h100-mig',
      labels: { accelerator: 'nvidia-h100', 'nvidia.com/mig.strategy': 'mixed' },
      taints: [GPU_TAINT],
      allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': 2, 'nvidia.com/mig-3g.40gb': 1 },
    },
    {
      name: 'a10-cgpu',
      labels: { accelerator: 'nvidia-a10' },
      allocatable: { cpu: '62', memory: '230Gi', 'aliyun.com/gpu-mem': 24, 'aliyun.com/gpu-core.percentage': 100 },
    },
    {
      name: 'mi300',
      labels: { accelerator: 'amd-mi300x' },
      allocatable: { cpu: '128', memory: '2000Gi', 'amd.com/gpu': 8 },
    },
    { name: 'cpu', labels: { pool: 'system' }, allocatable: { cpu: '4', memory: '16Gi' } },
  ],
  namespaces: [{ name: 'work' }],
};

describe('the scheduler', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  let seq = 0;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  /** Creates a pod through the client and returns where the scheduler put it. */
  async function place(
    requests: Record<string, string>,
    extra: Record<string, unknown> = {},
  ): Promise<string | undefined> {
    const name = `p${++seq}`;
    await c.core.createNamespacedPod({
      namespace: 'work',
      body: {
        metadata: { name },
        spec: { containers: [{ name: 'main', image: 'x', resources: { requests, limits: requests } }], ...extra },
      },
    });
    return sim.store.pod('work', name)!.spec.nodeName;
  }
  const tolerateGpu = { tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }] };

  it.each([
    ['a full GPU request on a tainted A100 node when tolerated', { 'nvidia.com/gpu': '4' }, tolerateGpu, 'a100-0'],
    ['a MIG slice on the mixed-strategy H100 node', { 'nvidia.com/mig-3g.40gb': '1' }, tolerateGpu, 'h100-mig'],
    ['an Alibaba cGPU memory share on the A10 node', { 'aliyun.com/gpu-mem': '8' }, {}, 'a10-cgpu'],
    ['an AMD GPU on the MI300 node', { 'amd.com/gpu': '2' }, {}, 'mi300'],
    ['a CPU pod on the first untainted node by name', { cpu: '1' }, {}, 'a10-cgpu'],
    ['a pod pinned by nodeSelector', { cpu: '1' }, { nodeSelector: { pool: 'system' } }, 'cpu'],
    [
      'a pod pinned by required node affinity',
      { cpu: '1' },
      {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: {
              nodeSelectorTerms: [
                { matchExpressions: [{ key: 'accelerator', operator: 'In', values: ['amd-mi300x'] }] },
              ],
            },
          },
        },
      },
      'mi300',
    ],
  ])('places %s', async (_what, requests, extra, node) => {
    expect(await place(requests, extra)).toBe(node);
    expect(sim.store.pods('work').find((p) => p.spec.nodeName === node)?.status?.phase).toBe('Running');
  });

  it('leaves a GPU pod without the toleration Pending with the scheduler message', async () => {
    expect(await place({ 'nvidia.com/gpu': '1' })).toBeUndefined();
    const pod = sim.store.pod('work', `p${seq}`)!;
    expect(pod.status?.phase).toBe('Pending');
    const cond = pod.status?.conditions?.find((x) => x.type === 'PodScheduled');
    expect(cond).toMatchObject({ status: 'False', reason: 'Unschedulable' });
    expect(cond?.message).toContain('0/6 nodes are available');
    expect(cond?.message).toContain('3 node(s) had untolerated taint {nvidia.com/gpu: present}');
  });

  it('lists unscheduled pods with the field selector spec.nodeName= (empty)', async () => {
    const pending = await c.core.listNamespacedPod({ namespace: 'work', fieldSelector: 'spec.nodeName=' });
    expect(pending.items.map((p) => p.metadata?.name)).toEqual([`p${seq}`]);
    expect(pending.items[0]!.status?.phase).toBe('Pending');
  });

  it('fills MIG slices exactly and keeps the next request Pending', async () => {
    expect(await place({ 'nvidia.com/mig-1g.10gb': '1' }, tolerateGpu)).toBe('h100-mig');
    expect(await place({ 'nvidia.com/mig-1g.10gb': '1' }, tolerateGpu)).toBe('h100-mig');
    expect(await place({ 'nvidia.com/mig-1g.10gb': '1' }, tolerateGpu)).toBeUndefined();
  });

  it('skips cordoned nodes and binds the waiting pod when room appears', async () => {
    await c.core.patchNode({ name: 'a100-0', body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });
    await c.core.patchNode({ name: 'a100-1', body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });
    expect(await place({ 'nvidia.com/gpu': '8' }, tolerateGpu)).toBeUndefined();
    const waiting = `p${seq}`;
    await c.core.patchNode({ name: 'a100-1', body: [{ op: 'remove', path: '/spec/unschedulable' }] });
    expect(sim.store.pod('work', waiting)!.spec.nodeName).toBe('a100-1');
  });

  it('binds a pending pod when a pod on a full node goes away', async () => {
    // a100-1 is now full (8 GPUs); a100-0 is cordoned with 4 used.
    expect(await place({ 'nvidia.com/gpu': '8' }, tolerateGpu)).toBeUndefined();
    const waiting = `p${seq}`;
    const holder = sim.store.podsOnNode('a100-1').find((p) => p.metadata.namespace === 'work')!;
    await c.core.deleteNamespacedPod({ name: holder.metadata.name, namespace: 'work' });
    expect(sim.store.pod('work', waiting)!.spec.nodeName).toBeUndefined();
    sim.advance(30_000);
    expect(sim.store.pod('work', waiting)!.spec.nodeName).toBe('a100-1');
  });

  it('binds through the bindings API and refuses a second binding with 409', async () => {
    await c.core.createNamespacedPod({
      namespace: 'work',
      body: { metadata: { name: 'manual' }, spec: { schedulerName: 'none', containers: [{ name: 'm', image: 'x' }] } },
    });
    expect(sim.store.pod('work', 'manual')!.spec.nodeName).toBeUndefined();
    await c.core.createNamespacedBinding({
      namespace: 'work',
      body: { metadata: { name: 'manual' }, target: { kind: 'Node', name: 'cpu' } },
    });
    expect(sim.store.pod('work', 'manual')!.spec.nodeName).toBe('cpu');
    expect(sim.store.pod('work', 'manual')!.status?.phase).toBe('Running');
    // The pod subresource form, as kube-scheduler posts it:
    const again = await fetch(`${sim.url}/api/v1/namespaces/work/pods/manual/binding`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ target: { name: 'mi300' } }),
    });
    expect(again.status).toBe(409);
  });

  it('skips a node whose Ready condition is False unless the pod tolerates not-ready', async () => {
    const node = await c.core.readNode({ name: 'cpu' });
    node.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }];
    await c.core.replaceNodeStatus({ name: 'cpu', body: node });
    expect(await place({ cpu: '1' }, { nodeSelector: { pool: 'system' } })).toBeUndefined();
    expect(
      await place(
        { cpu: '1' },
        {
          nodeSelector: { pool: 'system' },
          tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists' }],
        },
      ),
    ).toBe('cpu');
  });

  it('evicts pods that do not tolerate a NoExecute taint', async () => {
    const before = sim.store.podsOnNode('mi300').filter((p) => !p.metadata.deletionTimestamp).length;
    expect(before).toBeGreaterThan(0);
    await c.core.patchNode(
      {
        name: 'mi300',
        body: { spec: { taints: [{ key: 'gpu-reflex.io/faulty', value: 'xid-79', effect: 'NoExecute' }] } },
      },
      (await import('./test-helpers.ts')).patchWith('application/merge-patch+json'),
    );
    expect(sim.store.podsOnNode('mi300').every((p) => p.metadata.deletionTimestamp !== undefined)).toBe(true);
  });
});

describe('pods that finish by themselves', () => {
  it('marks an annotated Job pod Succeeded after its run time, frees its GPUs for a waiting pod and does not replace it', async () => {
    const sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'a100', allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'train' }],
        pods: [
          {
            name: 'epoch',
            namespace: 'train',
            owner: { kind: 'Job', name: 'epoch' },
            requests: { 'nvidia.com/gpu': 8 },
            completeAfterSeconds: 600,
          },
          { name: 'next', namespace: 'train', owner: { kind: 'Job', name: 'next' }, requests: { 'nvidia.com/gpu': 8 } },
        ],
      },
    });
    try {
      expect(sim.store.pod('train', 'next')!.status?.phase).toBe('Pending');
      sim.advance(599_000);
      expect(sim.store.pod('train', 'epoch')!.status?.phase).toBe('Running');
      sim.advance(1_000);
      const done = sim.store.pod('train', 'epoch')!;
      expect(done.status?.phase).toBe('Succeeded');
      expect((done.status?.containerStatuses as { state: unknown }[])[0]!.state).toEqual({
        terminated: { exitCode: 0, reason: 'Completed', finishedAt: '2026-01-01T00:10:00Z' },
      });
      expect(sim.store.pod('train', 'next')!.spec.nodeName).toBe('a100');
      expect(sim.store.pods('train')).toHaveLength(2);
    } finally {
      await sim.close();
    }
  });
});

describe('the scheduler while nodes churn', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'n', count: 2, allocatable: { cpu: '8', memory: '64Gi', 'nvidia.com/gpu': 2 } }],
        namespaces: [{ name: 'work' }],
      },
    });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  const create = (name: string, gpus: number, extra: Record<string, unknown> = {}) =>
    c.core.createNamespacedPod({
      namespace: 'work',
      body: {
        metadata: { name },
        spec: {
          containers: [{ name: 'main', image: 'x', resources: { requests: { 'nvidia.com/gpu': String(gpus) } } }],
          ...extra,
        },
      },
    });
  const nodeOf = (name: string) => sim.store.pod('work', name)?.spec.nodeName;
  const label = (node: string, labels: Record<string, string>) =>
    c.core.patchNode({
      name: node,
      body: [{ op: 'add', path: '/metadata/labels', value: { ...sim.store.node(node)!.metadata.labels, ...labels } }],
    });

  it('binds a waiting pod when a node gains the label it selects on, whatever other labels change first', async () => {
    await create('sel', 1, { nodeSelector: { tier: 'gold' } });
    await create('aff', 1, {
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['b'] }] }],
          },
        },
      },
    });
    await label('n-0', { 'gpu-reflex.io/state': 'draining' });
    expect([nodeOf('sel'), nodeOf('aff')]).toEqual([undefined, undefined]);
    await label('n-1', { tier: 'gold' });
    expect(nodeOf('sel')).toBe('n-1');
    await label('n-0', { zone: 'b' });
    expect(nodeOf('aff')).toBe('n-0');
  });

  it('binds waiting pods of one shape one by one as room appears, the rest keep the scheduler message', async () => {
    // n-0 and n-1 each have 1 GPU left; fill them, then queue three more of the same shape.
    await create('fill-0', 1, { nodeName: 'n-0' });
    await create('fill-1', 1, { nodeName: 'n-1' });
    for (const n of ['w1', 'w2', 'w3']) await create(n, 1);
    expect(['w1', 'w2', 'w3'].map(nodeOf)).toEqual([undefined, undefined, undefined]);
    const message = (n: string) =>
      (
        sim.store.pod('work', n)?.status?.conditions?.find((x) => x.type === 'PodScheduled') as
          { message?: string } | undefined
      )?.message;
    expect(message('w3')).toMatch(/^0\/2 nodes are available: .*Insufficient nvidia\.com\/gpu/);
    await c.core.deleteNamespacedPod({ name: 'fill-0', namespace: 'work', gracePeriodSeconds: 0 });
    expect(['w1', 'w2', 'w3'].map(nodeOf)).toEqual(['n-0', undefined, undefined]);
    await c.core.deleteNamespacedPod({ name: 'fill-1', namespace: 'work', gracePeriodSeconds: 0 });
    expect(['w1', 'w2', 'w3'].map(nodeOf)).toEqual(['n-0', 'n-1', undefined]);
    expect(message('w3')).toMatch(/Insufficient nvidia\.com\/gpu/);
  });
});

describe('the scheduler counts what Kubernetes counts', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'n', allocatable: { cpu: '4', memory: '16Gi', 'nvidia.com/gpu': 1 } }],
        namespaces: [{ name: 'work' }],
      },
    });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  const message = (n: string) =>
    (
      sim.store.pod('work', n)?.status?.conditions?.find((x) => x.type === 'PodScheduled') as
        { message?: string } | undefined
    )?.message;

  it("adds a sidecar's requests to its containers' (KEP-753), so a pod that fits only without it stays Pending", async () => {
    const spec = {
      containers: [
        {
          name: 'main',
          image: 'x',
          resources: { requests: { cpu: '2', 'nvidia.com/gpu': '1' }, limits: { 'nvidia.com/gpu': '1' } },
        },
      ],
      initContainers: [
        { name: 'proxy', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '2500m' } } },
      ],
    };
    await c.core.createNamespacedPod({ namespace: 'work', body: { metadata: { name: 'with-sidecar' }, spec } });
    expect(sim.store.pod('work', 'with-sidecar')!.spec.nodeName).toBeUndefined();
    expect(message('with-sidecar')).toBe('0/1 nodes are available: 1 Insufficient cpu.');
  });

  it('matches no node for a pod whose only node selector term is empty', async () => {
    const affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [] }] },
      },
    };
    await c.core.createNamespacedPod({
      namespace: 'work',
      body: { metadata: { name: 'empty-term' }, spec: { affinity, containers: [{ name: 'main', image: 'x' }] } },
    });
    expect(message('empty-term')).toBe("0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector.");
  });
});
