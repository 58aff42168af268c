import { describe, expect, it } from 'vitest';
import type { DeviceHolder, GpuHealthChangedDetail, GpuXidErrorDetail } from '../../../events/index.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { renderSteps } from './detail.ts';
import { factsFor, gpu, health, node, pod, withDra, xid } from '../testing.ts';
import type { Plan, PodFacts, TriggerEvent } from './types.ts';

/**
 * Eviction scope from the kubelet's PodResources (the event's `holders`): when no pid named a pod,
 * only the pods holding the faulty GPU or MIG device move, never every GPU pod of the node; without
 * a PodResources reading, the fallback of before, said in the words.
 */
const evicted = (plan: Plan) =>
  renderSteps(plan)
    .filter((s) => s.kind === 'evict')
    .map((s) => s.target)
    .sort();

const MIG3 = 'MIG-5f2c3a00-8d41-4b7a-9e0f-000000000003';
const MIG4 = 'MIG-5f2c3a00-8d41-4b7a-9e0f-000000000004';
const plugin = (name: string, g: number, mig?: string): DeviceHolder => ({
  namespace: 'ml',
  name,
  resource: mig ? 'nvidia.com/mig-1g.10gb' : 'nvidia.com/gpu',
  deviceId: mig ?? gpu(g).uuid,
  gpu: gpu(g).uuid,
  ...(mig ? { mig } : {}),
});
const dra = (name: string, device: string): DeviceHolder => ({
  namespace: 'ml',
  name,
  dra: { claim: `${name}-gpu`, claimNamespace: 'ml', driver: 'gpu.nvidia.com', pool: 'gpu-a100-07', device },
});
const held = (e: TriggerEvent, holders: DeviceHolder[] | undefined): TriggerEvent =>
  ({
    ...e,
    detail: { ...e.detail, ...(holders ? { holders } : {}) } as GpuXidErrorDetail | GpuHealthChangedDetail,
  }) as TriggerEvent;

const PODS: PodFacts[] = [
  pod('a'),
  pod('b'),
  pod('c'),
  pod('claimed', { requestsGpu: false }),
  pod('web', { requestsGpu: false }),
  pod('exporter', { daemonSet: true, requestsGpu: false }),
];

describe('eviction scope by PodResources holders', () => {
  it('XID 95 with no pod traced: evicts only the holder of GPU 0, not every GPU pod of the node', () => {
    const e = held(xid(95), [plugin('a', 0), plugin('b', 1), plugin('c', 2)]);
    const plan = planRemediation(factsFor(e, node(), { pods: PODS }), DEFAULT_POLICY);
    expect(plan.action).toBe('quarantine-gpu');
    expect(evicted(plan)).toEqual(['pod/ml/a']);
    expect(plan.reason).toContain("the kubelet's PodResources says 1 pod holds it");
  });

  it('without a PodResources reading keeps the fallback of before (every GPU pod) and says so', () => {
    const plan = planRemediation(factsFor(xid(95), node(), { pods: PODS }), DEFAULT_POLICY);
    expect(evicted(plan)).toEqual(['pod/ml/a', 'pod/ml/b', 'pod/ml/c']);
    expect(plan.reason).toContain('PodResources is unknown: every GPU pod of the node is moved');
  });

  it('holders empty: the kubelet says nobody holds the GPU, so nobody is evicted', () => {
    const plan = planRemediation(factsFor(held(xid(95), []), node(), { pods: PODS }), DEFAULT_POLICY);
    expect(evicted(plan)).toEqual([]);
  });

  it('a MIG-instance fault moves only the holder of that MIG device; the healthy instance keeps its pod', () => {
    const e = held(xid(94, { mig: { gpuInstanceId: 3, uuid: MIG3 } }), [plugin('a', 0, MIG3), plugin('b', 0, MIG4)]);
    const plan = planRemediation(factsFor(e, node(), { pods: PODS }), DEFAULT_POLICY);
    expect(plan.action).toBe('restart-workload');
    expect(evicted(plan)).toEqual(['pod/ml/a']);
  });

  it('a DRA pod (a claim, no nvidia.com/gpu request) holding the faulty GPU is evicted, as a one-GPU incident', () => {
    const e = held(xid(95), [dra('claimed', 'gpu-0'), plugin('b', 1)]);
    const plan = planRemediation(factsFor(e, withDra(node()), { pods: PODS }), DEFAULT_POLICY);
    expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'gpu' });
    expect(evicted(plan)).toEqual(['pod/ml/claimed']);
  });

  it('a DRA holder of another GPU, or one no ResourceSlice ties to a GPU, is not moved', () => {
    const other = held(xid(95), [dra('claimed', 'gpu-3'), plugin('a', 0)]);
    expect(evicted(planRemediation(factsFor(other, withDra(node()), { pods: PODS }), DEFAULT_POLICY))).toEqual([
      'pod/ml/a',
    ]);
    const unsliced = held(xid(95), [dra('claimed', 'gpu-0'), plugin('a', 0)]);
    expect(evicted(planRemediation(factsFor(unsliced, node(), { pods: PODS }), DEFAULT_POLICY))).toEqual(['pod/ml/a']);
  });

  it('a health crossing that quarantines the GPU (uncorrected ECC) moves only its holders too', () => {
    const e = held(health('ecc-uncorrected'), [plugin('a', 0), plugin('b', 1)]);
    const plan = planRemediation(factsFor(e, node(), { pods: PODS }), DEFAULT_POLICY);
    expect(plan.action).toBe('quarantine-gpu');
    expect(evicted(plan)).toEqual(['pod/ml/a']);
  });

  it('pods the agent traced by pid still decide over holders', () => {
    const e = held(xid(95, { pods: [{ uid: 'uid-b' }] }), [plugin('a', 0)]);
    expect(evicted(planRemediation(factsFor(e, node(), { pods: PODS }), DEFAULT_POLICY))).toEqual(['pod/ml/b']);
  });
});

describe('a shared DRA claim moves whole (issue #32)', () => {
  // Three pods name one claim (`resourceClaimName: train-gpu`); it holds GPU 0's DRA device.
  const shared = (name: string, claim = 'train-gpu', device = 'gpu-0'): DeviceHolder => ({
    namespace: 'ml',
    name,
    dra: { claim, claimNamespace: 'ml', driver: 'gpu.nvidia.com', pool: 'gpu-a100-07', device },
  });
  const CONSUMERS = [shared('a'), shared('b'), shared('c'), shared('web', 'web-gpu', 'gpu-1')];

  it('a GPU fault traced to one consumer moves every consumer of its claim, and says why', () => {
    const e = held(xid(95, { pods: [{ uid: 'uid-a' }] }), CONSUMERS);
    const plan = planRemediation(factsFor(e, withDra(node()), { pods: PODS }), DEFAULT_POLICY);
    expect(plan.action).toBe('quarantine-gpu');
    expect(evicted(plan)).toEqual(['pod/ml/a', 'pod/ml/b', 'pod/ml/c']);
    expect(plan.reason).toContain(
      'DRA claim ml/train-gpu is shared: 2 more of its pods move with it, so Kubernetes can deallocate it from this GPU',
    );
  });

  it("a claim on another GPU keeps its pods; an application fault restarts only the culprit, the claim's GPU is fine", () => {
    const e = held(xid(95, { pods: [{ uid: 'uid-a' }] }), [shared('a'), shared('web', 'web-gpu', 'gpu-1')]);
    expect(evicted(planRemediation(factsFor(e, withDra(node()), { pods: PODS }), DEFAULT_POLICY))).toEqual([
      'pod/ml/a',
    ]);
    // XID 94 (contained ECC): NVIDIA restarts the application; the GPU stays in service, so does the claim.
    const app = held(xid(94, { pods: [{ uid: 'uid-a' }] }), CONSUMERS);
    const plan = planRemediation(factsFor(app, withDra(node()), { pods: PODS }), DEFAULT_POLICY);
    expect(plan.action).toBe('restart-workload');
    expect(evicted(plan)).toEqual(['pod/ml/a']);
    expect(plan.reason).not.toContain('DRA claim');
  });

  it('without a PodResources reading nothing is added (unknown is not a claim)', () => {
    const e = xid(95, { pods: [{ uid: 'uid-a' }] });
    expect(evicted(planRemediation(factsFor(e, withDra(node()), { pods: PODS }), DEFAULT_POLICY))).toEqual([
      'pod/ml/a',
    ]);
  });
});
