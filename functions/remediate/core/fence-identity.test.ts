/**
 * Issue #27: a fence is verified by identity, not count, and held. The node's device plugin is
 * modelled by setting its allocatable; the node agent by writing its answer into the results
 * annotation as its actuator does (node-agent/actuator/fence-hold.ts).
 */
import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { deviceTaintName } from './fence-dra.ts';
import { apply, at, factsFor, gpu, node, pod, podResourcesSays, pool, stateOf, withDra, xid } from '../testing.ts';
import type { NodeFacts, Plan, PodFacts, TriggerEvent } from './types.ts';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  MIG_INVENTORY_ANNOTATION,
  type GpuActionRequest,
  type GpuActionState,
  type GpuFenceEvidence,
} from '../../../events/index.ts';

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}
const P = DEFAULT_POLICY;
const withBackend = (backend: Policy['fence']['backend']): Policy => ({
  ...DEFAULT_POLICY,
  pools: { a100: { fenceBackend: backend } },
});
const PODS = [pod('train-3', { gpus: [gpu(3).uuid] })];

async function hit(w: World, e: TriggerEvent, policy: Policy): Promise<World> {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods, now: new Date(e.detail.observedAt) }), policy);
  return apply(w.node, w.pods, plan, new Set(), 'ignores');
}
async function sweep(w: World, minute: number, policy: Policy): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    policy,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), 'ignores') : w };
}
const setAllocatable = (w: World, key: string, n: number): World => ({
  ...w,
  node: { ...w.node, allocatable: { ...w.node.allocatable, [key]: String(n) } },
});
const gpus = (w: World, n: number) => setAllocatable(w, 'nvidia.com/gpu', n);
/** NVIDIA's plugin's latch: the count, and PodResources naming which GPUs are out. */
const latched = (w: World, n: number, out: number[]): World => {
  const c = gpus(w, n);
  return { ...c, node: podResourcesSays(c.node, out) };
};
const fenceRequest = (w: World) =>
  (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).find(
    (r) => r.action === 'fence',
  )!;
/** The node agent's answer to the fence, as its actuator writes it. */
function agent(
  w: World,
  fence: GpuFenceEvidence | undefined,
  state: GpuActionState['state'] = 'done',
  minute = 0,
): World {
  const r = fenceRequest(w);
  const results = {
    ...(JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>),
    [r.id]: {
      state,
      action: 'fence',
      gpuUuid: r.gpuUuid,
      at: at(minute),
      ...(fence ? { fence } : {}),
    } as GpuActionState,
  };
  return {
    ...w,
    node: {
      ...w.node,
      annotations: { ...w.node.annotations, [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify(results) },
    },
  };
}
const fenceOf = (w: World) => stateOf(w.node).incidents[0]!.fence;
const ourTaint = (w: World) => w.node.taints.find((t) => t.key === P.taintKey);
/** ACK's own isolation already holds GPU 5 out: allocatable 7 before anything of ours. */
const ackHoldsGpu5 = (): World => gpus({ node: node(), pods: PODS }, 7);

describe('fence identity: the ACK file lists our UUID, and the count is past what was out before', () => {
  it('verifies our GPU by identity while ACK isolation holds another: file lists it, allocatable 8 → 6', async () => {
    let w = await hit(ackHoldsGpu5(), xid(48, { gpu: 3 }), P);
    expect(fenceOf(w)).toMatchObject({ backend: 'ack-file', outBefore: 1 });
    w = gpus(agent(w, { listed: true, before: ['index:5'] }), 6);
    const s = await sweep(w, 1, P);
    expect(s.plan?.reason).toContain(
      `${gpu(3).uuid} is fenced (ACK device plugin's unhealthy-devices file): the file lists it; 2 GPU device(s) missing from its allocatable, 2 expected (1 held out by gpu-reflex, 1 already out before the fence`,
    );
    expect(fenceOf(s.world)?.verifiedAt).toBe(at(1));
  });

  it('never verifies on a count another device makes: our fence did not land, ACK holds GPU 5, allocatable still 7 → the node is tainted', async () => {
    // On the count alone (before #27) this verified: 1 device missing, 1 expected.
    const w = await hit(ackHoldsGpu5(), xid(48, { gpu: 3 }), P);
    const early = await sweep(w, 1, P);
    expect(fenceOf(early.world)?.verifiedAt).toBeUndefined();
    const s = await sweep(early.world, P.fence.verifyMinutes, P);
    expect(s.plan?.notices[0]?.text).toContain(
      "1 GPU device(s) missing from its allocatable, 2 expected (1 held out by gpu-reflex, 1 already out before the fence: another device's isolation is no proof of ours)",
    );
    expect(ourTaint(s.world)).toMatchObject({ effect: 'NoSchedule' });
  });

  it('a count that would pass is not enough without the file listing our GPU (agent silent, or an agent without evidence)', async () => {
    const w = gpus(await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P), 7);
    const silent = await sweep(w, P.fence.verifyMinutes, P);
    expect(silent.plan?.notices[0]?.text).toContain(
      'the node agent has not answered the fence yet; 1 GPU device(s) missing from its allocatable, 1 expected',
    );
    const old = await sweep(agent(w, undefined), P.fence.verifyMinutes, P);
    expect(old.plan?.notices[0]?.text).toContain('the node agent gave no evidence of the file');
    const notListed = await sweep(agent(w, { listed: false, before: [] }), 1, P);
    expect(fenceOf(notListed.world)?.verifiedAt).toBeUndefined();
  });

  it('the file lists our GPU, but the allocatable has not dropped yet: it waits', async () => {
    const w = agent(await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P), { listed: true, before: [] });
    const s = await sweep(w, 1, P);
    expect(fenceOf(s.world)?.verifiedAt).toBeUndefined();
    expect(ourTaint(s.world)).toBeUndefined();
  });

  it('the other writers named in the file count as out before the fence, even when the allocatable did not show them yet', async () => {
    let w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P);
    w = gpus(agent(w, { listed: true, before: ['index:5'] }), 7);
    const s = await sweep(w, 1, P);
    expect(fenceOf(s.world)?.verifiedAt).toBeUndefined();
  });

  it('an agent that could not write the file escalates to the node taint at once, saying why', async () => {
    const w = agent(
      await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P),
      { listed: false, before: [] },
      'failed',
    );
    const s = await sweep(w, 0, P);
    expect(s.plan?.notices[0]?.text).toContain('the node agent could not fence it');
    expect(ourTaint(s.world)).toBeDefined();
  });
});

/** An 8-GPU node carved 7×1g.10gb per GPU, as the node agent's MIG inventory lists it. */
function migNode(): NodeFacts {
  const mig = { 'nvidia.com/mig-1g.10gb': '56' };
  const inventory = {
    v: 1,
    at: at(0),
    gpus: Array.from({ length: 8 }, (_, g) => ({
      index: g,
      uuid: gpu(g).uuid,
      instances: Array.from({ length: 7 }, (_, k) => ({ profile: '1g.10gb', gi: k + 7, inUse: false })),
    })),
  };
  return {
    ...node(),
    capacity: mig,
    allocatable: { ...mig },
    annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
  };
}

describe('fence identity on a MIG GPU: every instance counts', () => {
  it('the ACK file fence of a MIG GPU is verified only when all seven of its instances left allocatable', async () => {
    const w = agent(await hit({ node: migNode(), pods: PODS }, xid(48, { gpu: 3 }), P), { listed: true, before: [] });
    const one = await sweep(setAllocatable(w, 'nvidia.com/mig-1g.10gb', 55), P.fence.verifyMinutes, P);
    expect(one.plan?.notices[0]?.text).toContain('1 GPU device(s) missing from its allocatable, 7 expected');
    expect(ourTaint(one.world)).toBeDefined();
    const all = await sweep(setAllocatable(w, 'nvidia.com/mig-1g.10gb', 49), 1, P);
    expect(fenceOf(all.world)?.verifiedAt).toBe(at(1));
  });
});

describe("fence identity under NVIDIA's plugin: only a count, so the baseline and the MIG instances matter", () => {
  const NV = withBackend('nvidia-plugin');

  it('a GPU the plugin had latched before (an XID gpu-reflex only observed) does not verify ours', async () => {
    // Read as the plugin latches: 2 out, one of which may be ours already; the other is not ours.
    const w = await hit(latched({ node: node(), pods: PODS }, 6, [5, 3]), xid(48, { gpu: 3 }), NV);
    expect(fenceOf(w)?.outBefore).toBe(1);
    const s = await sweep(latched(w, 7, [5]), NV.fence.verifyMinutes, NV);
    expect(s.plan?.notices[0]?.text).toContain('1 GPU device(s) missing from its allocatable, 2 expected');
    expect(s.plan?.notices[0]?.text).toContain(`still lists 1 of its device(s) allocatable: ${gpu(3).uuid}`);
    expect(ourTaint(s.world)).toBeDefined();
    const verified = await sweep(w, 1, NV);
    expect(fenceOf(verified.world)?.verifiedAt).toBe(at(1));
  });

  it('identity, not count: another GPU out passes any count, but PodResources still lists ours allocatable', async () => {
    // GPU 5 latched after our fence began (no baseline can tell): one device out, one expected.
    const w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV);
    const s = await sweep(latched(w, 7, [5]), 1, NV);
    expect(fenceOf(s.world)?.verifiedAt).toBeUndefined();
    expect(s.plan?.reason ?? '').not.toContain('is fenced');
    expect(fenceOf((await sweep(latched(w, 7, [3]), 1, NV)).world)?.verifiedAt).toBe(at(1));
  });

  it('unknown is not verified: no PodResources word, or PodResources unreadable, never verifies a latch', async () => {
    const w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV);
    const silent = await sweep(gpus(w, 7), 1, NV);
    expect(fenceOf(silent.world)?.verifiedAt).toBeUndefined();
    const c = gpus(w, 7);
    const blind = { ...c, node: podResourcesSays(c.node, [3], { unknown: 'no PodResources socket' }) };
    const s = await sweep(blind, NV.fence.verifyMinutes, NV);
    expect(fenceOf(s.world)?.verifiedAt).toBeUndefined();
    expect(s.plan?.notices[0]?.text).toContain('PodResources unknown');
    expect(ourTaint(s.world)).toBeDefined();
  });

  it('a MIG GPU: the upstream plugin latches one instance of seven, which is no fence, so the node is tainted at once and the words say why', async () => {
    const w = await hit({ node: migNode(), pods: PODS }, xid(48, { gpu: 3 }), NV);
    expect(fenceOf(w)).toMatchObject({ backend: 'nvidia-plugin', fallback: 'plugin-latches-one-mig-device' });
    expect(ourTaint(w)).toMatchObject({ effect: 'NoSchedule' });
    const plan = planRemediation(factsFor(xid(48, { gpu: 3 }), migNode(), { pods: PODS }), NV);
    expect(plan.reason).toContain(
      "is a MIG GPU, and NVIDIA's device plugin latches only one of its instances for XID 48",
    );
  });

  it("a dead agent's last word verifies nothing: PodResources last confirmed over 10 min ago is unknown, and the node is tainted", async () => {
    const hitW = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV);
    const confirmed = (w: World, minute: number): World => {
      const c = gpus(w, 7);
      return { ...c, node: podResourcesSays(c.node, [3], { at: at(1), checked: at(minute) }) };
    };
    const v = await sweep(confirmed(hitW, 1), 1, NV);
    expect(fenceOf(v.world)?.verifiedAt).toBe(at(1));
    // The agent keeps re-confirming: the fence holds.
    const kept = await sweep(confirmed(v.world, 9), 10, NV);
    expect(ourTaint(kept.world)).toBeUndefined();
    // It stopped at minute 9: at minute 20 its word is 11 minutes old.
    const s = await sweep(confirmed(kept.world, 9), 20, NV);
    expect(s.plan?.notices[0]?.text ?? s.plan?.reason).toContain(
      `the node agent last confirmed PodResources at ${at(9)}, over 10 min ago (unknown: is it running?)`,
    );
    expect(ourTaint(s.world)).toBeDefined();
  });

  it('a verified latch undone by someone (the plugin restarted) cannot be set again by gpu-reflex: the node is tainted at once', async () => {
    const v = await sweep(latched(await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV), 7, [3]), 1, NV);
    expect(fenceOf(v.world)?.verifiedAt).toBe(at(1));
    const s = await sweep(latched(v.world, 8, []), 2, NV);
    expect(s.plan?.notices[0]?.text).toContain("NVIDIA's device plugin counts it again");
    expect(ourTaint(s.world)).toBeDefined();
  });
});

describe('a fence is held: re-verified on every sweep, restored, escalated, reported', () => {
  async function verified(): Promise<World> {
    const w = gpus(
      agent(await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P), { listed: true, before: [] }),
      7,
    );
    const s = await sweep(w, 1, P);
    expect(fenceOf(s.world)?.verifiedAt).toBe(at(1));
    return s.world;
  }

  it('the agent wrote the fence back (another writer rewrote the file): reported once, with a notice', async () => {
    const w = agent(await verified(), { listed: true, before: [], restored: 1, restoredAt: at(2) });
    const s = await sweep(w, 3, P);
    expect(s.plan?.kind).toBe('act');
    expect(s.plan?.reason).toContain(
      `the fence of ${gpu(3).uuid} holds again (ACK device plugin's unhealthy-devices file): another writer removed it from the fence file and the node agent wrote it back at ${at(2)}`,
    );
    expect(s.plan?.notices[0]?.text).toContain('wrote it back');
    expect(fenceOf(s.world)?.restoredSeen).toBe(at(2));
    expect(s.plan?.nodeEvents).toEqual([
      expect.objectContaining({ type: 'Normal', reason: 'GpuFenceRestored', action: 'Fence' }),
    ]);
    expect((await sweep(s.world, 4, P)).plan?.notices ?? []).toEqual([]);
  });

  it('a fence that keeps drifting is told once per fence.driftNoticeMinutes, still written back and recorded', async () => {
    const R: Policy = { ...P, fence: { ...P.fence, driftNoticeMinutes: 10 } };
    let w = await verified();
    const told: number[] = [];
    // Another writer rewrites the file every minute; the agent writes it back each time.
    for (let m = 2; m <= 12; m++) {
      const s = await sweep(agent(w, { listed: true, before: [], restored: m - 1, restoredAt: at(m) }), m, R);
      if (s.plan?.notices.some((n) => n.text.includes('holds again'))) told.push(m);
      expect(fenceOf(s.world)?.restoredSeen).toBe(at(m));
      w = s.world;
    }
    expect(told).toEqual([2, 12]);
  });

  it('a drift whose start was not told is not told when it ends; a told one is', async () => {
    const R: Policy = { ...P, fence: { ...P.fence, driftNoticeMinutes: 10 } };
    const first = await sweep(gpus(agent(await verified(), { listed: false, before: [] }), 8), 2, R);
    expect(first.plan?.notices).toHaveLength(1);
    const back = await sweep(gpus(agent(first.world, { listed: true, before: [] }), 7), 3, R);
    expect(back.plan?.notices).toHaveLength(1);
    const again = await sweep(gpus(agent(back.world, { listed: false, before: [] }), 8), 4, R);
    expect(again.plan?.notices ?? []).toEqual([]);
    expect(fenceOf(again.world)?.driftAt).toBe(at(4));
    const quiet = await sweep(gpus(agent(again.world, { listed: true, before: [] }), 7), 5, R);
    expect(quiet.plan?.notices ?? []).toEqual([]);
    expect(fenceOf(quiet.world)?.driftAt).toBeUndefined();
    // escalation is not rate-limited: gone again and never back, the node is tainted at the deadline
    const gone = await sweep(gpus(agent(quiet.world, { listed: false, before: [] }), 8), 6, R);
    const late = await sweep(gone.world, 6 + R.fence.verifyMinutes, R);
    expect(late.plan?.notices[0]?.text).toContain('has not held since');
    expect(ourTaint(late.world)).toMatchObject({ effect: 'NoSchedule' });
  });

  it('a fence seen gone is reported at once; still gone fence.verifyMinutes later, the node is tainted', async () => {
    const gone = gpus(agent(await verified(), { listed: false, before: [] }), 8);
    const s = await sweep(gone, 2, P);
    expect(s.plan?.notices[0]?.text).toContain(
      `the fence of ${gpu(3).uuid} no longer holds (the file does not list it; 0 GPU device(s) missing from its allocatable, 1 expected)`,
    );
    expect(ourTaint(s.world)).toBeUndefined();
    expect(fenceOf(s.world)?.driftAt).toBe(at(2));
    expect(s.plan?.nodeEvents?.map((e) => `${e.type} ${e.reason}`)).toEqual(['Warning GpuFenceLost']);
    expect((await sweep(s.world, 2 + P.fence.verifyMinutes - 1, P)).plan).toBeUndefined();
    const late = await sweep(s.world, 2 + P.fence.verifyMinutes, P);
    expect(late.plan?.notices[0]?.text).toContain(`has not held since ${at(2)}`);
    expect(late.plan?.nodeEvents?.map((e) => e.reason)).toEqual(['GpuFenceEscalated']);
    expect(ourTaint(late.world)).toMatchObject({ effect: 'NoSchedule' });
  });

  it('a fence gone and back again before the deadline is reported as holding again, untainted', async () => {
    const gone = await sweep(gpus(agent(await verified(), { listed: false, before: [] }), 8), 2, P);
    const back = await sweep(
      gpus(agent(gone.world, { listed: true, before: [], restored: 1, restoredAt: at(2) }), 7),
      3,
      P,
    );
    expect(back.plan?.reason).toContain('holds again');
    expect(fenceOf(back.world)?.driftAt).toBeUndefined();
    expect(ourTaint(back.world)).toBeUndefined();
  });

  it('re-verification only needs our own devices out: ACK releasing the GPU it held is no drift', async () => {
    const w = await sweep(
      gpus(agent(await hit(ackHoldsGpu5(), xid(48, { gpu: 3 }), P), { listed: true, before: ['index:5'] }), 6),
      1,
      P,
    );
    expect(fenceOf(w.world)?.verifiedAt).toBe(at(1));
    expect((await sweep(gpus(w.world, 7), 2, P)).plan).toBeUndefined();
  });

  it('a DeviceTaintRule deleted by someone is created again and reported', async () => {
    const D = withBackend('dra');
    const w = (await sweep(await hit({ node: withDra(node()), pods: PODS }, xid(48, { gpu: 3 }), D), 1, D)).world;
    const gone = { ...w, node: { ...w.node, dra: { ...w.node.dra!, rules: [] } } };
    const s = await sweep(gone, 2, D);
    expect(s.plan?.deviceTaints?.add.map((t) => t.name)).toEqual([deviceTaintName('gpu-a100-07', gpu(3).uuid)]);
    expect(s.plan?.notices[0]?.text).toContain('was deleted by someone; creating it again');
    const again = await sweep(s.world, 3, D);
    expect(again.plan?.reason).toContain('holds again');
  });
});
