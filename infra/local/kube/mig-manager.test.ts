import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients, k8s, patchWith } from './test-helpers.ts';
import { MIG_MANAGER_POD, SIM_MIG_APPLIED_ANNOTATION } from './mig-manager.ts';

const fleet: Fleet = {
  nodes: [
    {
      name: 'h100',
      labels: {
        'nvidia.com/mig.strategy': 'mixed',
        'nvidia.com/mig.config': 'all-balanced',
        'nvidia.com/mig-1g.10gb.count': '16',
      },
      allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-3g.40gb': 8 },
    },
  ],
  namespaces: [{ name: 'research' }],
  migConfigs: { 'all-1g.10gb': { 'nvidia.com/mig-1g.10gb': 56 } },
  migReconfigureSeconds: 20,
};

describe('the simulated mig-manager', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterEach(() => sim.close());

  const setConfig = (name: string) =>
    c.core.patchNode(
      { name: 'h100', body: { metadata: { labels: { 'nvidia.com/mig.config': name } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
  const labels = () => sim.store.node('h100')!.metadata.labels!;

  it('goes pending, then after the reconfigure time swaps the MIG resources and reports success', async () => {
    await setConfig('all-1g.10gb');
    expect(labels()['nvidia.com/mig.config.state']).toBe('pending');
    sim.advance(19_999);
    expect(labels()['nvidia.com/mig.config.state']).toBe('pending');
    sim.advance(1);
    expect(labels()['nvidia.com/mig.config.state']).toBe('success');
    expect(labels()['nvidia.com/mig-1g.10gb.count']).toBe('56');
    const alloc = sim.store.node('h100')!.status?.allocatable;
    expect(alloc).toMatchObject({ cpu: '190', 'nvidia.com/mig-1g.10gb': '56' });
    expect(alloc?.['nvidia.com/mig-3g.40gb']).toBeUndefined();
  });

  it('binds a pod waiting for slices the new layout provides', async () => {
    await c.core.createNamespacedPod({
      namespace: 'research',
      body: {
        metadata: { name: 'many' },
        spec: { containers: [{ name: 'm', image: 'x', resources: { limits: { 'nvidia.com/mig-1g.10gb': '40' } } }] },
      },
    });
    expect(sim.store.pod('research', 'many')!.spec.nodeName).toBeUndefined();
    await setConfig('all-1g.10gb');
    sim.advance(20_000);
    expect(sim.store.pod('research', 'many')!.spec.nodeName).toBe('h100');
  });

  it('reports failed for a layout it does not know and leaves resources alone', async () => {
    await setConfig('all-9g.99gb');
    sim.advance(20_000);
    expect(labels()['nvidia.com/mig.config.state']).toBe('failed');
    expect(sim.store.node('h100')!.status?.allocatable?.['nvidia.com/mig-3g.40gb']).toBe('8');
  });
});

describe("the simulated mig-manager on its pod's restart", () => {
  const withManager: Fleet = {
    nodes: [
      {
        name: 'h100',
        labels: {
          'nvidia.com/mig.strategy': 'mixed',
          'nvidia.com/mig.config': 'all-1g.10gb',
          'nvidia.com/mig.config.state': 'success',
        },
        allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': 56 },
      },
    ],
    namespaces: [{ name: 'gpu-operator' }],
    daemonSets: [
      {
        name: 'nvidia-mig-manager',
        namespace: 'gpu-operator',
        labels: { app: 'nvidia-mig-manager' },
        tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
      },
    ],
    migConfigs: { 'all-1g.10gb': { 'nvidia.com/mig-1g.10gb': 56 } },
    migReconfigureSeconds: 20,
  };
  let sim: KubeSim;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet: withManager });
    sim.advance(1_000);
  });
  afterEach(() => sim.close());

  const node = () => sim.store.node('h100')!;
  const managers = () =>
    sim.store
      .podsOnNode('h100')
      .filter((p) => p.metadata.namespace === MIG_MANAGER_POD.namespace && !p.metadata.deletionTimestamp);

  it("applies the node's config again when a new pod of it starts, though the label did not change", async () => {
    expect(managers()).toHaveLength(1);
    // The pod running from the start has applied it already; the same label set again is no change.
    await clients(sim).core.patchNode(
      { name: 'h100', body: { metadata: { labels: { 'nvidia.com/mig.config': 'all-1g.10gb' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    sim.advance(30_000);
    expect(node().metadata.annotations?.[SIM_MIG_APPLIED_ANNOTATION]).toBeUndefined();
    const first = managers()[0]!;
    await clients(sim).core.deleteNamespacedPod({
      namespace: first.metadata.namespace!,
      name: first.metadata.name,
      gracePeriodSeconds: 0,
    });
    for (let i = 0; i < 10 && managers().length === 0; i++) sim.advance(1_000);
    expect(managers()[0]?.metadata.uid).not.toBe(first.metadata.uid);
    sim.advance(1_000); // the new pod starts, reads its Node, and goes to work
    expect(node().metadata.labels?.['nvidia.com/mig.config.state']).toBe('pending');
    sim.advance(20_000);
    expect(node().metadata.labels?.['nvidia.com/mig.config.state']).toBe('success');
    expect(node().metadata.annotations?.[SIM_MIG_APPLIED_ANNOTATION]).toBeDefined();
    expect(node().status?.allocatable?.['nvidia.com/mig-1g.10gb']).toBe('56');
  });
});

describe('the simulated mig-manager applies a mig-parted config only where the driver can place it', () => {
  const CONFIG = `version: v1
mig-configs:
  balanced:
    - devices: all
      mig-enabled: true
      mig-devices: { 1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1 }
  two-4g:
    - devices: all
      mig-enabled: true
      mig-devices: { 4g.40gb: 2 }
  3g-3g-1g:
    - devices: all
      mig-enabled: true
      mig-devices: { 3g.40gb: 2, 1g.10gb: 1 }
  a100-40-names:
    - devices: all
      mig-enabled: true
      mig-devices: { 1g.5gb: 7 }
`;
  const h100: Fleet = {
    nodes: [
      {
        name: 'h100',
        labels: {
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          'nvidia.com/gpu.count': '2',
          'nvidia.com/mig.strategy': 'mixed',
        },
        allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-7g.80gb': 2 },
      },
    ],
    namespaces: [{ name: 'gpu-operator' }],
    migReconfigureSeconds: 20,
    migManagerConfig: 'default-mig-parted-config',
  };
  let sim: KubeSim;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet: h100 });
    // Replaces the GPU Operator's shipped config the fleet starts with.
    await clients(sim).core.replaceNamespacedConfigMap({
      name: 'default-mig-parted-config',
      namespace: 'gpu-operator',
      body: {
        metadata: { name: 'default-mig-parted-config', namespace: 'gpu-operator' },
        data: { 'config.yaml': CONFIG },
      },
    });
  });
  afterEach(() => sim.close());

  const apply = async (name: string) => {
    await clients(sim).core.patchNode(
      { name: 'h100', body: { metadata: { labels: { 'nvidia.com/mig.config': name } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    sim.advance(20_000);
    const n = sim.store.node('h100')!;
    return {
      state: n.metadata.labels?.['nvidia.com/mig.config.state'],
      alloc: Object.fromEntries(
        Object.entries(n.status?.allocatable ?? {}).filter(([k]) => k.startsWith('nvidia.com/mig-')),
      ),
    };
  };

  it("applies NVIDIA's balanced layout (mig-parted's all-balanced for H100-80GB)", async () => {
    expect(await apply('balanced')).toEqual({
      state: 'success',
      alloc: { 'nvidia.com/mig-1g.10gb': '4', 'nvidia.com/mig-2g.20gb': '2', 'nvidia.com/mig-3g.40gb': '2' },
    });
  });

  it.each([
    ['two 4g (one 4g per GPU: its only start is 0)', 'two-4g'],
    ['3g + 3g + 1g (the two 3g fill all 8 memory slices)', '3g-3g-1g'],
    ["another model's profile names", 'a100-40-names'],
  ])('fails %s and leaves the resources as they were', async (_, name) => {
    expect(await apply(name)).toEqual({ state: 'failed', alloc: { 'nvidia.com/mig-7g.80gb': '2' } });
  });
});

describe('the simulated GPU Operator reconciles its own mig-parted ConfigMap when a GPU node joins', () => {
  const ENTRY = `version: v1
mig-configs:
  gpu-reflex-h100-0-aaaaaaaa:
    - devices: all
      mig-enabled: true
      mig-devices: { 3g.40gb: 2 }
`;
  const fleetWith = (migManagerConfig: string): Fleet => ({
    nodes: [
      {
        name: 'h100',
        labels: {
          'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
          'nvidia.com/gpu.count': '2',
          'nvidia.com/mig.strategy': 'mixed',
        },
        allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-7g.80gb': 2 },
      },
    ],
    namespaces: [{ name: 'gpu-operator' }],
    migReconfigureSeconds: 20,
    migManagerConfig,
  });
  let sim: KubeSim | undefined;
  afterEach(() => sim?.close());

  /** Our entry written, the label set, then a GPU node joins while mig-manager is still at work. */
  async function relayoutWithReconcile(configMap: string) {
    sim = await startKubeSim({ fleet: fleetWith(configMap) });
    const c = clients(sim);
    const body = { metadata: { name: configMap, namespace: 'gpu-operator' }, data: { 'config.yaml': ENTRY } };
    if (sim.store.get('configmaps', 'gpu-operator', configMap))
      await c.core.replaceNamespacedConfigMap({ name: configMap, namespace: 'gpu-operator', body });
    else await c.core.createNamespacedConfigMap({ namespace: 'gpu-operator', body });
    await c.core.patchNode(
      { name: 'h100', body: { metadata: { labels: { 'nvidia.com/mig.config': 'gpu-reflex-h100-0-aaaaaaaa' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    sim.advance(5_000);
    await c.core.createNode({
      body: { metadata: { name: 'h100-new', labels: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' } } },
    });
    sim.advance(20_000);
    const n = sim.store.node('h100')!;
    const cm = sim.store.get('configmaps', 'gpu-operator', configMap) as unknown as { data: Record<string, string> };
    return {
      state: n.metadata.labels?.['nvidia.com/mig.config.state'],
      alloc: n.status?.allocatable?.['nvidia.com/mig-3g.40gb'],
      entryKept: cm.data['config.yaml']!.includes('gpu-reflex-h100-0-aaaaaaaa'),
    };
  }

  it("wipes entries written into its default-mig-parted-config: mig-manager then fails on the node's label", async () => {
    expect(await relayoutWithReconcile('default-mig-parted-config')).toEqual({
      state: 'failed',
      alloc: undefined,
      entryKept: false,
    });
  });

  it('leaves the ConfigMap the ClusterPolicy names alone: the layout lands', async () => {
    expect(await relayoutWithReconcile('gpu-reflex-mig-parted-config')).toEqual({
      state: 'success',
      alloc: '4',
      entryKept: true,
    });
    expect(sim!.store.get('configmaps', 'gpu-operator', 'default-mig-parted-config')).toBeUndefined();
  });
});

describe('the simulated mig-manager can be down on a node', () => {
  const down: Fleet = {
    nodes: [
      {
        name: 'h100',
        labels: {
          'nvidia.com/mig.strategy': 'mixed',
          'nvidia.com/mig.config': 'all-balanced',
          'nvidia.com/mig.config.state': 'success',
          'nvidia.com/gpu.deploy.mig-manager': 'false',
        },
        allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': 16 },
      },
    ],
    namespaces: [{ name: 'gpu-operator' }],
    daemonSets: [
      {
        name: 'nvidia-mig-manager',
        namespace: 'gpu-operator',
        labels: { app: 'nvidia-mig-manager' },
        image: 'nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.1',
        nodeSelector: { 'nvidia.com/gpu.deploy.mig-manager': 'true' },
        requests: { cpu: '50m', memory: '64Mi' },
      },
    ],
    migConfigs: { 'all-1g.10gb': { 'nvidia.com/mig-1g.10gb': 56 } },
    migReconfigureSeconds: 20,
  };
  let sim: KubeSim;
  afterEach(() => sim.close());

  it('answers nothing while its DaemonSet has no Running pod there, and applies the label once it runs', async () => {
    sim = await startKubeSim({ fleet: down });
    const c = clients(sim);
    const label = (labels: Record<string, string>) =>
      c.core.patchNode({ name: 'h100', body: { metadata: { labels } } }, patchWith(k8s.PatchStrategy.MergePatch));
    const state = () => sim.store.node('h100')!.metadata.labels?.['nvidia.com/mig.config.state'];
    await label({ 'nvidia.com/mig.config': 'all-1g.10gb' });
    sim.advance(600_000);
    // the last run's success stays; nobody wrote pending or applied the layout
    expect(state()).toBe('success');
    expect(sim.store.node('h100')!.status?.allocatable?.['nvidia.com/mig-1g.10gb']).toBe('16');
    await label({ 'nvidia.com/gpu.deploy.mig-manager': 'true' });
    for (let i = 0; i < 10 && state() !== 'pending'; i++) sim.advance(5_000);
    expect(state()).toBe('pending');
    sim.advance(20_000);
    expect(state()).toBe('success');
    expect(sim.store.node('h100')!.status?.allocatable?.['nvidia.com/mig-1g.10gb']).toBe('56');
  });
});
