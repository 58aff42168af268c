import { afterEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './kube/index.ts';

const fleet = (migManagerConfig?: string): Fleet => ({
  nodes: [
    {
      name: 'h100',
      labels: { 'nvidia.com/mig.strategy': 'mixed' },
      allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': 16 },
    },
  ],
  ...(migManagerConfig ? { migManagerConfig } : {}),
});

describe("the simulated GPU Operator's ClusterPolicy", () => {
  let sim: KubeSim | undefined;
  afterEach(() => sim?.close());

  it.each([
    ['names the ConfigMap mig-manager reads', undefined, { name: 'gpu-reflex-mig-parted-config' }],
    ["names none where mig-manager reads the operator's own (the chart's default)", 'default-mig-parted-config', {}],
  ])('%s', async (_, migManagerConfig, named) => {
    sim = await startKubeSim({ fleet: fleet(migManagerConfig) });
    const res = await fetch(`${sim.url}/apis/nvidia.com/v1/clusterpolicies`);
    const list = (await res.json()) as { items: { metadata: { name: string }; spec: unknown; status: unknown }[] };
    expect(list.items.map((p) => [p.metadata.name, p.spec, p.status])).toEqual([
      [
        'cluster-policy',
        { migManager: { enabled: true, config: { default: 'all-disabled', ...named } } },
        { state: 'ready' },
      ],
    ]);
  });

  it('is not there without MIG nodes', async () => {
    sim = await startKubeSim({ fleet: { nodes: [{ name: 'a100', allocatable: { 'nvidia.com/gpu': 8 } }] } });
    const res = await fetch(`${sim.url}/apis/nvidia.com/v1/clusterpolicies`);
    expect(((await res.json()) as { items: unknown[] }).items).toEqual([]);
  });
});
