import { describe, expect, it } from 'vitest';
import { podUidFromCgroup } from '../../node-agent/collectors/pods.ts';
import { parseXidLine } from '../../node-agent/kmsg/parse-xid.ts';
import type { Node, Pod } from './kube/types.ts';
import { kmsgXidLine, mockScenario } from './node-files.ts';
import { allocateGpus, cgroupLine, gpuSpecsOf, isGpuNode } from './node-gpus.ts';
import { NO_GPU_PROCESS } from './kube/readiness.ts';

const node = (name: string, labels: Record<string, string>, allocatable: Record<string, string | number>): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', labels },
  status: { allocatable },
});

const pod = (
  name: string,
  requests: Record<string, number>,
  created = '2026-01-01T00:00:00Z',
  uid = `00000000-0000-4000-8000-${name
    .padStart(12, '0')
    .slice(-12)
    .replace(/[^0-9a-f]/g, 'a')}`,
): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'ml', uid, resourceVersion: '1', creationTimestamp: created },
  spec: { containers: [{ name: 'main', resources: { requests } }] },
});

const H100 = node(
  'h100',
  {
    'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
    'nvidia.com/gpu.count': '2',
    'nvidia.com/gpu.memory': '81920',
    'nvidia.com/mig.strategy': 'mixed',
  },
  { 'nvidia.com/mig-1g.10gb': 4, 'nvidia.com/mig-2g.20gb': 2, 'nvidia.com/mig-3g.40gb': 2 },
);
const A100 = node(
  'a100',
  { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB', 'nvidia.com/gpu.count': '4' },
  { 'nvidia.com/gpu': 4 },
);

describe('GPUs of a node', () => {
  it('takes model, count and memory from the GPU Feature Discovery labels', () => {
    const gpus = gpuSpecsOf(A100);
    expect(gpus).toHaveLength(4);
    expect(gpus[0]).toMatchObject({ name: 'NVIDIA A100-SXM4-80GB', pciDeviceId: '0x20B210DE', mig: [] });
    expect(new Set(gpus.map((g) => g.uuid)).size).toBe(4);
    expect(new Set(gpus.map((g) => g.pciBusId)).size).toBe(4);
    expect(gpuSpecsOf(A100)[2]!.uuid).toBe(gpus[2]!.uuid); // stable across runs
  });

  it('places every MIG slice the allocatable promises, at allowed starts without overlap', () => {
    const [g0] = gpuSpecsOf(H100);
    // 2x 1g.10gb + 2g.20gb + 3g.40gb fills 7 compute slices; a 3g first at 0 would leave room for one 1g.
    expect(g0!.mig.map((s) => `${s.profile}@${s.start}`).sort()).toEqual([
      '1g.10gb@2',
      '1g.10gb@3',
      '2g.20gb@0',
      '3g.40gb@4',
    ]);
    expect(g0!.mig.map((s) => s.giProfileId).sort()).toEqual([14, 19, 19, 9].sort());
    expect(g0!.mig.map((s) => s.giId)).toEqual([1, 2, 3, 4]);
  });

  it.each([
    [A100, true],
    [H100, true],
    [node('cpu', {}, { cpu: '8' }), false],
  ])('%# tells GPU nodes from others', (n, gpu) => expect(isGpuNode(n)).toBe(gpu));
});

describe('device-plugin allocation', () => {
  it('gives pods the first free whole GPUs in creation order, one process each', () => {
    const procs = allocateGpus(gpuSpecsOf(A100), [
      pod('b', { 'nvidia.com/gpu': 1 }, '2026-01-01T00:00:02Z'),
      pod('a', { 'nvidia.com/gpu': 2 }, '2026-01-01T00:00:01Z'),
    ]);
    expect(procs.map((p) => [p.pod.name, p.gpu, p.pid])).toEqual([
      ['a', 0, 4100],
      ['a', 1, 4101],
      ['b', 2, 4102],
    ]);
  });

  it('puts MIG pods on instances of their profile, naming the GPU instance', () => {
    const procs = allocateGpus(gpuSpecsOf(H100), [
      pod('n0', { 'nvidia.com/mig-1g.10gb': 1 }),
      pod('n1', { 'nvidia.com/mig-1g.10gb': 1 }),
      pod('big', { 'nvidia.com/mig-3g.40gb': 1 }),
    ]);
    const byPod = Object.fromEntries(procs.map((p) => [p.pod.name, [p.gpu, p.gpuInstanceId]]));
    expect(byPod).toEqual({ big: [0, 4], n0: [0, 2], n1: [0, 3] });
  });

  it('leaves pods without a free GPU unallocated', () => {
    expect(
      allocateGpus(gpuSpecsOf(A100), [pod('a', { 'nvidia.com/gpu': 4 }), pod('b', { 'nvidia.com/gpu': 1 })]).filter(
        (p) => p.pod.name === 'b',
      ),
    ).toEqual([]);
  });
});

describe('what the agent reads back', () => {
  it('writes a cgroup v2 line the agent resolves to the pod UID', () => {
    const uid = '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31';
    expect(podUidFromCgroup(cgroupLine(uid, 4100))).toBe(uid);
  });

  it.each([
    [79, 4103, undefined],
    [13, undefined, 5],
  ])('writes a kernel XID %d line the agent parses back to the same GPU, pid and instance', (xid, pid, gi) => {
    const parsed = parseXidLine(kmsgXidLine(8200, '00000000:48:00.0', xid, pid, gi).trimEnd());
    expect(parsed).toMatchObject({ pci: '00000000:48:00.0', xid, pid: pid ?? null });
    expect(parsed?.gpuInstanceId).toBe(gi);
  });
});

describe('the mock NVML scenario of a node', () => {
  it('merges overrides, appends extra GPUs and turns scenario faults into timed NVML faults', () => {
    const gpus = gpuSpecsOf(A100);
    const procs = allocateGpus(gpus, [pod('a', { 'nvidia.com/gpu': 1 })]);
    const s = mockScenario(
      gpus,
      procs,
      [
        { atMs: 9000, gpu: 1, fault: { kind: 'gpuLost' } },
        { atMs: 6000, gpu: 0, fault: { kind: 'xid', xid: 79 } },
      ],
      { driverVersion: '535.1', gpus: { '1': { powerLimitW: 300 } }, extraGpus: [{ name: 'extra' }] },
    ) as { driverVersion: string; gpus: Record<string, unknown>[]; faults: Record<string, unknown>[] };
    expect(s.driverVersion).toBe('535.1');
    expect(s.gpus).toHaveLength(5);
    expect(s.gpus[1]!.powerLimitW).toBe(300);
    expect(s.gpus[0]!.processes).toEqual([{ pid: 4100, usedMiB: 9830 }]); // 60% of the 16 GiB default (no gpu.memory label)
    expect(s.faults).toEqual([
      { atMs: 6000, gpu: 0, kind: 'xid', xid: 79 },
      { atMs: 9000, gpu: 1, kind: 'gpuLost' },
    ]);
  });
});

describe('shared GPUs (issue #32): one replica per pod, spread as NVIDIA distributes them', () => {
  const A100x2 = gpuSpecsOf(
    node(
      'ts',
      { 'nvidia.com/gpu.count': '2', 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB-SHARED' },
      { 'nvidia.com/gpu': 8 },
    ),
  );
  const shared = { resource: 'nvidia.com/gpu', replicas: 4, strategy: 'time-slicing' as const };
  const four = ['a', 'b', 'c', 'd'].map((n) => pod(n, { 'nvidia.com/gpu': 1 }));

  it('reads the product past its -SHARED suffix', () => {
    expect(A100x2[0]!.name).toBe('NVIDIA A100-SXM4-80GB');
  });

  it('spreads replicas over the cards (fewest taken first) with <UUID>::<i> device IDs', () => {
    const procs = allocateGpus(A100x2, four, 4100, [], new Set(), shared);
    expect(procs.map((p) => [p.pod.name, p.gpu, p.deviceId])).toEqual([
      ['a', 0, `${A100x2[0]!.uuid}::0`],
      ['b', 1, `${A100x2[1]!.uuid}::0`],
      ['c', 0, `${A100x2[0]!.uuid}::1`],
      ['d', 1, `${A100x2[1]!.uuid}::1`],
    ]);
  });

  it('a fenced card hands out no replica; a partly latched one only its healthy rest', () => {
    const five = [...four, pod('e', { 'nvidia.com/gpu': 1 }), pod('f', { 'nvidia.com/gpu': 1 })];
    expect(allocateGpus(A100x2, five, 4100, [], new Set([1]), shared).map((p) => p.gpu)).toEqual([0, 0, 0, 0]);
    const latched = allocateGpus(A100x2, five, 4100, [], new Set(), { ...shared, replicasOut: new Map([[1, 3]]) });
    expect(latched.filter((p) => p.gpu === 1)).toHaveLength(1);
  });
});

describe('DRA claims shared by name (resourceClaimName)', () => {
  const gpus = gpuSpecsOf(A100);
  const consumer = (name: string, created: string, extra: Partial<Pod['metadata']> = {}): Pod => {
    const p = pod(name, {}, created);
    return {
      ...p,
      metadata: { ...p.metadata, ...extra },
      spec: { ...p.spec, resourceClaims: [{ name: 'gpu', resourceClaimName: 'serve-gpu' }] },
    };
  };
  const a = consumer('serve-a', '2026-01-01T00:00:00Z');
  const b = consumer('serve-b', '2026-01-01T00:00:01Z', { annotations: { [NO_GPU_PROCESS]: 'true' } });

  it('every pod naming the claim shares its one GPU; a pod annotated with no GPU process holds it without one', () => {
    const procs = allocateGpus(gpus, [a, b]);
    expect(procs.map((p) => [p.pod.name, p.gpu, p.sharedClaim, p.noProcess ?? false])).toEqual([
      ['serve-a', 0, 'serve-gpu', false],
      ['serve-b', 0, 'serve-gpu', true],
    ]);
    const scenario = mockScenario(gpus, procs, []) as { gpus: { processes: unknown[] }[] };
    expect(scenario.gpus[0]!.processes).toHaveLength(1);
  });

  it('the claim stays on its GPU while a pod holds it: a new consumer of a fenced one gets nothing; freed, it moves', () => {
    const held = allocateGpus(gpus, [a]);
    const late = consumer('serve-c', '2026-01-01T00:00:02Z');
    expect(allocateGpus(gpus, [a, late], 5000, held, new Set([0])).map((p) => p.pod.name)).toEqual(['serve-a']);
    // Every consumer gone: the claim is allocated afresh, on a GPU that is not fenced.
    expect(allocateGpus(gpus, [late], 5000, held, new Set([0])).map((p) => [p.pod.name, p.gpu])).toEqual([
      ['serve-c', 1],
    ]);
  });
});

describe("DRA claims the scheduler allocated (issue #28): the kubelet prepares the claim's devices", () => {
  const gpus = gpuSpecsOf(A100);
  const claimed = (name: string, created: string): Pod => {
    const p = pod(name, {}, created);
    return { ...p, spec: { ...p.spec, resourceClaims: [{ name: 'gpus', resourceClaimTemplateName: 'two' }] } };
  };

  it("puts each pod's processes on the devices its claim was allocated, not on the first free GPUs", () => {
    const allocated: Record<string, number[]> = { late: [3, 1], early: [] };
    const procs = allocateGpus(
      gpus,
      [claimed('late', '2026-01-01T00:00:00Z'), claimed('early', '2026-01-01T00:00:01Z')],
      4100,
      [],
      new Set(),
      undefined,
      (p, entry) => (entry === 'gpus' ? allocated[p.metadata.name] : undefined),
    );
    // An unallocated claim gives nothing (the pod is not running anywhere the kubelet would prepare it).
    expect(procs.map((p) => [p.pod.name, p.gpu, p.claim])).toEqual([
      ['late', 3, 'gpus'],
      ['late', 1, 'gpus'],
    ]);
  });
});
