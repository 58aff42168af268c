/**
 * The simulated kubelet's PodResources v1 server, called by a client nobody here wrote: grpc-js with
 * the real api.proto (test/fixtures/podresources/api.proto, kubernetes/kubelet 63b32497) loaded by
 * proto-loader. What it answers comes from the simulated device plugin's and DRA driver's allocation.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Node, Pod } from '../kube/types.ts';
import { migDevicesJson } from '../node-files.ts';
import { allocateGpus, gpuSpecsOf } from '../node-gpus.ts';
import { PodResourcesServer, podResourcesState } from './index.ts';

const PROTO = new URL('../../../test/fixtures/podresources/api.proto', import.meta.url).pathname;

const node = (name: string, labels: Record<string, string>, alloc: Record<string, number>): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, uid: name, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', labels },
  status: { allocatable: alloc },
});
const pod = (n: number, requests: Record<string, number>, claims?: string[]): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: `p${n}`,
    namespace: 'ml',
    uid: `00000000-0000-4000-8000-00000000000${n}`,
    resourceVersion: '1',
    creationTimestamp: `2026-01-01T00:00:0${n}Z`,
  },
  spec: {
    nodeName: 'n',
    containers: [{ name: 'main', resources: { requests } }],
    ...(claims ? { resourceClaims: claims.map((c) => ({ name: c, resourceClaimTemplateName: 'one-gpu' })) } : {}),
  },
});

type Client = grpc.Client &
  Record<string, (req: object, cb: (err: grpc.ServiceError | null, res: unknown) => void) => void>;
interface Devices {
  resource_name: string;
  device_ids: string[];
}
interface Pod1 {
  name: string;
  namespace: string;
  containers: { name: string; devices: Devices[]; dynamic_resources: unknown[] }[];
}
interface Answer {
  pod_resources: Pod1[];
  devices: Devices[];
}

function client(socket: string): Client {
  const def = protoLoader.loadSync(PROTO, { keepCase: true, longs: String, defaults: true });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    v1: { PodResourcesLister: new (address: string, creds: grpc.ChannelCredentials) => Client };
  };
  return new pkg.v1.PodResourcesLister(`unix://${socket}`, grpc.credentials.createInsecure());
}
const first = (p: Pod1 | undefined) => p!.containers[0]!;
const call = <T = Answer>(c: Client, method: string, req: object = {}) =>
  new Promise<T>((resolve, reject) => c[method]!(req, (err, res) => (err ? reject(err) : resolve(res as T))));

describe('the simulated kubelet PodResources v1 server, read by grpc-js with the real api.proto', () => {
  const whole = gpuSpecsOf(node('n', { 'nvidia.com/gpu.count': '3' }, { 'nvidia.com/gpu': 3 }));
  const pods = [pod(1, { 'nvidia.com/gpu': 1 }), pod(2, {}, ['gpu']), pod(3, { cpu: 1 })];
  const alloc = allocateGpus(whole, pods);
  let held: { gpu: number; devices: ReadonlyMap<string, number> }[] = [];
  let server: PodResourcesServer;
  let c: Client;
  beforeAll(async () => {
    const socket = join(mkdtempSync(join(tmpdir(), 'podres-')), 'kubelet.sock');
    server = await PodResourcesServer.start(
      socket,
      podResourcesState({
        node: 'n',
        gpus: () => whole,
        allocation: () => alloc,
        pods: () => pods,
        notAdvertised: () => ({ held, gone: new Set() }),
        draDriver: 'gpu.nvidia.com',
      }),
    );
    c = client(socket);
  });
  afterAll(async () => {
    c.close();
    await server.close();
  });

  it('List names every pod with its device-plugin GPU by UUID and its DRA claim by driver, pool and device', async () => {
    const res = await call(c, 'List');
    const byName = Object.fromEntries(res.pod_resources.map((p) => [p.name, p]));
    expect(Object.keys(byName).sort()).toEqual(['p1', 'p2', 'p3']);
    expect(byName.p1!.namespace).toBe('ml');
    expect(first(byName.p1).name).toBe('main');
    expect(first(byName.p1).devices).toEqual([
      { resource_name: 'nvidia.com/gpu', device_ids: [whole[0]!.uuid], topology: { nodes: [{ ID: '0' }] } },
    ]);
    expect(first(byName.p2).devices).toEqual([]);
    expect(first(byName.p2).dynamic_resources).toEqual([
      {
        claim_name: 'p2-gpu',
        claim_namespace: 'ml',
        claim_resources: [
          {
            cdi_devices: [{ name: 'k8s.gpu.nvidia.com/gpu=gpu-1' }],
            driver_name: 'gpu.nvidia.com',
            pool_name: 'n',
            device_name: 'gpu-1',
          },
        ],
      },
    ]);
    expect(first(byName.p3).devices).toEqual([]);
  });

  it('GetAllocatableResources lists the healthy devices; a GPU the plugin holds out leaves it by its UUID', async () => {
    const ids = async () => (await call(c, 'GetAllocatableResources')).devices.flatMap((d) => d.device_ids);
    expect(await ids()).toEqual(whole.map((g) => g.uuid));
    held = [{ gpu: 1, devices: new Map([['nvidia.com/gpu', 1]]) }];
    expect(await ids()).toEqual([whole[0]!.uuid, whole[2]!.uuid]);
    held = [];
  });

  it('Get answers one pod, and a pod the node does not run with an error, as the kubelet does', async () => {
    const res = await call<{ pod_resources: Pod1 }>(c, 'Get', { pod_name: 'p1', pod_namespace: 'ml' });
    expect(res.pod_resources.name).toBe('p1');
    expect(first(res.pod_resources).devices[0]!.device_ids).toEqual([whole[0]!.uuid]);
    await expect(call(c, 'Get', { pod_name: 'nope', pod_namespace: 'ml' })).rejects.toMatchObject({
      code: grpc.status.UNKNOWN,
      details: 'pod nope in namespace ml not found',
    });
  });

  it('names MIG devices by their MIG UUID under nvidia.com/mig-<profile>; a partial latch takes one out', async () => {
    const mig = gpuSpecsOf(
      node('m', { 'nvidia.com/gpu.count': '1', 'nvidia.com/mig.strategy': 'mixed' }, { 'nvidia.com/mig-1g.10gb': 7 }),
    );
    const mpods = [pod(1, { 'nvidia.com/mig-1g.10gb': 1 }), pod(2, { 'nvidia.com/mig-1g.10gb': 1 })];
    const state = podResourcesState({
      node: 'm',
      gpus: () => mig,
      allocation: () => allocateGpus(mig, mpods),
      pods: () => mpods,
      notAdvertised: () => ({ held: [{ gpu: 0, devices: new Map([['nvidia.com/mig-1g.10gb', 1]]) }], gone: new Set() }),
      draDriver: 'gpu.nvidia.com',
    });
    const uuids = (migDevicesJson(mig[0]!) as { uuid: string }[]).map((m) => m.uuid);
    const socket = join(mkdtempSync(join(tmpdir(), 'podres-')), 'kubelet.sock');
    const s = await PodResourcesServer.start(socket, state);
    const m = client(socket);
    try {
      const list = await call(m, 'List');
      const ids = list.pod_resources.map((p) => p.containers[0]!.devices[0]!);
      expect(ids.map((d) => d.resource_name)).toEqual(['nvidia.com/mig-1g.10gb', 'nvidia.com/mig-1g.10gb']);
      expect(ids.map((d) => d.device_ids[0])).toEqual([uuids[0], uuids[1]]);
      const free = (await call(m, 'GetAllocatableResources')).devices[0]!.device_ids;
      expect(free).toEqual(uuids.slice(1));
    } finally {
      m.close();
      await s.close();
    }
  });
});
