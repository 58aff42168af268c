/**
 * Issue #32: GPUs ACK shares through cGPU. Pods are matched to a card by the gpushare scheduler's
 * annotations (facts.ts), and a card is fenced by its index in ConfigMap
 * kube-system/unhealthy-gpu-<node> (fence-cgpu.ts), never by ACK's unhealthyDevices.json, which the
 * gpushare device plugin does not read. The ConfigMap is modelled by `node.cards.listed`.
 */
import { describe, expect, it } from 'vitest';
import { GPU_ACTIONS_ANNOTATION, type GpuActionRequest } from '../../../events/index.ts';
import { requestsGpu, type PodInfo } from '../../adapters/kube/model.ts';
import { podFacts } from '../facts.ts';
import { cardFenceChange, cardsLifted, fenceBackendFor, sharesCards } from './fence-cgpu.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { apply, at, factsFor, gpu, node, pod, pool, stateOf, xid } from '../testing.ts';
import type { NodeFacts, Plan, PodFacts, TriggerEvent } from './types.ts';
import type { Incident } from './state.ts';

const P = DEFAULT_POLICY;

/** A 2-card A10 node shared through cGPU, as ACK labels it and the gpushare plugin advertises it. */
/** `listed`: what the ConfigMap lists; null: not read (no access). */
function shared(listed: number[] | null = []): NodeFacts {
  const cap = { 'aliyun.com/gpu-mem': '48', 'aliyun.com/gpu-count': '2' };
  return {
    ...node('a10-share', 2),
    labels: { 'gpu-reflex.io/pool': 'a100', 'ack.node.gpu.schedule': 'cgpu' },
    capacity: cap,
    allocatable: { ...cap },
    ...(listed ? { cards: { listed } } : {}),
  };
}
const TENANTS: PodFacts[] = [
  pod('keep', { cards: [0] }),
  pod('batch', { cards: [0] }),
  pod('chat-0', { cards: [1] }),
  pod('chat-1', { cards: [1] }),
  pod('web', { requestsGpu: false }),
];

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}
/** Carries the plan out: the node and pods on the fake cluster, the card change on the ConfigMap model. */
async function carry(w: World, plan: Plan | undefined): Promise<World> {
  if (!plan) return w;
  const out = await apply(w.node, w.pods, plan, new Set(), 'ignores');
  const c = plan.cardFences;
  const listed = w.node.cards?.listed ?? [];
  const next = c
    ? [...listed.filter((x) => !c.remove.includes(x)), ...c.add.filter((x) => !listed.includes(x))]
    : listed;
  return { ...out, node: { ...out.node, ...(w.node.cards ? { cards: { listed: next } } : {}) } };
}
async function hit(w: World, e: TriggerEvent, policy: Policy = P): Promise<{ plan: Plan; world: World }> {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods, now: new Date(e.detail.observedAt) }), policy);
  return { plan, world: await carry(w, plan) };
}
async function sweep(w: World, minute: number): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    P,
  ).plans[0];
  return { plan, world: await carry(w, plan) };
}
const names = (pods: readonly { name: string }[]) => pods.map((p) => p.name).sort();
const asked = (w: World) => JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[];
const incident = (w: World) => stateOf(w.node).incidents[0]!;

describe('which nodes share their GPUs, and the fence backend there', () => {
  it.each([
    ['ack.node.gpu.schedule=cgpu', { 'ack.node.gpu.schedule': 'cgpu' }, {}, true],
    ['ack.node.gpu.schedule=core_mem', { 'ack.node.gpu.schedule': 'core_mem' }, {}, true],
    ['aliyun.com/gpu-mem capacity', {}, { 'aliyun.com/gpu-mem': '24' }, true],
    ['ack.node.gpu.schedule=default (exclusive)', { 'ack.node.gpu.schedule': 'default' }, {}, false],
    ['nvidia.com/gpu only', {}, { 'nvidia.com/gpu': '8' }, false],
  ])('%s: shares = %s', (_, labels, capacity, yes) => {
    const n = { labels, capacity };
    expect(sharesCards(n)).toBe(yes);
    expect(fenceBackendFor(P, 'a100', n)).toBe(yes ? 'ack-cgpu' : 'ack-file');
  });

  it("keeps a pool's non-ACK backend on a sharing node (DRA, NVIDIA's plugin, cordon are not the ACK file)", () => {
    for (const b of ['dra', 'nvidia-plugin', 'cordon'] as const)
      expect(fenceBackendFor({ ...P, pools: { a100: { fenceBackend: b } } }, 'a100', shared())).toBe(b);
  });

  it("reads a pod's card from the gpushare scheduler's annotation", () => {
    const info: PodInfo = {
      namespace: 'ml',
      name: 'chat-0',
      uid: 'u',
      nodeName: 'a10-share',
      phase: 'Running',
      labels: {},
      annotations: { ALIYUN_COM_GPU_MEM_IDX: '1', ALIYUN_COM_GPU_MEM_ASSIGNED: 'true' },
      owners: [],
      terminating: false,
      terminationGracePeriodSeconds: undefined,
      extendedResources: { 'aliyun.com/gpu-mem': 8 },
    };
    expect(podFacts(info)).toMatchObject({ cards: [1], requestsGpu: true });
  });

  it('counts a pod asking only for ACK shared memory or cards as a GPU pod', () => {
    expect(requestsGpu({ extendedResources: { 'aliyun.com/gpu-mem': 8 } })).toBe(true);
    expect(requestsGpu({ extendedResources: { 'aliyun.com/gpu-count': 1 } })).toBe(true);
    expect(requestsGpu({ extendedResources: { 'example.com/fpga': 1 } })).toBe(false);
  });
});

describe('a hardware XID on card 1 of a shared node', () => {
  it("moves only card 1's tenants and lists card 1 in the gpushare ConfigMap, asking the agent for no file", async () => {
    const { plan, world } = await hit({ node: shared(), pods: TENANTS }, xid(95, { node: 'a10-share', gpu: 1 }));
    expect(names(plan.evictions)).toEqual(['chat-0', 'chat-1']);
    expect(plan.cardFences).toEqual({ node: 'a10-share', add: [1], remove: [] });
    expect(asked(world).some((r) => r.action === 'fence')).toBe(false);
    expect(incident(world)).toMatchObject({ gpuIndex: 1, fence: { backend: 'ack-cgpu', listedBefore: false } });
    expect(plan.reason).toContain('kube-system/unhealthy-gpu-a10-share');
    expect(plan.reason).toContain('unhealthy-devices file fences nothing');
  });

  it('is verified by identity: the ConfigMap lists card 1, never because another card is listed', async () => {
    // Another writer listed card 0 already; our write of card 1 is refused (no access): only 0 is listed.
    let w = (await hit({ node: shared([0]), pods: TENANTS }, xid(95, { node: 'a10-share', gpu: 1 }))).world;
    w = { ...w, node: { ...w.node, cards: { listed: [0] } } };
    const early = await sweep(w, 1);
    expect(incident(early.world).fence?.verifiedAt).toBeUndefined();
    expect(early.plan?.cardFences).toEqual({ node: 'a10-share', add: [1], remove: [] });
    const late = await sweep({ ...early.world, node: { ...early.world.node, cards: { listed: [0] } } }, 3);
    expect(incident(late.world).fence).toMatchObject({ fallback: 'not-verified' });
    expect(late.world.node.taints.some((t) => t.key === P.taintKey)).toBe(true);
  });

  it('holds the fence: verified when listed, reported and listed again when someone removes it', async () => {
    let w = (await hit({ node: shared([3]), pods: TENANTS }, xid(95, { node: 'a10-share', gpu: 1 }))).world;
    expect(w.node.cards?.listed).toEqual([3, 1]);
    w = (await sweep(w, 1)).world;
    expect(incident(w).fence?.verifiedAt).toBe(at(1));
    w = { ...w, node: { ...w.node, cards: { listed: [3] } } };
    const drift = await sweep(w, 2);
    expect(incident(drift.world).fence?.driftAt).toBe(at(2));
    expect(drift.plan?.cardFences).toEqual({ node: 'a10-share', add: [1], remove: [] });
    const back = await sweep(drift.world, 3);
    expect(incident(back.world).fence?.driftAt).toBeUndefined();
    expect(back.world.node.taints.some((t) => t.key === P.taintKey)).toBe(false);
  });

  it('falls back to the node taint when the ConfigMap cannot be read', async () => {
    let w = (await hit({ node: shared(null), pods: TENANTS }, xid(95, { node: 'a10-share', gpu: 1 }))).world;
    w = (await sweep(w, 3)).world;
    expect(incident(w).fence).toMatchObject({ backend: 'ack-cgpu', fallback: 'not-verified' });
  });
});

describe('unlisting on restore', () => {
  const closed = (o: Partial<Incident['fence']> = {}, gpuIndex = 1): Incident =>
    ({
      key: 'a10-share/GPU-x/xid-95',
      trigger: 'xid-95',
      gpu: gpu(gpuIndex).uuid,
      gpuIndex,
      scope: 'gpu',
      action: 'quarantine-gpu',
      ladder: ['quarantine-gpu'],
      level: 0,
      phase: 'closed',
      firstAt: at(0),
      lastAt: at(0),
      since: at(0),
      outAt: at(0),
      closedAt: at(5),
      count: 1,
      workloads: [],
      fence: { backend: 'ack-cgpu', verifiedAt: at(1), listedBefore: false, ...o },
    }) as unknown as Incident;

  it("takes out only our card, keeps the other writers' entries, and is lifted once it is gone", () => {
    const n = shared([3, 1]);
    expect(cardFenceChange({ incidents: [closed()] }, n)).toEqual({ node: 'a10-share', add: [], remove: [1] });
    expect(cardsLifted(closed(), n, new Date(at(6)))).toBeUndefined();
    expect(cardsLifted(closed(), shared([3]), new Date(at(6)))?.unfencedAt).toBe(at(6));
  });

  it('never unlists a card that was listed before our fence (another writer isolated it)', () => {
    const mine = closed({ listedBefore: true });
    expect(cardFenceChange({ incidents: [mine] }, shared([1]))).toBeUndefined();
    expect(cardsLifted(mine, shared([1]), new Date(at(6)))?.unfencedAt).toBe(at(6));
  });

  it('keeps a card listed while another open incident still holds it', () => {
    const open = { ...closed(), key: 'a10-share/GPU-x/xid-48', phase: 'quarantined', closedAt: undefined };
    expect(cardFenceChange({ incidents: [closed(), open as Incident] }, shared([1]))).toBeUndefined();
  });
});

describe('an application XID on a shared card', () => {
  const reported = TENANTS.slice(0, 2).map((p) => ({ namespace: p.namespace, name: p.name, uid: p.uid }));

  it('whose process names no pod is one incident of an unknown workload: no tenant moves', async () => {
    const { plan, world } = await hit(
      { node: shared(), pods: TENANTS },
      xid(8, { node: 'a10-share', gpu: 0, pods: reported }),
    );
    expect(plan.action).toBe('restart-workload');
    expect(plan.evictions).toEqual([]);
    expect(incident(world).workloads).toEqual([]);
    expect(plan.reason).toContain('unknown workload');
  });

  it('that names its pod restarts that pod only, never its neighbour on the card', async () => {
    const e = xid(8, { node: 'a10-share', gpu: 0, pods: reported });
    if (e.detailType === 'GPU XID Error') e.detail.culprit = reported[0]!;
    const { plan } = await hit({ node: shared(), pods: TENANTS }, e);
    expect(names(plan.evictions)).toEqual(['keep']);
  });
});
