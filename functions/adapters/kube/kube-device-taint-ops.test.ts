/**
 * The DRA port, the real adapter through @kubernetes/client-node's custom-objects client against
 * the simulated cluster, and the fake, held to one contract: a node's GPU devices are found by
 * their `uuid` attribute in its ResourceSlices of the driver, our rules are listed per node, and
 * creating or deleting one twice is the same as once.
 */
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type ApiSettings } from '../../../infra/local/kube/index.ts';
import { ConfigurationError, NotFoundError } from '../errors.ts';
import type { DeviceTaint } from './ports.ts';
import { loadKubeConfig } from './config.ts';
import { FakeCluster, FakeDeviceTaintOps } from './fake.ts';
import { KubeDeviceTaintOps, uuidOf } from './kube-device-taint-ops.ts';
import type { DeviceTaintOps } from './ports.ts';

const UUID = (i: number) => `GPU-00000000-0000-0000-0000-00000000000${i}`;
const rule = (node: string, i: number): DeviceTaint => ({
  name: `gpu-reflex-${node}-${i}`,
  node,
  gpuUuid: UUID(i),
  driver: 'gpu.nvidia.com',
  pool: node,
  device: `gpu-${i}`,
  taint: { key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' },
});

interface Harness {
  ops: DeviceTaintOps;
  /** Publishes a ResourceSlice of `driver` on `node` with GPUs `indices`. */
  slice(node: string, driver: string, indices: number[]): Promise<void>;
}

function contract(name: string, make: () => Harness) {
  describe(`DeviceTaintOps contract: ${name}`, () => {
    it("finds a node's GPUs by UUID in its ResourceSlices of the driver, and no other node's or driver's", async () => {
      const h = make();
      await h.slice('n1', 'gpu.nvidia.com', [0, 1]);
      await h.slice('n2', 'gpu.nvidia.com', [2]);
      await h.slice('n1', 'other.example.com', [3]);
      expect(await h.ops.devices('n1', 'gpu.nvidia.com')).toEqual({
        [UUID(0)]: { driver: 'gpu.nvidia.com', pool: 'n1', device: 'gpu-0' },
        [UUID(1)]: { driver: 'gpu.nvidia.com', pool: 'n1', device: 'gpu-1' },
      });
      expect(await h.ops.devices('n3', 'gpu.nvidia.com')).toEqual({});
    });

    it("creates and deletes a rule once, however often asked, and lists a node's rules alone", async () => {
      const h = make();
      expect(await h.ops.create(rule('n1', 0))).toBe(true);
      expect(await h.ops.create(rule('n1', 0))).toBe(false);
      expect(await h.ops.create(rule('n2', 1))).toBe(true);
      expect(await h.ops.rules('n1')).toEqual(['gpu-reflex-n1-0']);
      expect(await h.ops.remove('gpu-reflex-n1-0')).toBe(true);
      expect(await h.ops.remove('gpu-reflex-n1-0')).toBe(false);
      expect(await h.ops.rules('n1')).toEqual([]);
      expect(await h.ops.rules('n2')).toEqual(['gpu-reflex-n2-1']);
    });
  });
}

contract('fake', () => {
  const cluster = new FakeCluster();
  return {
    ops: new FakeDeviceTaintOps(cluster),
    slice: async (node, driver, indices) => {
      const had = cluster.draDevices.get(node) ?? {};
      cluster.draDevices.set(node, {
        ...had,
        ...Object.fromEntries(indices.map((i) => [UUID(i), { driver, pool: node, device: `gpu-${i}` }])),
      });
    },
  };
});

let sim: Awaited<ReturnType<typeof startKubeSim>>;
let custom: CustomObjectsApi;
let n = 0;
beforeAll(async () => {
  sim = await startKubeSim({});
  custom = loadKubeConfig({ kubeconfigText: sim.kubeconfig() }).makeApiClient(CustomObjectsApi);
});
afterAll(async () => sim?.close());

contract('KubeDeviceTaintOps over the simulated API server', () => {
  // Each test its own node names in one server: clear what the last one made.
  n++;
  for (const r of sim.store.list('devicetaintrules.resource.k8s.io'))
    sim.store.remove('devicetaintrules.resource.k8s.io', '', r.metadata.name);
  for (const r of sim.store.list('resourceslices.resource.k8s.io'))
    sim.store.remove('resourceslices.resource.k8s.io', '', r.metadata.name);
  return {
    // Pages of one: the lists must follow `continue`.
    ops: new KubeDeviceTaintOps(custom, undefined, 1),
    slice: async (node, driver, indices) => {
      await custom.createClusterCustomObject({
        group: 'resource.k8s.io',
        version: 'v1',
        plural: 'resourceslices',
        body: {
          apiVersion: 'resource.k8s.io/v1',
          kind: 'ResourceSlice',
          metadata: { name: `${node}-${driver}-${n}` },
          spec: {
            driver,
            nodeName: node,
            pool: { name: node, generation: 1, resourceSliceCount: 1 },
            devices: indices.map((i) => ({
              name: `gpu-${i}`,
              attributes: { uuid: { string: UUID(i) }, index: { int: i } },
            })),
          },
        },
      });
    },
  };
});

describe('KubeDeviceTaintOps', () => {
  it('writes the DeviceTaintRule a real API server takes: selector by driver, pool and device, our node label', async () => {
    const ops = new KubeDeviceTaintOps(custom);
    await ops.create(rule('n9', 4));
    const got = (await custom.getClusterCustomObject({
      group: 'resource.k8s.io',
      version: 'v1',
      plural: 'devicetaintrules',
      name: 'gpu-reflex-n9-4',
    })) as Record<string, unknown>;
    expect(got).toMatchObject({
      apiVersion: 'resource.k8s.io/v1',
      kind: 'DeviceTaintRule',
      metadata: { labels: { 'gpu-reflex.io/node': 'n9' } },
      spec: {
        deviceSelector: { driver: 'gpu.nvidia.com', pool: 'n9', device: 'gpu-4' },
        taint: { key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' },
      },
    });
  });

  it('follows the continue token the API server puts in a custom-object list (pages of one, three rules)', async () => {
    const paged = new KubeDeviceTaintOps(custom, undefined, 1);
    for (const i of [1, 2, 3]) await paged.create(rule('n7', i));
    // The custom-objects client hands the JSON back as served: `metadata.continue`, not the typed `_continue`.
    expect(await paged.rules('n7')).toEqual(['gpu-reflex-n7-1', 'gpu-reflex-n7-2', 'gpu-reflex-n7-3']);
  });

  it("reads a UUID attribute bare, qualified with the driver, or under v1beta1's basic", () => {
    expect(uuidOf({ attributes: { uuid: { string: 'A' } } }, 'gpu.nvidia.com')).toBe('A');
    expect(uuidOf({ attributes: { 'gpu.nvidia.com/uuid': { string: 'B' } } }, 'gpu.nvidia.com')).toBe('B');
    expect(uuidOf({ basic: { attributes: { uuid: { string: 'C' } } } }, 'gpu.nvidia.com')).toBe('C');
    expect(uuidOf({ attributes: { index: { string: '0' } } }, 'gpu.nvidia.com')).toBeUndefined();
  });

  it('a version the policy names that the cluster does not serve is passed over for one it serves', async () => {
    const old = new KubeDeviceTaintOps(custom, { deviceTaintRuleVersion: 'v1alpha3', resourceSliceVersion: 'v1' });
    expect(await old.rules('n1')).toEqual([]);
    await old.create(rule('n8', 2));
    expect(sim.store.get('devicetaintrules.resource.k8s.io', '', 'gpu-reflex-n8-2')?.apiVersion).toBe(
      'resource.k8s.io/v1',
    );
  });
});

/**
 * Each Kubernetes release serves DRA at its own versions (infra/local/kube/api-versions.ts cites which), and
 * the policy's default (v1) is only right from 1.37 on. The adapter asks at the others before it gives up.
 */
describe('KubeDeviceTaintOps on each Kubernetes release', () => {
  async function onRelease(apis: ApiSettings, sliceVersion: string) {
    const s = await startKubeSim({ apis });
    const api = loadKubeConfig({ kubeconfigText: s.kubeconfig() }).makeApiClient(CustomObjectsApi);
    const device = (i: number) => ({ name: `gpu-${i}`, attributes: { uuid: { string: UUID(i) } } });
    await api.createClusterCustomObject({
      group: 'resource.k8s.io',
      version: sliceVersion,
      plural: 'resourceslices',
      body: {
        apiVersion: `resource.k8s.io/${sliceVersion}`,
        kind: 'ResourceSlice',
        metadata: { name: 'n1-gpus' },
        spec: {
          driver: 'gpu.nvidia.com',
          nodeName: 'n1',
          pool: { name: 'n1', generation: 1, resourceSliceCount: 1 },
          devices: [0, 1].map((i) =>
            sliceVersion === 'v1beta1' ? { name: `gpu-${i}`, basic: { attributes: device(i).attributes } } : device(i),
          ),
        },
      },
    });
    // The policy's defaults: v1 for both kinds.
    return { s, ops: new KubeDeviceTaintOps(api) };
  }

  it.each<[string, ApiSettings, string, string]>([
    [
      '1.33 (v1alpha3 rules, v1beta2 slices)',
      {
        kubernetesVersion: '1.33',
        runtimeConfig: ['resource.k8s.io/v1alpha3', 'resource.k8s.io/v1beta2'],
        featureGates: { DRADeviceTaints: true },
      },
      'v1beta2',
      'v1alpha3',
    ],
    [
      '1.35 (v1alpha3 rules)',
      {
        kubernetesVersion: '1.35',
        runtimeConfig: ['resource.k8s.io/v1alpha3'],
        featureGates: { DRADeviceTaintRules: true },
      },
      'v1',
      'v1alpha3',
    ],
    [
      '1.36 (v1beta2 rules)',
      {
        kubernetesVersion: '1.36',
        runtimeConfig: ['resource.k8s.io/v1beta2'],
        featureGates: { DRADeviceTaintRules: true },
      },
      'v1',
      'v1beta2',
    ],
    ['1.37 (v1)', { kubernetesVersion: '1.37' }, 'v1', 'v1'],
  ])('%s: reads the GPUs and keeps a rule at the version served', async (_what, apis, sliceVersion, ruleVersion) => {
    const { s, ops } = await onRelease(apis, sliceVersion);
    try {
      expect(Object.keys(await ops.devices('n1', 'gpu.nvidia.com'))).toEqual([UUID(0), UUID(1)]);
      expect(await ops.rules('n1')).toEqual([]);
      expect(await ops.create(rule('n1', 1))).toBe(true);
      // Created at the version served (a create at another would have thrown): read back there.
      const api = loadKubeConfig({ kubeconfigText: s.kubeconfig() }).makeApiClient(CustomObjectsApi);
      const got = await api.getClusterCustomObject({
        group: 'resource.k8s.io',
        version: ruleVersion,
        plural: 'devicetaintrules',
        name: 'gpu-reflex-n1-1',
      });
      expect(got).toMatchObject({
        apiVersion: `resource.k8s.io/${ruleVersion}`,
        spec: { deviceSelector: { pool: 'n1' } },
      });
      expect(await ops.rules('n1')).toEqual(['gpu-reflex-n1-1']);
      expect(await ops.remove('gpu-reflex-n1-1')).toBe(true);
      expect(await ops.remove('gpu-reflex-n1-1')).toBe(false);
    } finally {
      await s.close();
    }
  });

  it('a release serving no DeviceTaintRule: reading says so, and a create or delete is never "already done"', async () => {
    const { s, ops } = await onRelease({ kubernetesVersion: '1.36' }, 'v1');
    try {
      await expect(ops.rules('n1')).rejects.toThrow(/at none of v1, v1beta2, v1alpha3/);
      await expect(ops.rules('n1')).rejects.toBeInstanceOf(NotFoundError);
      // NotFoundError would be read by the handler as "already done": the fence silently dropped.
      await expect(ops.create(rule('n1', 0))).rejects.toBeInstanceOf(ConfigurationError);
      await expect(ops.remove('gpu-reflex-n1-0')).rejects.toBeInstanceOf(ConfigurationError);
    } finally {
      await s.close();
    }
  });

  it("1.32's v1beta1 slices: each device's attributes under basic", async () => {
    const { s, ops } = await onRelease(
      { kubernetesVersion: '1.32', runtimeConfig: ['resource.k8s.io/v1beta1'] },
      'v1beta1',
    );
    try {
      expect(Object.keys(await ops.devices('n1', 'gpu.nvidia.com'))).toEqual([UUID(0), UUID(1)]);
    } finally {
      await s.close();
    }
  });
});
