import { describe, expect, it } from 'vitest';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import type { PendingPod } from './core/planner.ts';
import { withoutRoomOnExisting } from './existing-room.ts';

const node = (over: Partial<NodeInfo> = {}): NodeInfo => ({
  name: 't4x2-a',
  labels: { 'ack.node.gpu.schedule': 'cgpu' },
  annotations: {},
  taints: [],
  unschedulable: false,
  ready: true,
  allocatable: { cpu: '46', memory: '180Gi', pods: '110', 'aliyun.com/gpu-mem': '32', 'aliyun.com/gpu-count': '2' },
  resourceVersion: '1',
  ...over,
});

const running = (name: string, gib: number, card?: string): PodInfo => ({
  namespace: 'ml',
  name,
  uid: name,
  nodeName: 't4x2-a',
  phase: 'Running',
  labels: {},
  annotations: card === undefined ? {} : { ALIYUN_COM_GPU_MEM_IDX: card },
  owners: [],
  terminating: false,
  terminationGracePeriodSeconds: undefined,
  extendedResources: { 'aliyun.com/gpu-mem': gib },
  requests: { 'aliyun.com/gpu-mem': gib, cpu: 1 },
});

const waiting = (name: string, gib: number): PendingPod => ({
  key: `ml/${name}`,
  priority: 0,
  requests: { 'aliyun.com/gpu-mem': gib, cpu: 1 },
});

const fits = (pending: PendingPod[], nodes: NodeInfo[], pods: PodInfo[]) =>
  withoutRoomOnExisting(pending, nodes, pods).fitsExisting.map((f) => f.pod);

describe('shared-GPU pods an existing cGPU node has room for, card by card', () => {
  const busy = [running('a', 10, '0'), running('b', 10, '1')];

  it('12 GiB free in all but 6 on each card: an 8 GiB share is planned for, a 4 GiB one is not', () => {
    expect(fits([waiting('big', 8), waiting('small', 4)], [node()], busy)).toEqual(['ml/small']);
  });

  it('each pod takes its room: two 6 GiB shares fit, one per card, and a third is planned for', () => {
    const out = withoutRoomOnExisting([waiting('x', 6), waiting('y', 6), waiting('z', 6)], [node()], busy);
    expect({ existing: out.fitsExisting.map((f) => f.pod), plan: out.plan.map((p) => p.key) }).toEqual({
      existing: ['ml/x', 'ml/y'],
      plan: ['ml/z'],
    });
  });

  it('a share placed here takes its card: on an empty 2×16 GiB node, a third 10 GiB share finds 12 GiB but no card', () => {
    expect(fits([waiting('x', 10), waiting('y', 10), waiting('z', 10)], [node()], [])).toEqual(['ml/x', 'ml/y']);
  });

  it('a running share with no card index counts on every card', () => {
    expect(fits([waiting('p', 8)], [node()], [running('a', 10)])).toEqual([]);
    expect(fits([waiting('p', 8)], [node()], [running('a', 10, '1')])).toEqual(['ml/p']);
  });

  it('a node not Ready or cordoned has no room', () => {
    expect(fits([waiting('p', 4)], [node({ ready: false })], [])).toEqual([]);
    expect(fits([waiting('p', 4)], [node({ unschedulable: true })], [])).toEqual([]);
  });

  it('whole-GPU pods a node has room for are not planned for either; those it has no room for are', () => {
    const gpu: PendingPod = { key: 'ml/g', priority: 0, requests: { 'nvidia.com/gpu': 1 } };
    const big: PendingPod = { key: 'ml/big', priority: 0, requests: { 'nvidia.com/gpu': 9 } };
    const out = withoutRoomOnExisting([gpu, big], [node({ allocatable: { 'nvidia.com/gpu': '8' } })], []);
    expect(out.plan).toEqual([big]);
    expect(out.fitsExisting.map((f) => f.pod)).toEqual(['ml/g']);
  });
});

describe('existing room and required hostname anti-affinity (InterPodAffinity filter)', () => {
  const anti = [{ matchLabels: { app: 'serve' } }];
  const gpuNode = (name: string) =>
    node({ name, labels: {}, allocatable: { cpu: '32', memory: '128Gi', pods: '110', 'nvidia.com/gpu': '8' } });
  const replica = (name: string, nodeName: string | undefined): PodInfo => ({
    ...running(name, 0),
    nodeName,
    phase: nodeName ? 'Running' : 'Pending',
    labels: { app: 'serve' },
    extendedResources: { 'nvidia.com/gpu': 1 },
    requests: { 'nvidia.com/gpu': 1, cpu: 1 },
    hostnameAntiAffinity: anti,
  });
  const pend = (name: string): PendingPod => ({
    key: `ml/${name}`,
    priority: 0,
    requests: { 'nvidia.com/gpu': 1, cpu: 1 },
  });

  it('keeps an anti-affine replica off a node running another, and two waiting replicas off one node', () => {
    const pods = [replica('serve-0', 'gpu-a'), replica('serve-1', undefined), replica('serve-2', undefined)];
    const out = withoutRoomOnExisting([pend('serve-1'), pend('serve-2')], [gpuNode('gpu-a'), gpuNode('gpu-b')], pods);
    expect(out.fitsExisting).toEqual([{ pod: 'ml/serve-1', node: 'gpu-b' }]);
    expect(out.plan.map((p) => p.key)).toEqual(['ml/serve-2']);
  });

  it('honours the running pod’s own anti-affinity against a pod that has none', () => {
    const plain: PodInfo = { ...replica('other', undefined), hostnameAntiAffinity: undefined };
    const pods = [replica('serve-0', 'gpu-a'), plain];
    expect(fits([pend('other')], [gpuNode('gpu-a')], pods)).toEqual([]);
  });
});
