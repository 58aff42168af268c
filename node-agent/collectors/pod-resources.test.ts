/**
 * The agent's PodResources client (node:http2 + its own protobuf decoder) against a server nobody
 * here wrote: grpc-js serving the real api.proto (test/fixtures/podresources/api.proto) on a unix socket.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callPodResources, readPodResources } from './pod-resources.ts';
import { deviceHolders, gpuOfDevice, holdersOfGpu, podResourcesSource } from './pod-resources-source.ts';

const PROTO = new URL('../../test/fixtures/podresources/api.proto', import.meta.url).pathname;
const GPU0 = 'GPU-11111111-2222-3333-4444-555555555555';
const GPU1 = 'GPU-66666666-7777-8888-9999-000000000000';
const MIG0 = 'MIG-11111111-2222-3333-4444-000000000001';

const LIST = {
  pod_resources: [
    {
      name: 'trainer',
      namespace: 'ml',
      cpu_ids: [2, 3],
      containers: [
        {
          name: 'main',
          cpu_ids: [2, 3],
          memory: [{ memory_type: 'memory', size: 1024, topology: { nodes: [{ ID: 0 }] } }],
          devices: [
            { resource_name: 'nvidia.com/gpu', device_ids: [GPU1], topology: { nodes: [{ ID: 1 }] } },
            { resource_name: 'rdma/hca', device_ids: ['mlx5_0'] },
          ],
        },
      ],
    },
    {
      name: 'notebook',
      namespace: 'lab',
      containers: [{ name: 'nb', devices: [{ resource_name: 'nvidia.com/mig-1g.10gb', device_ids: [MIG0] }] }],
    },
    {
      name: 'dra-job',
      namespace: 'ml',
      containers: [
        {
          name: 'main',
          dynamic_resources: [
            {
              claim_name: 'dra-job-gpu-x7k2p',
              claim_namespace: 'ml',
              claim_resources: [
                {
                  cdi_devices: [{ name: 'k8s.gpu.nvidia.com/device=gpu-0' }],
                  driver_name: 'gpu.nvidia.com',
                  pool_name: 'node-a',
                  device_name: 'gpu-0',
                  share_id: 'abc',
                },
              ],
            },
          ],
        },
      ],
    },
    { name: 'plain', namespace: 'web', containers: [{ name: 'nginx' }] },
  ],
};

describe("the agent's PodResources client against grpc-js serving the real api.proto", () => {
  let server: grpc.Server;
  let socket: string;
  let failList = false;
  beforeAll(async () => {
    const def = protoLoader.loadSync(PROTO, { keepCase: true, longs: String, defaults: true });
    const pkg = grpc.loadPackageDefinition(def) as unknown as {
      v1: { PodResourcesLister: { service: grpc.ServiceDefinition } };
    };
    server = new grpc.Server();
    server.addService(pkg.v1.PodResourcesLister.service, {
      List: (_c: unknown, cb: grpc.sendUnaryData<unknown>) =>
        failList ? cb({ code: grpc.status.UNAVAILABLE, details: 'kubelet starting' }) : cb(null, LIST),
      GetAllocatableResources: (_c: unknown, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, { devices: [{ resource_name: 'nvidia.com/gpu', device_ids: [GPU0] }], cpu_ids: [0, 1] }),
      Get: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: grpc.status.UNIMPLEMENTED }),
    });
    socket = join(mkdtempSync(join(tmpdir(), 'podres-agent-')), 'kubelet.sock');
    await new Promise<void>((resolve, reject) =>
      server.bindAsync(`unix://${socket}`, grpc.ServerCredentials.createInsecure(), (err) =>
        err ? reject(err) : resolve(),
      ),
    );
  });
  afterAll(() => void server.forceShutdown());

  it('decodes List and GetAllocatableResources: pods, container devices, DRA claims; skips cpu_ids, memory, topology', async () => {
    const r = await readPodResources(socket, 2_000);
    expect(r.pods.map((p) => `${p.namespace}/${p.name}`)).toEqual([
      'ml/trainer',
      'lab/notebook',
      'ml/dra-job',
      'web/plain',
    ]);
    expect(r.pods[0]!.containers[0]!.devices).toEqual([
      { resourceName: 'nvidia.com/gpu', deviceIds: [GPU1] },
      { resourceName: 'rdma/hca', deviceIds: ['mlx5_0'] },
    ]);
    expect(r.pods[2]!.containers[0]!.claims).toEqual([
      {
        claimName: 'dra-job-gpu-x7k2p',
        claimNamespace: 'ml',
        devices: [{ driver: 'gpu.nvidia.com', pool: 'node-a', device: 'gpu-0' }],
      },
    ]);
    expect(r.pods[3]!.containers).toEqual([{ name: 'nginx', devices: [], claims: [] }]);
    expect(r.allocatable).toEqual([{ resourceName: 'nvidia.com/gpu', deviceIds: [GPU0] }]);
  });

  it('turns a gRPC error status into an error naming it', async () => {
    failList = true;
    try {
      await expect(callPodResources(socket, 'List', 2_000)).rejects.toThrow(/gRPC status 14 \(kubelet starting\)/);
    } finally {
      failList = false;
    }
  });

  it('maps device IDs to this node GPUs and MIG devices: the kubelet says who holds what, a NIC is nobody', async () => {
    const r = await readPodResources(socket, 2_000);
    const gpus = [
      { uuid: GPU0, migDevices: [{ uuid: MIG0 }] },
      { uuid: GPU1, migDevices: [] },
    ];
    const { holders, unmatched } = deviceHolders(r.pods, gpus);
    expect(unmatched).toEqual([]);
    expect(holders).toEqual([
      { namespace: 'ml', name: 'trainer', resource: 'nvidia.com/gpu', deviceId: GPU1, gpu: GPU1 },
      { namespace: 'lab', name: 'notebook', resource: 'nvidia.com/mig-1g.10gb', deviceId: MIG0, gpu: GPU0, mig: MIG0 },
      {
        namespace: 'ml',
        name: 'dra-job',
        dra: {
          claim: 'dra-job-gpu-x7k2p',
          claimNamespace: 'ml',
          driver: 'gpu.nvidia.com',
          pool: 'node-a',
          device: 'gpu-0',
        },
      },
    ]);
    // An event about GPU 1 carries its holder and the node's DRA holders (the functions map those by ResourceSlice).
    expect(holdersOfGpu(holders, GPU1).map((h) => h.name)).toEqual(['trainer', 'dra-job']);
  });

  it('a GPU device named by index (deviceIDStrategy: index) names no GPU: unmatched, so the caller says unknown', async () => {
    const r = await readPodResources(socket, 2_000);
    const pods = [
      {
        name: 'x',
        namespace: 'ml',
        containers: [{ name: 'm', devices: [{ resourceName: 'nvidia.com/gpu', deviceIds: ['0'] }], claims: [] }],
      },
    ];
    expect(deviceHolders(pods, [{ uuid: GPU0, migDevices: [] }]).unmatched).toEqual(['nvidia.com/gpu=0']);
    // A NIC's device names no GPU either, and is no GPU resource: it is simply not a holder.
    expect(deviceHolders(r.pods, [{ uuid: GPU0, migDevices: [{ uuid: MIG0 }] }]).unmatched).toEqual([
      `nvidia.com/gpu=${GPU1}`,
    ]);
  });

  it.each([
    [`${GPU0}::3`, { gpu: GPU0 }],
    [`${GPU0}-_-7`, { gpu: GPU0 }],
    [MIG0, { gpu: GPU0, mig: MIG0 }],
    ['GPU-ffffffff-ffff-ffff-ffff-ffffffffffff', undefined],
  ])('device ID %s is %o', (id, want) => {
    expect(gpuOfDevice(id, [{ uuid: GPU0, migDevices: [{ uuid: MIG0 }] }])).toEqual(want);
  });

  it('an absent socket is unknown, never "no pods"', async () => {
    const r = await podResourcesSource(join(tmpdir(), 'no-such-dir-podres', 'kubelet.sock')).read();
    expect(r).toEqual({ known: false, reason: expect.stringMatching(/no PodResources socket/) });
  });

  it('a socket file nobody listens on (a stale one, the kubelet down) is unknown, with the reason', async () => {
    const stale = join(mkdtempSync(join(tmpdir(), 'podres-stale-')), 'kubelet.sock');
    writeFileSync(stale, '');
    const r = await podResourcesSource(stale).read();
    expect(r).toEqual({ known: false, reason: expect.stringMatching(/^PodResources List: .*ECONNREFUSED/) });
  });

  it('reads through the lazy source when the socket is there', async () => {
    const r = await podResourcesSource(socket).read();
    expect(r.known && r.pods.length).toBe(4);
  });
});
