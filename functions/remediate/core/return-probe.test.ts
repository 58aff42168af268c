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
import { REPAIRED_AT_ANNOTATION, STATE_LABEL } from './state.ts';
import { planSweep } from './sweep.ts';
import { apply, at, factsFor, node, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';
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
const probeAsked = (w: World): GpuActionRequest | undefined =>
  (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).find(
    (r) => r.action === 'probe',
  );
function answer(w: World, r: GpuActionRequest, minute: number, probe: Partial<GpuProbe>): World {
  const passed: GpuProbe = {
    nvmlAnswers: true,
    counted: true,
    recoveryAction: 'none',
    remapPending: false,
    remapFailed: false,
    eccUncorrectedDelta: 0,
    xidsDuringProbe: [],
    passed: true,
  };
  const results = {
    ...(JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}') as Record<string, GpuActionState>),
    [r.id]: {
      state: 'done',
      action: 'probe',
      gpuUuid: r.gpuUuid,
      at: at(minute),
      probe: { ...passed, ...probe },
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
