/**
 * A GPU is reset only once nothing can land on it (issue #32, reset-gate.ts): its fence verified
 * by identity, or the node taint that replaces an unverifiable fence on the Node; and no pod on the
 * card. Plans go through the real applier over the fake ports (testing.ts).
 */
import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { awaitsTaint, resetGate } from './reset-gate.ts';
import {
  apply,
  at,
  factsFor,
  gpu,
  node,
  pod,
  podResourcesSays,
  pool,
  stateOf,
  xid,
  type PluginModel,
} from '../testing.ts';
import type { Incident } from './state.ts';
import type { NodeFacts, Plan, PodFacts, TriggerEvent } from './types.ts';
import { GPU_ACTIONS_ANNOTATION, type GpuActionRequest } from '../../../events/index.ts';

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}

const withBackend = (backend: Policy['fence']['backend']): Policy => ({
  ...DEFAULT_POLICY,
  pools: { a100: { fenceBackend: backend } },
});
const NV = withBackend('nvidia-plugin');
const PODS = [pod('train-0', { gpus: [gpu(0).uuid] }), pod('train-3', { gpus: [gpu(3).uuid] })];

async function hit(w: World, e: TriggerEvent, policy: Policy, plugin: PluginModel): Promise<World> {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods, now: new Date(e.detail.observedAt) }), policy);
  return apply(w.node, w.pods, plan, new Set(), plugin);
}

async function sweep(
  w: World,
  minute: number,
  policy: Policy,
  plugin: PluginModel,
): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    policy,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), plugin) : w };
}

const resets = (w: World): GpuActionRequest[] =>
  (JSON.parse(w.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).filter(
    (r) => r.action === 'reset',
  );
const ourTaint = (w: World) => w.node.taints.find((t) => t.key === DEFAULT_POLICY.taintKey);

describe('the reset waits for a fence that holds (reset-gate.ts)', () => {
  it('an unverified fence: no reset while its pods are gone, none in the sweep that taints, one once the taint is on the node', async () => {
    // NVIDIA's plugin does not take GPU 3 out (the allocatable stays 8): the fence cannot be verified.
    let w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV, 'ignores');
    expect(w.pods.map((p) => p.name)).toEqual(['train-0']);
    const waiting = await sweep(w, 1, NV, 'ignores');
    expect(resets(waiting.world)).toEqual([]);
    expect(waiting.plan?.reason).toContain(
      `the reset of ${gpu(3).uuid} waits: its fence (nvidia-plugin) is not verified`,
    );
    expect(stateOf(waiting.world.node).incidents[0]).toMatchObject({ resetHeldAt: at(1) });
    // fence.verifyMinutes later: the taint is asked for, and the reset still waits for it to be seen
    const tainting = await sweep(waiting.world, NV.fence.verifyMinutes, NV, 'ignores');
    expect(ourTaint(tainting.world)).toMatchObject({ effect: 'NoSchedule' });
    expect(resets(tainting.world)).toEqual([]);
    expect(tainting.plan?.reason).toContain('waits until the node taint gpu-reflex.io/unhealthy:NoSchedule');
    w = (await sweep(tainting.world, NV.fence.verifyMinutes + 1, NV, 'ignores')).world;
    expect(resets(w)).toHaveLength(1);
  });

  it('a pod that landed on the card before the taint is moved before the reset, and the reset waits for it', async () => {
    let w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV, 'ignores');
    w = (await sweep(w, NV.fence.verifyMinutes, NV, 'ignores')).world;
    expect(ourTaint(w)).toBeDefined();
    const lander = pod('late-3', { gpus: [gpu(3).uuid] });
    const s = await sweep({ ...w, pods: [...w.pods, lander] }, NV.fence.verifyMinutes + 1, NV, 'ignores');
    expect(s.plan?.evictions.map((e) => e.name)).toEqual(['late-3']);
    expect(resets(s.world)).toEqual([]);
    expect(resets((await sweep(s.world, NV.fence.verifyMinutes + 2, NV, 'ignores')).world)).toHaveLength(1);
  });

  it('a fence verified in the sweep is reset in that sweep (no wait added where the fence holds)', async () => {
    let w = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), NV, 'ignores');
    w = { ...w, node: podResourcesSays({ ...w.node, allocatable: { 'nvidia.com/gpu': '7' } }, [3]) };
    const s = await sweep(w, 1, NV, 'ignores');
    expect(stateOf(s.world.node).incidents[0]?.fence?.verifiedAt).toBe(at(1));
    expect(resets(s.world)).toHaveLength(1);
    expect(stateOf(s.world.node).incidents[0]?.resetHeldAt).toBeUndefined();
  });
});

describe('resetGate (pure)', () => {
  const base = { gpu: gpu(3).uuid } as Incident;
  const n = { name: 'gpu-node-1', taints: [] };
  const tainted = { ...n, taints: [{ key: DEFAULT_POLICY.taintKey, value: 'xid-48', effect: 'NoSchedule' as const }] };
  const open = { ...base, phase: 'quarantined', scope: 'gpu', action: 'quarantine-gpu', outAt: at(0) } as Incident;

  it('unknown is never a fence: no fence state, no reset', () => {
    expect(resetGate(base, n, DEFAULT_POLICY)).toMatchObject({ ok: false, why: expect.stringContaining('unknown') });
  });

  it('a cordon-backend GPU waits for the node taint on the Node, not only asked for', () => {
    const i = { ...open, fence: { backend: 'cordon' } } as Incident;
    expect(resetGate(i, n, DEFAULT_POLICY).ok).toBe(false);
    expect(resetGate(i, tainted, DEFAULT_POLICY).ok).toBe(true);
  });

  it('a verified fence that drifted waits until it holds again', () => {
    const i = { ...open, fence: { backend: 'ack-file', verifiedAt: at(1), driftAt: at(2) } } as Incident;
    expect(resetGate(i, n, DEFAULT_POLICY)).toMatchObject({
      ok: false,
      why: expect.stringContaining('not held since'),
    });
    expect(resetGate({ ...i, fence: { backend: 'ack-file', verifiedAt: at(1) } }, n, DEFAULT_POLICY).ok).toBe(true);
  });

  it('awaitsTaint: a plan that asks for the taint a held reset waits for is followed at once (sweep-run.ts)', () => {
    const held = { ...open, fence: { backend: 'cordon' }, resetHeldAt: at(1) } as Incident;
    expect(awaitsTaint({ incidents: [held] }, n, DEFAULT_POLICY)).toBe(true);
    // already on the Node as read: the gate passed this very sweep, nothing to follow
    expect(awaitsTaint({ incidents: [held] }, tainted, DEFAULT_POLICY)).toBe(false);
    // no reset held (or one already asked for), or a per-GPU fence: the taint is not what it waits for
    expect(awaitsTaint({ incidents: [{ ...held, resetHeldAt: undefined }] }, n, DEFAULT_POLICY)).toBe(false);
    const asked = { ...held, repair: { action: 'reset' } } as unknown as Incident;
    expect(awaitsTaint({ incidents: [asked] }, n, DEFAULT_POLICY)).toBe(false);
    const perGpu = { ...held, fence: { backend: 'ack-file' } } as Incident;
    expect(awaitsTaint({ incidents: [perGpu] }, n, DEFAULT_POLICY)).toBe(false);
  });
});
