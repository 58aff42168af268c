import { describe, expect, it } from 'vitest';
import { gangOfPod, kueueWorkloadSpec, podGroupSpec } from '../demand.ts';
import type { PodInfo } from '../../adapters/kube/model.ts';
import { planWithGangs, type Gang } from './gangs.ts';
import type { PendingPod, PoolState } from './planner.ts';

const GiB = 1024 ** 3;
const pool = (id: string, gpus: number, price: number, extra: Partial<PoolState> = {}): PoolState => ({
  id,
  name: id.replace(/^np-/, ''),
  instanceType: `ecs.${id}`,
  hourlyPrice: price,
  desired: 0,
  ready: 0,
  min: 0,
  max: 100,
  maxStep: 100,
  labels: {},
  taints: [],
  allocatable: { 'nvidia.com/gpu': gpus, cpu: gpus * 8000, memory: gpus * 64 * GiB },
  ...extra,
});
const pods = (prefix: string, n: number, gpus: number): PendingPod[] =>
  Array.from({ length: n }, (_, i) => ({
    key: `ml/${prefix}-${i}`,
    priority: 0,
    requests: { 'nvidia.com/gpu': gpus, cpu: 4000, memory: 16 * GiB },
  }));
const gangOf = (ps: PendingPod[], gang: Gang) => new Map(ps.map((p) => [p.key, gang]));

describe('planWithGangs (issue #33)', () => {
  const train = pods('train', 4, 8);
  const pg: Gang = { name: 'PodGroup ml/train' };

  it('grows an empty pool by all 4 nodes of a 4 × 8-GPU gang in one increment', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 4 })], train, gangOf(train, pg));
    expect(plan.increments.map((i) => [i.poolId, i.from, i.to])).toEqual([['np-a100', 0, 4]]);
    expect(plan.gangs).toEqual({ 'PodGroup ml/train': 4 });
    expect(plan.deferred).toEqual([]);
  });

  it('grows nothing when the max leaves 3 of the 4 nodes, and says why', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 3 })], train, gangOf(train, pg));
    expect(plan.increments).toEqual([]);
    expect(plan.held).toEqual(['PodGroup ml/train needs 4 nodes of pool a100, its max of 3 leaves 3: not growing']);
    expect(plan.deferred.map((d) => d.pod)).toEqual(train.map((p) => p.key));
  });

  it('says when the step, not the max, is what leaves too few', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 10, maxStep: 2 })], train, gangOf(train, pg));
    expect(plan.held).toEqual(['PodGroup ml/train needs 4 nodes of pool a100, its step of 2 leaves 2: not growing']);
  });

  it('still grows for the other pods when a gang cannot be grown, on what the gang did not take', () => {
    const solo = pods('infer', 2, 8);
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 3 })], [...train, ...solo], gangOf(train, pg));
    expect(plan.increments.map((i) => [i.from, i.to, i.pods])).toEqual([[0, 2, ['ml/infer-0', 'ml/infer-1']]]);
  });

  it('merges a gang and the other pods on one pool into one increment, within the max', () => {
    const solo = pods('infer', 1, 8);
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 5 })], [...solo, ...train], gangOf(train, pg));
    expect(plan.increments.map((i) => [i.from, i.to, i.pods.length])).toEqual([[0, 5, 5]]);
    expect(plan.hourlyCost).toBe(5 * 520);
  });

  it('keeps the nodes on their way that a gang fills from the other pods (the next round asks for one more)', () => {
    const solo = pods('infer', 1, 8);
    const booting = pool('np-a100', 8, 520, { desired: 4, ready: 0, max: 6 });
    const plan = planWithGangs([booting], [...train, ...solo], gangOf(train, pg));
    expect(plan.awaitingInFlight).toEqual(train.map((p) => p.key));
    expect(plan.increments.map((i) => [i.from, i.to, i.pods])).toEqual([[4, 5, ['ml/infer-0']]]);
  });

  it('counts gang pods an existing node has room for, and waits for a Kueue group whose pods are not all there', () => {
    const three = train.slice(0, 3);
    const kueue: Gang = { name: 'Kueue workload ml/train', size: 4 };
    const short = planWithGangs([pool('np-a100', 8, 520)], three, gangOf(train, kueue));
    expect(short.increments).toEqual([]);
    expect(short.held[0]).toMatch(/has 3 of its 4 pods ready to schedule: not growing/);
    const covered = planWithGangs([pool('np-a100', 8, 520)], three, gangOf(train, kueue), ['ml/train-3']);
    expect(covered.increments.map((i) => i.add)).toEqual([3]);
  });
});

describe('planWithGangs and a gang’s own minimum (issue #34)', () => {
  const six = pods('train', 6, 8);
  // volcano.sh/en/docs/podgroup/: the group starts once minMember pods run; minResources, the least it asks for.
  const pg4: Gang = { name: 'PodGroup ml/train', size: 4, minimum: true };

  it('buys 4 nodes for a PodGroup of 6 pods with minMember 4, all in one increment, and says why', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 10 })], six, gangOf(six, pg4));
    expect(plan.increments.map((i) => [i.from, i.to, i.pods])).toEqual([[0, 4, six.slice(0, 4).map((p) => p.key)]]);
    expect(plan.increments[0]!.why).toMatch(/PodGroup ml\/train \(4 of its 6 waiting pods, what it needs to start/);
    expect(plan.gangs).toEqual({ 'PodGroup ml/train': 4 });
    expect(plan.deferred.map((d) => d.pod)).toEqual(six.slice(4).map((p) => p.key));
    expect(plan.deferred[0]!.why).toMatch(/starts with 4 of its 6 pods: the rest wait until it runs/);
  });

  it('buys none of the 4 when the max leaves 3', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520, { max: 3 })], six, gangOf(six, pg4));
    expect(plan.increments).toEqual([]);
    expect(plan.held).toEqual(['PodGroup ml/train needs 4 nodes of pool a100, its max of 3 leaves 3: not growing']);
  });

  it('counts pods an existing node has room for towards minMember', () => {
    const plan = planWithGangs([pool('np-a100', 8, 520)], six.slice(0, 5), gangOf(six, pg4), ['ml/train-5']);
    expect(plan.increments.map((i) => i.add)).toEqual([3]);
  });

  it('chooses more pods than minMember while they ask for less than minResources', () => {
    const gang: Gang = { ...pg4, minResources: { 'nvidia.com/gpu': 40 } };
    const plan = planWithGangs([pool('np-a100', 8, 520)], six, gangOf(six, gang));
    expect(plan.increments.map((i) => i.add)).toEqual([5]);
  });

  it('grows nothing for a gang whose pods all together ask for less than its minResources', () => {
    const gang: Gang = { ...pg4, minResources: { 'nvidia.com/gpu': 64 } };
    const plan = planWithGangs([pool('np-a100', 8, 520)], six, gangOf(six, gang));
    expect(plan.increments).toEqual([]);
    expect(plan.held).toEqual([
      'PodGroup ml/train: its 6 waiting pods ask for 48 nvidia.com/gpu, its minResources 64: it never starts, not growing',
    ]);
  });
});

describe('gangOfPod', () => {
  const info = (labels: Record<string, string>, annotations: Record<string, string>) =>
    ({ namespace: 'ml', name: 'p', labels, annotations }) as unknown as PodInfo;
  it('reads Volcano’s group annotation and Kueue’s group label with its total count, less the running pods', () => {
    expect(gangOfPod(info({}, { 'scheduling.k8s.io/group-name': 'train' }), () => 0)).toEqual({
      name: 'PodGroup ml/train',
    });
    const k = info({ 'kueue.x-k8s.io/pod-group-name': 'w' }, { 'kueue.x-k8s.io/pod-group-total-count': '4' });
    expect(gangOfPod(k, () => 1)).toEqual({ name: 'Kueue workload ml/w', size: 3 });
    expect(gangOfPod(info({}, {}), () => 0)).toBeUndefined();
  });

  it('reads a PodGroup’s minMember and minResources, and a Workload’s pod-set counts (minCount first)', () => {
    const pg = podGroupSpec({
      metadata: { namespace: 'ml', name: 'train' },
      spec: { minMember: 4, minResources: { 'nvidia.com/gpu': 32, cpu: '500m', memory: '1Gi' } },
    });
    expect(pg).toEqual({
      name: 'PodGroup ml/train',
      minimum: 4,
      minResources: { 'nvidia.com/gpu': 32, cpu: 0.5, memory: 2 ** 30 },
    });
    expect(podGroupSpec({ metadata: { namespace: 'ml', name: 'x' } })).toEqual({ name: 'PodGroup ml/x', minimum: 1 });
    const wl = kueueWorkloadSpec({
      metadata: { namespace: 'ml', name: 'w' },
      spec: { podSets: [{ count: 1 }, { count: 8, minCount: 3 }] },
    });
    expect(wl).toEqual({ name: 'Kueue workload ml/w', minimum: 4 });
  });

  it('sizes a gang by its own minimum less its running pods; met, its other pods are no gang', () => {
    const p = info({}, { 'scheduling.k8s.io/group-name': 'train' });
    const spec = () => ({ name: 'PodGroup ml/train', minimum: 4, minResources: { cpu: 2 } });
    expect(gangOfPod(p, () => 1, spec)).toEqual({
      name: 'PodGroup ml/train',
      size: 3,
      minimum: true,
      minResources: { cpu: 2 },
    });
    expect(gangOfPod(p, () => 4, spec)).toBeUndefined();
  });
});

describe('planScaleOut and anti-affine replicas (issue #33)', () => {
  it('spreads pods with one spread key over distinct new nodes, where they would otherwise share one', () => {
    const replicas = pods('serve', 3, 1).map((p) => ({ ...p, spread: 'ml|serve' }));
    const plan = planWithGangs([pool('np-a100', 8, 520)], replicas, new Map());
    expect(plan.increments.map((i) => [i.from, i.to])).toEqual([[0, 3]]);
    expect(plan.increments[0]!.nodes).toEqual([['ml/serve-0'], ['ml/serve-1'], ['ml/serve-2']]);
    const together = planWithGangs([pool('np-a100', 8, 520)], pods('serve', 3, 1), new Map());
    expect(together.increments.map((i) => [i.from, i.to])).toEqual([[0, 1]]);
  });

  it('puts one replica on each node on its way before buying more', () => {
    const replicas = pods('serve', 3, 1).map((p) => ({ ...p, spread: 'ml|serve' }));
    const plan = planWithGangs([pool('np-a100', 8, 520, { desired: 2 })], replicas, new Map());
    expect(plan.awaitingInFlight).toHaveLength(2);
    expect(plan.increments.map((i) => [i.from, i.to])).toEqual([[2, 3]]);
  });
});
