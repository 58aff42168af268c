import { describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionRequest,
  type GpuActionState,
  type GpuProbe,
} from '../../../events/index.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { encodeHistory, HISTORY_ANNOTATION, REPAIRED_AT_ANNOTATION, STATE_LABEL } from './state.ts';
import { planSweep } from './sweep.ts';
import { apply, at, factsFor, gpu, health, node, pool, STANDARD_PODS, stateOf, xid, PASSED_PROBE } from '../testing.ts';
import type { NodeFacts, Plan, PodFacts, TriggerEvent } from './types.ts';

const P = DEFAULT_POLICY;
const CLOUD = { capabilities: { reboot: true } };

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}
const hit = async (w: World, e: TriggerEvent): Promise<World> =>
  apply(w.node, w.pods, planRemediation(factsFor(e, w.node, { pods: w.pods }), P));
async function sweep(w: World, minute: number, cloud = true): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    {
      now: new Date(at(minute)),
      nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }],
      ...(cloud ? CLOUD : {}),
    },
    P,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan) : w };
}
const booted = (w: World, bootId: string): World => ({ ...w, node: { ...w.node, bootId, ready: true } });
const probesAsked = (w: World): GpuActionRequest[] =>
  (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).filter(
    (r) => r.action === 'probe',
  );
const probeAsked = (w: World): GpuActionRequest | undefined =>
  (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).find(
    (r) => r.action === 'probe',
  );
function answer(w: World, r: GpuActionRequest, minute: number, probe: Partial<GpuProbe>): World {
  const results = {
    ...(JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>),
    [r.id]: {
      state: 'done',
      action: 'probe',
      gpuUuid: r.gpuUuid,
      at: at(minute),
      probe: { ...PASSED_PROBE, ...probe },
    } satisfies GpuActionState,
  };
  return {
    ...w,
    node: {
      ...w.node,
      annotations: { ...w.node.annotations, [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify(results) },
    },
  };
}

/** XID 79 drains the node, the sweep reboots it, and it comes back (new boot id, Ready) at minute 5. */
async function rebootedAndBack(): Promise<World> {
  let w = booted(await hit({ node: node(), pods: STANDARD_PODS }, xid(79, { minute: 0 })), 'boot-1');
  w = (await sweep(w, 1)).world;
  return (await sweep(booted(w, 'boot-2'), 5)).world;
}

describe("evidence, not time, after a reboot or a person's repair", () => {
  it('keeps a node out, awaiting-repair with a person told, when its GPU does not come back from the reboot', async () => {
    let w = await rebootedAndBack();
    const probe = probeAsked(w)!;
    w = answer(w, probe, 6, { counted: false, nvmlAnswers: false, passed: false });
    const { plan, world } = await sweep(w, 7);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toContain('NVML does not list it any more (missing since the reboot)');
    expect(plan?.reason).toContain('the node stays out');
    expect(plan?.notices.length).toBeGreaterThan(0);
    expect(stateOf(world.node).incidents[0]).toMatchObject({ phase: 'awaiting-repair' });
    expect(world.node.unschedulable).toBe(true);
    expect(world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    // And it stays out: hours of quiet bring nothing back.
    expect((await sweep(world, 300)).world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
  });

  it('asks the probe again, quietly, for a GPU back from its reboot whose ask was lost, and returns it only on its pass', async () => {
    const back = await rebootedAndBack();
    // History written without the ask (an older version, or a write that never landed): back, but no probe on record.
    const s = stateOf(back.node);
    const lost = { ...s, incidents: s.incidents.map(({ repair: _asked, ...i }) => i) };
    let w: World = {
      ...back,
      node: { ...back.node, annotations: { ...back.node.annotations, [HISTORY_ANNOTATION]: encodeHistory(lost) } },
    };
    const asked = await sweep(w, 6);
    expect(stateOf(asked.world.node).incidents[0]?.repair?.step).toBe('probe');
    // The first ask said so when the node came back; this one is bookkeeping, said nowhere again.
    expect(asked.plan?.reason ?? '').not.toContain('health probe of');
    w = answer(asked.world, probeAsked(asked.world)!, 7, {});
    expect((await sweep(w, 8)).world.node.labels[STATE_LABEL]).toBe('healthy');
  });

  it.each([
    ['a recovery action the driver does not name', { recoveryAction: 'unknown', passed: false }],
    ['an agent that does not say whether NVML lists the GPU', { counted: undefined }],
  ])('does not return a rebooted GPU on %s: unknown is never healthy', async (_what, probe) => {
    let w = await rebootedAndBack();
    w = answer(w, probeAsked(w)!, 6, probe);
    const { plan } = await sweep(w, 7);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toContain('did not pass');
  });

  it('fails the probe on a fault of the same GPU the functions saw during its window, whatever the agent says', async () => {
    let w = await rebootedAndBack();
    const probe = probeAsked(w)!;
    w = await hit(w, xid(48, { minute: 6, gpu: 0 }));
    w = answer(w, probe, 7, {});
    const { plan } = await sweep(w, 8);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toMatch(/xid-48 seen at .*, during the probe window/);
  });

  it("after a person's repaired-at: a failed probe keeps the node out and tells a person once; a newer repaired-at probes again", async () => {
    let w = (await sweep(await hit({ node: node(), pods: STANDARD_PODS }, xid(79, { minute: 0 })), 1, false)).world;
    const mark = (w: World, minute: number): World => ({
      ...w,
      node: { ...w.node, annotations: { ...w.node.annotations, [REPAIRED_AT_ANNOTATION]: at(minute) } },
    });
    w = (await sweep(mark(w, 60), 61, false)).world;
    const first = probeAsked(w)!;
    w = answer(w, first, 62, { remapPending: true, passed: false });
    const failed = await sweep(w, 63, false);
    expect(failed.plan?.reason).toContain('a row remap is pending; the node stays out');
    expect(failed.plan?.notices).toHaveLength(1);
    w = failed.world;
    expect((await sweep(w, 64, false)).plan).toBeUndefined(); // told once
    w = (await sweep(mark(w, 90), 91, false)).world;
    const second = probeAsked(w)!;
    expect(second.id).not.toBe(first.id);
    w = answer(w, second, 92, {});
    const back = await sweep(w, 93, false);
    expect(back.plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(back.world.node.labels[STATE_LABEL]).toBe('healthy');
  });
});

/**
 * A node-wide incident (gpu-count: NVML lists fewer GPUs than the node should, no GPU to name) drains
 * the node, the sweep reboots it, and it comes back (new boot id, Ready) at minute 5.
 */
async function nodeWideBack(o: { gpusAfter?: number; known?: boolean } = {}): Promise<World> {
  const before = o.known === false ? { ...node(), gpus: undefined } : node();
  let w = booted(await hit({ node: before, pods: STANDARD_PODS }, health('gpu-count', { gpu: null })), 'boot-1');
  w = (await sweep(w, 1)).world;
  const gpus = o.known === false ? undefined : node().gpus!.slice(0, o.gpusAfter ?? 8);
  return (await sweep(booted({ ...w, node: { ...w.node, gpus } }, 'boot-2'), 5)).world;
}
const answerAll = (w: World, minute: number, probe: (uuid: string) => Partial<GpuProbe> = () => ({})): World =>
  probesAsked(w).reduce((x, r) => answer(x, r, minute, probe(r.gpuUuid)), w);

describe('a node-wide incident after a reboot: each GPU decided by its own probe', () => {
  it('asks one probe per GPU the node had before the reboot, and returns the node when all 8 pass', async () => {
    let w = await nodeWideBack();
    const asked = probesAsked(w);
    expect(asked.map((r) => r.gpuUuid).sort()).toEqual([...node().gpus!].sort());
    expect(new Set(asked.map((r) => r.id)).size).toBe(8);
    // Seven answered: not yet.
    w = asked.slice(0, 7).reduce((x, r) => answer(x, r, 6, {}), w);
    expect((await sweep(w, 7)).plan?.action).not.toBe('restore');
    w = answer(w, asked[7]!, 7, {});
    const { plan, world } = await sweep(w, 8);
    expect(plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(plan?.reason).toContain("each of the node's 8 GPUs passed its own health probe after its reboot");
    expect(world.node.labels[STATE_LABEL]).toBe('healthy');
    expect(world.node.unschedulable).toBe(false);
  });

  it('keeps the node out, awaiting-repair with a person told, when one of its 8 GPUs does not come back', async () => {
    // GPU 7 is gone after the reboot: the node lists 7, but the probe still asks for the 8 it had.
    let w = await nodeWideBack({ gpusAfter: 7 });
    expect(probesAsked(w)).toHaveLength(8);
    const lost = gpu(7).uuid;
    w = answerAll(w, 6, (uuid) => (uuid === lost ? { counted: false, nvmlAnswers: false, passed: false } : {}));
    const { plan, world } = await sweep(w, 7);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toContain(`the health probe of ${lost} after its reboot did not pass`);
    expect(plan?.reason).toContain('a GPU is missing: the node stays out');
    expect(plan?.notices.length).toBeGreaterThan(0);
    expect(world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    expect(world.node.unschedulable).toBe(true);
    expect((await sweep(world, 300)).world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
  });

  it('does not return the node on one GPU whose recovery action is unknown: unknown is not none', async () => {
    let w = await nodeWideBack();
    w = answerAll(w, 6, (uuid) => (uuid === gpu(2).uuid ? { recoveryAction: 'unknown', passed: false } : {}));
    const { plan } = await sweep(w, 7);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toContain(`the health probe of ${gpu(2).uuid} after its reboot did not pass`);
  });

  it('fails a GPU on an XID of it the functions saw during its probe window', async () => {
    let w = await nodeWideBack();
    w = await hit(w, xid(48, { minute: 6, gpu: 4 }));
    w = answerAll(w, 7);
    const { plan } = await sweep(w, 8);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toMatch(/xid-48 seen at .*, during the probe window/);
  });

  it('keeps the node out when no GPU of it is known: nothing to probe is not a passed probe', async () => {
    const w = await nodeWideBack({ known: false });
    expect(probesAsked(w)).toHaveLength(0);
    expect(w.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    // Told at once, when it came back (minute 5), and its reboot is behind it: only a person returns it now.
    expect(stateOf(w.node).incidents[0]).toMatchObject({ phase: 'awaiting-repair', notifiedAt: at(5) });
    expect(stateOf(w.node).incidents[0]?.reboot).toBeUndefined();
    const { plan, world } = await sweep(w, 5 + P.quietPeriodMinutes + 1);
    expect(plan?.action).not.toBe('restore');
    expect(world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
  });
});

/**
 * A node-wide incident (gpu-count) left to a person (no cloud: no reboot of ours), then the person's repaired-at at
 * minute 60: the same per-GPU probes as after a reboot, over the GPUs the node lists.
 */
async function nodeWideRepaired(o: { known?: boolean; repairedAt?: number } = {}): Promise<World> {
  const before = o.known === false ? { ...node(), gpus: undefined } : node();
  let w = (await sweep(await hit({ node: before, pods: STANDARD_PODS }, health('gpu-count', { gpu: null })), 1, false))
    .world;
  w = {
    ...w,
    node: { ...w.node, annotations: { ...w.node.annotations, [REPAIRED_AT_ANNOTATION]: at(o.repairedAt ?? 60) } },
  };
  return (await sweep(w, (o.repairedAt ?? 60) + 1, false)).world;
}

describe("a node-wide incident after a person's repaired-at: each GPU decided by its own probe", () => {
  it('asks one probe per GPU, returns the node only when all 8 pass, never on quiet time', async () => {
    let w = await nodeWideRepaired();
    const asked = probesAsked(w);
    expect(asked.map((r) => r.gpuUuid).sort()).toEqual([...node().gpus!].sort());
    expect(stateOf(w.node).incidents[0]?.repair?.gpus).toHaveLength(8);
    // Hours of quiet with no answer: still out (the answer timeout fails it instead).
    expect((await sweep(w, 61 + P.quietPeriodMinutes)).plan?.action).not.toBe('restore');
    w = asked.slice(0, 7).reduce((x, r) => answer(x, r, 62, {}), w);
    expect((await sweep(w, 63, false)).plan?.action).not.toBe('restore');
    w = answer(w, asked[7]!, 63, {});
    const { plan, world } = await sweep(w, 64, false);
    expect(plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(plan?.reason).toContain("each of the node's 8 GPUs passed its own health probe after its repair");
    expect(world.node.labels[STATE_LABEL]).toBe('healthy');
  });

  it('keeps the node out on one failed GPU, tells a person once; a newer repaired-at probes again', async () => {
    let w = await nodeWideRepaired();
    const bad = gpu(3).uuid;
    w = answerAll(w, 62, (uuid) => (uuid === bad ? { remapFailed: true, passed: false } : {}));
    const failed = await sweep(w, 63, false);
    expect(failed.plan?.action).not.toBe('restore');
    expect(failed.plan?.reason).toContain(`the health probe of ${bad} after its repair did not pass`);
    expect(failed.plan?.notices).toHaveLength(1);
    w = failed.world;
    expect(w.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    expect((await sweep(w, 64, false)).plan).toBeUndefined(); // told once
    const first = probesAsked(w).map((r) => r.id);
    w = { ...w, node: { ...w.node, annotations: { ...w.node.annotations, [REPAIRED_AT_ANNOTATION]: at(90) } } };
    w = (await sweep(w, 91, false)).world;
    const second = probesAsked(w);
    expect(second).toHaveLength(8);
    expect(second.map((r) => r.id).some((id) => first.includes(id))).toBe(false);
    w = answerAll(w, 92);
    expect((await sweep(w, 93, false)).plan).toMatchObject({ action: 'restore' });
  });

  it('keeps the node out when no GPU of it is known, a person told once', async () => {
    const w = await nodeWideRepaired({ known: false });
    expect(probesAsked(w)).toHaveLength(0);
    expect(w.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    expect(stateOf(w.node).incidents[0]).toMatchObject({ phase: 'awaiting-repair', notifiedAt: at(61) });
    const later = await sweep(w, 61 + P.quietPeriodMinutes + 1, false);
    expect(later.plan?.action).not.toBe('restore');
    expect(later.plan?.notices ?? []).toHaveLength(0);
  });
});

/**
 * DCGM's diagnostic as probe evidence (policy `repair.dcgmDiag`): the probe asks for `dcgmi diag -r N` and the GPU
 * returns only on its `pass`; a failed, unavailable or missing diagnostic keeps it out (unknown is never healthy).
 */
describe("DCGM's diagnostic as part of the return probe", () => {
  const DIAG = { ...P, repair: { ...P.repair, dcgmDiag: 2 } };
  const sweepDiag = async (w: World, minute: number) => {
    const plan = planSweep(
      {
        now: new Date(at(minute)),
        nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }],
        ...CLOUD,
      },
      DIAG,
    ).plans[0];
    return { plan, world: plan ? await apply(w.node, w.pods, plan) : w };
  };
  async function back(): Promise<World> {
    let w = booted(await hit({ node: node(), pods: STANDARD_PODS }, xid(79, { minute: 0 })), 'boot-1');
    w = (await sweepDiag(w, 1)).world;
    return (await sweepDiag(booted(w, 'boot-2'), 5)).world;
  }
  const diag = (result: 'pass' | 'fail' | 'unavailable', more: Record<string, unknown> = {}) => ({
    diag: { level: 2 as const, result, failed: result === 'fail' ? ['Memtest'] : [], ...more },
  });

  it('asks the agent for the diagnostic, with the time it takes added to the answer timeout', async () => {
    const w = await back();
    const asked = probeAsked(w)!;
    expect(asked).toMatchObject({ action: 'probe', diag: 2 });
    expect(asked.timeoutSeconds).toBe(P.repair.answerTimeoutMinutes * 60 + 15 * 60);
    // Without the policy, no diagnostic is asked.
    expect(probeAsked(await rebootedAndBack())!.diag).toBeUndefined();
  });

  it('returns the node once the probe and the diagnostic both pass', async () => {
    let w = await back();
    w = answer(w, probeAsked(w)!, 8, diag('pass'));
    const { plan } = await sweepDiag(w, 9);
    expect(plan).toMatchObject({ action: 'restore', phase: 'restored' });
  });

  it.each([
    ['a failed diagnostic', diag('fail'), 'DCGM diagnostic level 2 failed: Memtest'],
    [
      'no verdict (the host engine down)',
      diag('unavailable', { reason: 'host engine not running' }),
      'no DCGM verdict',
    ],
    ['an agent that ignored the diagnostic', {}, 'no DCGM diagnostic (level 2 asked'],
    ['a shallower run than asked', { diag: { level: 1, result: 'pass', failed: [] } }, 'ran at level 1, not the 2'],
  ])('keeps the node out on %s, whatever NVML says', async (_what, probe, words) => {
    let w = await back();
    w = answer(w, probeAsked(w)!, 8, probe as Partial<GpuProbe>);
    const { plan, world } = await sweepDiag(w, 9);
    expect(plan?.action).not.toBe('restore');
    expect(plan?.reason).toContain(words);
    expect(world.node.unschedulable).toBe(true);
  });
});
