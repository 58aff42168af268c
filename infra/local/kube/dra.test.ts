import { afterEach, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from './index.ts';
import { resource } from './resources.ts';
import type { Claim } from './dra-allocator.ts';

/**
 * DRA as the real control plane does it (dra-allocator.ts, dra-controller.ts; KEP-4381, KEP-5055):
 * a DRA node advertises no nvidia.com/gpu, pods get GPUs through claims the scheduler allocates from
 * ResourceSlice devices, device taints keep devices and claims from new pods, a shared claim keeps its
 * pods on its node, and claims are released and deallocated when their pods go.
 */
const CLAIMS = 'resourceclaims.resource.k8s.io';
let sim: KubeSim;
afterEach(() => sim?.close());

const node = (name: string, gpus = 2) => ({
  name,
  labels: { 'nvidia.com/gpu.count': String(gpus), 'nvidia.com/gpu.present': 'true', pool: 'dra' },
  allocatable: { cpu: '32', memory: '256Gi' },
  draDriver: 'gpu.nvidia.com',
});
const request = (count = 1, tolerations?: object[]) => ({
  devices: {
    requests: [
      { name: 'gpu', exactly: { deviceClassName: 'gpu.nvidia.com', count, ...(tolerations ? { tolerations } : {}) } },
    ],
  },
});

async function start(nodes = [node('dra-a')]) {
  sim = await startKubeSim({ fleet: { nodes, namespaces: [{ name: 'ml' }] } });
  create('resourceclaimtemplates', { metadata: { name: 'one-gpu' }, spec: { spec: request(1) } });
  create('resourceclaimtemplates', { metadata: { name: 'two-gpus' }, spec: { spec: request(2) } });
}
function create(plural: string, body: object, ns = 'ml') {
  const r = resource(plural);
  return sim.cluster.create(r, r.namespaced ? ns : '', body);
}
function pod(
  name: string,
  claim: { resourceClaimName: string } | { resourceClaimTemplateName: string },
  selector?: object,
) {
  return create('pods', {
    metadata: { name },
    spec: {
      containers: [{ name: 'main', image: 'x', resources: { requests: { cpu: '1' }, claims: [{ name: 'gpu' }] } }],
      resourceClaims: [{ name: 'gpu', ...claim }],
      ...(selector ? { nodeSelector: selector } : {}),
    },
  });
}
const claimOf = (podName: string) => {
  const p = sim.store.pod('ml', podName)!;
  const entry = (p.status as { resourceClaimStatuses?: { resourceClaimName: string }[] }).resourceClaimStatuses?.[0];
  const name =
    entry?.resourceClaimName ?? (p.spec.resourceClaims as { resourceClaimName?: string }[])[0]!.resourceClaimName!;
  return sim.store.get(CLAIMS, 'ml', name) as Claim | undefined;
};
const devicesOf = (c: Claim | undefined) => (c?.status?.allocation?.devices?.results ?? []).map((r) => r.device);
const message = (podName: string) =>
  sim.store.pod('ml', podName)!.status?.conditions?.find((c) => c.type === 'PodScheduled')?.message;
const taintRule = (name: string, device: string, effect: string) =>
  create('devicetaintrules', {
    metadata: { name },
    spec: {
      deviceSelector: { driver: 'gpu.nvidia.com', pool: 'dra-a', device },
      taint: { key: 'gpu-reflex.io/unhealthy', value: 'xid-95', effect },
    },
  });

describe('the simulated scheduler allocates DRA claims', () => {
  it('publishes a DRA node as a ResourceSlice and a DeviceClass, with no nvidia.com/gpu on the node', async () => {
    await start();
    const n = sim.store.node('dra-a')!;
    expect(n.status?.allocatable?.['nvidia.com/gpu']).toBeUndefined();
    expect(n.status?.capacity?.['nvidia.com/gpu']).toBeUndefined();
    const slice = sim.store.get('resourceslices.resource.k8s.io', '', 'dra-a-gpu.nvidia.com')!;
    expect(slice.spec).toMatchObject({ driver: 'gpu.nvidia.com', nodeName: 'dra-a', pool: { name: 'dra-a' } });
    expect((slice.spec as { devices: { name: string }[] }).devices.map((d) => d.name)).toEqual(['gpu-0', 'gpu-1']);
    expect(sim.store.get('deviceclasses.resource.k8s.io', '', 'gpu.nvidia.com')).toBeDefined();
  });

  it('refuses a fleet node that is DRA and still advertises nvidia.com/gpu, saying why', async () => {
    await expect(
      startKubeSim({ fleet: { nodes: [{ ...node('x'), allocatable: { cpu: '1', 'nvidia.com/gpu': 2 } }] } }),
    ).rejects.toThrow(/a DRA node advertises no nvidia.com\/gpu/);
  });

  it("makes a template claim for the pod, allocates it from the node's devices and reserves it for the pod", async () => {
    await start();
    pod('train', { resourceClaimTemplateName: 'one-gpu' });
    const p = sim.store.pod('ml', 'train')!;
    expect(p.spec.nodeName).toBe('dra-a');
    const claim = claimOf('train')!;
    expect(claim.metadata.name).toMatch(/^train-gpu-\w{5}$/);
    expect(claim.metadata.annotations).toEqual({ 'resource.kubernetes.io/pod-claim-name': 'gpu' });
    expect(claim.metadata.ownerReferences).toEqual([
      expect.objectContaining({ kind: 'Pod', uid: p.metadata.uid, controller: true }),
    ]);
    expect(claim.status?.allocation?.devices?.results).toEqual([
      { request: 'gpu', driver: 'gpu.nvidia.com', pool: 'dra-a', device: 'gpu-0' },
    ]);
    expect(claim.status?.reservedFor).toEqual([{ resource: 'pods', name: 'train', uid: p.metadata.uid }]);
    // A second pod takes the other device; a third finds none.
    pod('train-2', { resourceClaimTemplateName: 'one-gpu' });
    expect(devicesOf(claimOf('train-2'))).toEqual(['gpu-1']);
    pod('train-3', { resourceClaimTemplateName: 'one-gpu' });
    expect(sim.store.pod('ml', 'train-3')!.spec.nodeName).toBeUndefined();
    expect(message('train-3')).toBe('0/1 nodes are available: 1 cannot allocate all claims.');
    expect(claimOf('train-3')?.status?.allocation).toBeUndefined();
  });

  it('deletes a template claim with its pod and frees its device for the next pod', async () => {
    await start();
    pod('a', { resourceClaimTemplateName: 'two-gpus' });
    pod('b', { resourceClaimTemplateName: 'one-gpu' });
    expect(sim.store.pod('ml', 'b')!.spec.nodeName).toBeUndefined();
    const name = claimOf('a')!.metadata.name;
    sim.cluster.delete(resource('pods'), 'ml', 'a', { gracePeriodSeconds: 0 });
    sim.tick();
    expect(sim.store.get(CLAIMS, 'ml', name)).toBeUndefined();
    expect(sim.store.pod('ml', 'b')!.spec.nodeName).toBe('dra-a');
  });

  it("lands every pod of a shared claim on its device's node; elsewhere: resourceclaim not available", async () => {
    await start([node('dra-a'), node('dra-b')]);
    create('resourceclaims', { metadata: { name: 'shared' }, spec: request(1) });
    pod('s-0', { resourceClaimName: 'shared' }, { 'kubernetes.io/hostname': 'dra-b' });
    pod('s-1', { resourceClaimName: 'shared' });
    pod('s-2', { resourceClaimName: 'shared' }, { 'kubernetes.io/hostname': 'dra-a' });
    expect(sim.store.pod('ml', 's-0')!.spec.nodeName).toBe('dra-b');
    expect(sim.store.pod('ml', 's-1')!.spec.nodeName).toBe('dra-b');
    expect(sim.store.pod('ml', 's-2')!.spec.nodeName).toBeUndefined();
    expect(message('s-2')).toBe(
      "0/2 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 resourceclaim not available on the node.",
    );
    const claim = sim.store.get(CLAIMS, 'ml', 'shared') as Claim;
    expect(claim.status?.reservedFor?.map((r) => r.name)).toEqual(['s-0', 's-1']);
    // The last consumer gone: the claim is deallocated (KEP-5055, quoting the resourceclaim controller).
    for (const n of ['s-0', 's-1']) sim.cluster.delete(resource('pods'), 'ml', n, { gracePeriodSeconds: 0 });
    sim.tick();
    const after = sim.store.get(CLAIMS, 'ml', 'shared') as Claim;
    // s-2 was waiting for the claim: now unallocated, it is allocated afresh where s-2 may go.
    expect(after.status?.allocation?.nodeSelector).toMatchObject({
      nodeSelectorTerms: [{ matchFields: [{ key: 'metadata.name', operator: 'In', values: ['dra-a'] }] }],
    });
    expect(sim.store.pod('ml', 's-2')!.spec.nodeName).toBe('dra-a');
  });

  it("allocates only devices its DeviceClass's CEL selects, and names CEL it cannot evaluate", async () => {
    await start();
    const cls = (name: string, expression: string) =>
      create('deviceclasses', { metadata: { name }, spec: { selectors: [{ cel: { expression } }] } });
    const template = (name: string, className: string) =>
      create('resourceclaimtemplates', {
        metadata: { name },
        spec: { spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: className } }] } } },
      });
    cls(
      'h100',
      "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].productName == 'NVIDIA H100'",
    );
    template('h100', 'h100');
    pod('wants-h100', { resourceClaimTemplateName: 'h100' });
    expect(message('wants-h100')).toBe('0/1 nodes are available: 1 cannot allocate all claims.');
    cls('gpu-1', "device.attributes['gpu.nvidia.com'].index == 1");
    template('gpu-1', 'gpu-1');
    pod('wants-1', { resourceClaimTemplateName: 'gpu-1' });
    expect(devicesOf(claimOf('wants-1'))).toEqual(['gpu-1']);
    cls('memory', "device.capacity['gpu.nvidia.com'].memory.compareTo(quantity('40Gi')) >= 0");
    template('memory', 'memory');
    pod('wants-memory', { resourceClaimTemplateName: 'memory' });
    expect(message('wants-memory')).toMatch(/the simulated scheduler cannot evaluate CEL "device\.capacity/);
  });

  it('skips a device a DeviceTaintRule taints NoSchedule unless the request tolerates it', async () => {
    await start();
    taintRule('gpu-0-out', 'gpu-0', 'NoSchedule');
    pod('two', { resourceClaimTemplateName: 'two-gpus' });
    expect(message('two')).toBe('0/1 nodes are available: 1 cannot allocate all claims.');
    pod('one', { resourceClaimTemplateName: 'one-gpu' });
    expect(devicesOf(claimOf('one'))).toEqual(['gpu-1']);
    create('resourceclaimtemplates', {
      metadata: { name: 'tolerant' },
      spec: { spec: request(1, [{ key: 'gpu-reflex.io/unhealthy', operator: 'Exists', effect: 'NoSchedule' }]) },
    });
    pod('tolerant', { resourceClaimTemplateName: 'tolerant' });
    expect(devicesOf(claimOf('tolerant'))).toEqual(['gpu-0']);
    // An informational taint (effect None) keeps nothing off.
    sim.cluster.delete(resource('devicetaintrules'), '', 'gpu-0-out');
    taintRule('gpu-1-none', 'gpu-1', 'None');
    sim.cluster.delete(resource('pods'), 'ml', 'one', { gracePeriodSeconds: 0 });
    sim.tick();
    expect(claimOf('two')).toBeDefined();
  });

  it('lets no new pod reserve an allocated claim whose device is tainted NoSchedule; running ones stay', async () => {
    await start();
    create('resourceclaims', { metadata: { name: 'shared' }, spec: request(1) });
    pod('s-0', { resourceClaimName: 'shared' });
    taintRule('gpu-0-out', 'gpu-0', 'NoSchedule');
    pod('s-1', { resourceClaimName: 'shared' });
    expect(sim.store.pod('ml', 's-0')!.status?.phase).toBe('Running');
    expect(sim.store.pod('ml', 's-1')!.spec.nodeName).toBeUndefined();
    expect(message('s-1')).toMatch(/resourceclaim shared: device gpu\.nvidia\.com\/dra-a\/gpu-0 has untolerated taint/);
    sim.cluster.delete(resource('devicetaintrules'), '', 'gpu-0-out');
    sim.tick();
    expect(sim.store.pod('ml', 's-1')!.spec.nodeName).toBe('dra-a');
  });

  it('keeps the pods of a claim tolerating NoExecute for tolerationSeconds after the taint was added', async () => {
    await start();
    create('resourceclaims', {
      metadata: { name: 'patient' },
      spec: request(1, [
        { key: 'gpu-reflex.io/unhealthy', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 60 },
      ]),
    });
    pod('p-0', { resourceClaimName: 'patient' });
    taintRule('gpu-0-evict', 'gpu-0', 'NoExecute');
    // The API server stamped the taint's timeAdded: the toleration counts from it.
    const rule = sim.store.get('devicetaintrules.resource.k8s.io', '', 'gpu-0-evict')!;
    expect((rule.spec as { taint: { timeAdded?: string } }).taint.timeAdded).toBe(
      new Date(sim.clock.now()).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    );
    sim.advance(59_000);
    expect(sim.store.pod('ml', 'p-0')!.metadata.deletionTimestamp).toBeUndefined();
    sim.advance(1_000);
    expect(sim.store.pod('ml', 'p-0')!.metadata.deletionTimestamp).toBeDefined();
  });

  it('deletes the pods of a claim whose device is tainted NoExecute, then deallocates the claim', async () => {
    await start();
    create('resourceclaims', { metadata: { name: 'shared' }, spec: request(1) });
    pod('s-0', { resourceClaimName: 'shared' });
    pod('s-1', { resourceClaimName: 'shared' });
    pod('other', { resourceClaimTemplateName: 'one-gpu' });
    taintRule('gpu-0-evict', 'gpu-0', 'NoExecute');
    for (const n of ['s-0', 's-1']) expect(sim.store.pod('ml', n)!.metadata.deletionTimestamp).toBeDefined();
    expect(sim.store.pod('ml', 'other')!.metadata.deletionTimestamp).toBeUndefined();
    sim.advance(31_000);
    expect(sim.store.pod('ml', 's-0')).toBeUndefined();
    expect((sim.store.get(CLAIMS, 'ml', 'shared') as Claim).status?.allocation).toBeUndefined();
  });
});
