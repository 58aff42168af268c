/**
 * Fence backends (issue #11): how a quarantined GPU is really kept out of scheduling, verified in
 * the node's allocatable, escalated to a node taint when it is not, and lifted after the repair —
 * for NVIDIA's device plugin by restarting its pod once the reset is verified. Plans go through the
 * real applier over the fake ports (testing.ts); the device plugin is modelled by `apply`'s plugin
 * argument or by setting the node's allocatable as that plugin would.
 */
import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { loadPolicy, PolicyFileError } from './policy-file.ts';
import { planSweep } from './sweep.ts';
import { renderSteps } from './detail.ts';
import { deviceTaintName } from './fence-dra.ts';
import { FENCED_CONDITION } from './reconcile.ts';
import { STATE_LABEL } from './state.ts';
import {
  apply,
  at,
  factsFor,
  gpu,
  health,
  node,
  pod,
  podResourcesSays,
  pool,
  stateOf,
  withDra,
  xid,
  type PluginModel,
  type World,
  requested,
  answer,
  PASSED_PROBE,
} from '../testing.ts';
import type { NodeFacts, Plan, TriggerEvent } from './types.ts';

const withBackend = (backend: Policy['fence']['backend']): Policy => ({
  ...DEFAULT_POLICY,
  pools: { a100: { fenceBackend: backend } },
});

const PLUGIN = pod('nvidia-device-plugin-ds-x7k2p', {
  namespace: 'kube-system',
  daemonSet: true,
  requestsGpu: false,
  labels: { name: 'nvidia-device-plugin-ds' },
});
const PODS = [pod('train-0', { gpus: [gpu(0).uuid] }), pod('train-3', { gpus: [gpu(3).uuid] }), PLUGIN];

async function hit(
  w: World,
  e: TriggerEvent,
  policy: Policy,
  plugin: PluginModel = 'honours',
): Promise<{ plan: Plan; world: World }> {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods, now: new Date(e.detail.observedAt) }), policy);
  return { plan, world: await apply(w.node, w.pods, plan, new Set(), plugin) };
}

async function sweep(
  w: World,
  minute: number,
  policy: Policy,
  plugin: PluginModel = 'honours',
): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    policy,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), plugin) : w };
}

/** The plugin's latch as the node shows it: the count, and PodResources naming the GPUs out (3, then 0). */
const allocatable = (w: World, n: number): World => ({
  ...w,
  node: podResourcesSays({ ...w.node, allocatable: { 'nvidia.com/gpu': String(n) } }, [3, 0].slice(0, 8 - n)),
});
const ourTaint = (w: World) => w.node.taints.find((t) => t.key === DEFAULT_POLICY.taintKey);
const fenceOf = (w: World) => stateOf(w.node).incidents[0]!.fence;

/** Reset then probe answered done/passed by the node agent; returns the world after the restore. */
async function repair(
  w0: World,
  from: number,
  policy: Policy,
  plugin: PluginModel,
): Promise<{ plan: Plan | undefined; world: World }> {
  let w = (await sweep(w0, from, policy, plugin)).world;
  const reset = requested(w).find((r) => r.action === 'reset')!;
  expect(reset).toBeDefined();
  w = (
    await sweep(
      answer(w, reset.id, { state: 'done', action: 'reset', gpuUuid: reset.gpuUuid, at: at(from + 1) }),
      from + 2,
      policy,
      plugin,
    )
  ).world;
  const probe = requested(w).find((r) => r.action === 'probe')!;
  return sweep(
    answer(w, probe.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: probe.gpuUuid,
      at: at(from + 3),
      probe: PASSED_PROBE,
    }),
    from + 4,
    policy,
    plugin,
  );
}

describe('fence backends: the ACK device plugin file (the default)', () => {
  it('is verified in the node allocatable and never taints the node', async () => {
    const P = DEFAULT_POLICY;
    const { plan, world } = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P);
    expect(plan.reason).toContain("ACK device plugin's unhealthy-devices file");
    expect(requested(world).map((r) => r.action)).toEqual(['fence']);
    expect(world.node.allocatable?.['nvidia.com/gpu']).toBe('7');
    const s = await sweep(world, 1, P);
    expect(s.plan?.reason).toContain('is fenced');
    expect(fenceOf(s.world)).toMatchObject({ backend: 'ack-file', verifiedAt: at(1) });
    expect(fenceOf(s.world)?.fallback).toBeUndefined();
    // long past the verify window: still no taint, the node stays schedulable for its other GPUs
    const later = await sweep(s.world, 5, P);
    expect(ourTaint(later.world)).toBeUndefined();
    expect(later.world.node.unschedulable).toBe(false);
  });

  it('not seen in the allocatable within fence.verifyMinutes: the node is tainted instead, said so, and untainted on the verified restore', async () => {
    const P = DEFAULT_POLICY;
    let w = (await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world;
    expect(w.node.allocatable?.['nvidia.com/gpu']).toBe('8'); // no actuator: nothing left the allocatable
    // within the window: wait, quietly
    const early = await sweep(w, P.fence.verifyMinutes - 1, P, 'ignores');
    expect(ourTaint(early.world)).toBeUndefined();
    w = early.world;
    const s = await sweep(w, P.fence.verifyMinutes, P, 'ignores');
    expect(s.plan?.kind).toBe('act');
    expect(kinds(s.plan)).toContain('taint');
    expect(s.plan?.reason).toContain(`was not fenced within ${P.fence.verifyMinutes} min`);
    expect(s.plan?.notices[0]?.text).toContain('0 GPU device(s) missing from its allocatable, 1 expected');
    expect(ourTaint(s.world)).toMatchObject({ effect: 'NoSchedule' });
    expect(s.world.node.labels[STATE_LABEL]).toBe('quarantined');
    expect(fenceOf(s.world)).toMatchObject({ fallback: 'not-verified', fallbackAt: at(P.fence.verifyMinutes) });
    expect(s.world.node.conditions?.[FENCED_CONDITION]).toMatchObject({
      status: 'True',
      message: expect.stringContaining('a NoSchedule taint on the node'),
    });
    // the repair still runs (the reset is the cure); the restore lifts the taint
    const back = await repair(s.world, P.fence.verifyMinutes + 1, P, 'ignores');
    expect(back.plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(ourTaint(back.world)).toBeUndefined();
    expect(back.world.node.labels[STATE_LABEL]).toBe('healthy');
  });

  it('a node that reports no GPU capacity cannot show a fence: tainted once the window passes', async () => {
    const P = DEFAULT_POLICY;
    const bare: NodeFacts = { ...node(), capacity: { cpu: '64' }, allocatable: { cpu: '64' } };
    const w = (await hit({ node: bare, pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world;
    const s = await sweep(w, P.fence.verifyMinutes, P, 'ignores');
    expect(s.plan?.reason).toContain('the node reports no nvidia.com GPU capacity');
    expect(ourTaint(s.world)).toBeDefined();
  });
});

describe('fence backends: cordon', () => {
  it('taints the node NoSchedule with the quarantine, asks the agent for no fence, and lifts the taint on the verified restore', async () => {
    const P = withBackend('cordon');
    const { plan, world } = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores');
    expect(plan.reason).toContain('fence backend cordon');
    expect(kinds(plan)).toContain('taint');
    expect(ourTaint(world)).toMatchObject({ value: 'xid-48', effect: 'NoSchedule' });
    expect(world.node.unschedulable).toBe(false); // tainted, not cordoned: running pods of other GPUs stay
    expect(requested(world).map((r) => r.action)).toEqual([]);
    const back = await repair(world, 1, P, 'ignores');
    expect(back.plan).toMatchObject({ action: 'restore' });
    expect(ourTaint(back.world)).toBeUndefined();
    expect(requested(back.world)).toEqual([]); // no unfence either: nothing was in a file
  });
});

describe('fence backends: DRA device taints', () => {
  const P = withBackend('dra');
  const RULE = deviceTaintName('gpu-a100-07', gpu(3).uuid);

  it("a DeviceTaintRule on the GPU's device, verified when listed, no node taint, no agent fence; deleted after the verified repair, then unfenced", async () => {
    const { plan, world } = await hit({ node: withDra(node()), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores');
    expect(plan.deviceTaints?.add).toEqual([
      {
        name: RULE,
        node: 'gpu-a100-07',
        gpuUuid: gpu(3).uuid,
        driver: 'gpu.nvidia.com',
        pool: 'gpu-a100-07',
        device: 'gpu-3',
        taint: { key: P.taintKey, value: 'xid-48', effect: 'NoSchedule' },
      },
    ]);
    expect(renderSteps(plan).find((x) => x.kind === 'fence')?.message).toBe(
      `DeviceTaintRule ${RULE}: ${P.taintKey}=xid-48:NoSchedule on DRA device gpu.nvidia.com/gpu-a100-07/gpu-3`,
    );
    expect(plan.reason).toContain('DRA DeviceTaintRule');
    expect(world.node.dra?.rules).toEqual([RULE]);
    expect(ourTaint(world)).toBeUndefined();
    expect(world.node.unschedulable).toBe(false);
    expect(requested(world).map((r) => r.action)).toEqual([]); // no node access needed to fence
    // the same event again: the rule is there, nothing more to create
    const again = planRemediation(factsFor(xid(48, { gpu: 3 }), world.node, { pods: world.pods }), P);
    expect(again.deviceTaints).toBeUndefined();
    const s = await sweep(world, 1, P, 'ignores');
    expect(fenceOf(s.world)).toMatchObject({ backend: 'dra', verifiedAt: at(1) });
    expect(s.plan?.reason).toContain(
      `DeviceTaintRule ${RULE} (NoSchedule) holds out DRA device gpu.nvidia.com/gpu-a100-07/gpu-3`,
    );
    expect(s.world.node.conditions?.[FENCED_CONDITION]).toMatchObject({
      status: 'True',
      message: expect.stringContaining('a DRA DeviceTaintRule on its device'),
    });
    // the repair still goes through the agent (reset, probe); the restore deletes the rule
    const back = await repair(s.world, 2, P, 'ignores');
    expect(back.plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(back.plan?.deviceTaints).toEqual({ add: [], remove: [{ name: RULE, gpuUuid: gpu(3).uuid }] });
    expect(kinds(back.plan)).toContain('unfence');
    expect(back.world.node.dra?.rules).toEqual([]);
    const done = await sweep(back.world, 7, P, 'ignores');
    expect(stateOf(done.world.node).incidents[0]?.unfencedAt).toBe(at(7));
    expect((await sweep(done.world, 8, P, 'ignores')).plan).toBeUndefined();
  });

  it('a rule deleted by someone while the GPU is still out is created again by the sweep', async () => {
    const w = (await hit({ node: withDra(node()), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world;
    const gone = { ...w, node: { ...w.node, dra: { ...w.node.dra!, rules: [] } } };
    const s = await sweep(gone, 1, P, 'ignores');
    expect(s.plan?.deviceTaints?.add.map((t) => t.name)).toEqual([RULE]);
    expect(s.world.node.dra?.rules).toEqual([RULE]);
  });

  it('a GPU no ResourceSlice lists: the node is tainted at once and the reason says why', async () => {
    const n = withDra(node());
    const missing: NodeFacts = {
      ...n,
      dra: {
        devices: Object.fromEntries(Object.entries(n.dra!.devices).filter(([u]) => u !== gpu(3).uuid)),
        rules: [],
      },
    };
    const w = (await hit({ node: missing, pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world;
    expect(w.node.dra?.rules).toEqual([]);
    const s = await sweep(w, 0, P, 'ignores');
    expect(fenceOf(s.world)).toMatchObject({ fallback: 'no-dra-device' });
    expect(s.plan?.notices[0]?.text).toContain(
      `no ResourceSlice of gpu-a100-07 lists ${gpu(3).uuid} under the DRA driver gpu.nvidia.com`,
    );
    expect(ourTaint(s.world)).toMatchObject({ effect: 'NoSchedule' });
  });

  it('DRA API not served by the cluster (404, e.g. 1.32 with DRA off): the first sweep taints the node, no wait', async () => {
    const w = (await hit({ node: { ...node(), draUnserved: true }, pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores'))
      .world;
    const s = await sweep(w, 1, P, 'ignores');
    expect(fenceOf(s.world)).toMatchObject({ fallback: 'not-verified' });
    expect(s.plan?.reason).toContain('serves no DRA API');
    expect(ourTaint(s.world)).toBeDefined();
  });

  it('DRA not readable here (no port, or not allowed to read): waits fence.verifyMinutes, then taints the node and says so', async () => {
    const w = (await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world;
    const early = await sweep(w, P.fence.verifyMinutes - 1, P, 'ignores');
    expect(ourTaint(early.world)).toBeUndefined();
    expect(fenceOf(early.world)?.fallback).toBeUndefined();
    const s = await sweep(w, P.fence.verifyMinutes, P, 'ignores');
    expect(fenceOf(s.world)).toMatchObject({ fallback: 'not-verified' });
    expect(s.plan?.reason).toContain('DRA was not read for this node');
    expect(ourTaint(s.world)).toBeDefined();
  });
});

describe("fence backends: NVIDIA's device plugin (its latch)", () => {
  const P = withBackend('nvidia-plugin');

  it('a critical XID is fenced by the plugin itself: verified, then after the verified reset its pod is restarted, and the GPU is unfenced once counted again', async () => {
    const { plan, world } = await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores');
    expect(plan.reason).toContain("NVIDIA's device plugin takes");
    expect(requested(world).map((r) => r.action)).toEqual([]); // no file to write
    expect(ourTaint(world)).toBeUndefined();
    // the plugin latched GPU 3
    let w = allocatable(world, 7);
    const v = await sweep(w, 1, P, 'ignores');
    expect(fenceOf(v.world)).toMatchObject({ backend: 'nvidia-plugin', verifiedAt: at(1) });
    const back = await repair(v.world, 2, P, 'ignores');
    expect(back.plan).toMatchObject({ action: 'restore', phase: 'restored' });
    // the restore restarts the plugin on this node (an eviction: its DaemonSet recreates it)
    expect(back.plan?.evictions).toEqual([{ namespace: 'kube-system', name: PLUGIN.name, uid: PLUGIN.uid }]);
    expect(back.plan?.reason).toContain(`restarting kube-system/${PLUGIN.name}`);
    expect(fenceOf(back.world)).toMatchObject({ restartedAt: at(6) });
    // a new plugin pod: the GPU counts again → unfenced, bookkeeping only
    w = allocatable(
      {
        ...back.world,
        pods: [
          ...back.world.pods.filter((p) => p.uid !== PLUGIN.uid),
          { ...PLUGIN, name: 'nvidia-device-plugin-ds-9qzrf', uid: 'uid-new' },
        ],
      },
      8,
    );
    const lifted = await sweep(w, 7, P, 'ignores');
    expect(lifted.plan?.kind).toBe('noop');
    expect(stateOf(lifted.world.node).incidents[0]).toMatchObject({ unfencedAt: at(7) });
    expect((await sweep(lifted.world, 30, P, 'ignores')).plan).toBeUndefined();
  });

  it('a plugin that did not come back counting the GPU is restarted again after fence.verifyMinutes', async () => {
    let w = allocatable((await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world, 7);
    w = (await repair(w, 1, P, 'ignores')).world;
    expect(fenceOf(w)?.restartedAt).toBe(at(5));
    // its DaemonSet recreated it, but the GPU is still not counted
    const fresh = { ...PLUGIN, name: 'nvidia-device-plugin-ds-9qzrf', uid: 'uid-new' };
    w = { ...w, pods: [...w.pods, fresh] };
    expect((await sweep(w, 5 + P.fence.verifyMinutes - 1, P, 'ignores')).plan?.evictions ?? []).toEqual([]);
    const again = await sweep(w, 5 + P.fence.verifyMinutes, P, 'ignores');
    expect(again.plan?.evictions.map((e) => e.name)).toEqual([fresh.name]);
    expect(again.plan?.reason).toContain('again');
  });

  it('never restarts the plugin while another GPU of the node is still held out (the restart would return it too)', async () => {
    let w = allocatable((await hit({ node: node(), pods: PODS }, xid(48, { gpu: 3 }), P, 'ignores')).world, 7);
    w = allocatable((await hit(w, xid(48, { gpu: 0, minute: 1 }), P, 'ignores')).world, 6);
    const inc3 = stateOf(w.node).incidents.find((i) => i.gpu === gpu(3).uuid)!;
    // GPU 3 is repaired; GPU 0 still waits for its own reset
    w = (await sweep(w, 2, P, 'ignores')).world;
    const reset3 = requested(w).find((r) => r.action === 'reset' && r.gpuUuid === inc3.gpu)!;
    w = (
      await sweep(
        answer(w, reset3.id, { state: 'done', action: 'reset', gpuUuid: inc3.gpu!, at: at(3) }),
        4,
        P,
        'ignores',
      )
    ).world;
    const probe3 = requested(w).find((r) => r.action === 'probe' && r.gpuUuid === inc3.gpu)!;
    const s = await sweep(
      answer(w, probe3.id, { state: 'done', action: 'probe', gpuUuid: inc3.gpu!, at: at(5), probe: PASSED_PROBE }),
      6,
      P,
      'ignores',
    );
    expect(stateOf(s.world.node).incidents.find((i) => i.key === inc3.key)).toMatchObject({ phase: 'closed' });
    expect(s.plan?.evictions ?? []).toEqual([]);
    expect(stateOf(s.world.node).incidents.find((i) => i.key === inc3.key)?.fence?.restartedAt).toBeUndefined();
  });

  it('a fault the plugin does not fence (a health condition) taints the node at once, and the Remediation says why', async () => {
    const { plan, world } = await hit(
      { node: node(), pods: PODS },
      health('ecc-uncorrected', { gpu: 3 }),
      P,
      'ignores',
    );
    expect(plan.reason).toContain("NVIDIA's device plugin does not take the GPU out for ecc-uncorrected");
    expect(ourTaint(world)).toMatchObject({ effect: 'NoSchedule' });
    expect(fenceOf(world)).toMatchObject({ backend: 'nvidia-plugin', fallback: 'not-fenced-by-plugin' });
    // restored on evidence, the taint goes, and no plugin restart (it never latched this GPU)
    const back = await repair(world, 1, P, 'ignores');
    expect(back.plan).toMatchObject({ action: 'restore' });
    expect(ourTaint(back.world)).toBeUndefined();
    expect(back.plan?.evictions ?? []).toEqual([]);
  });

  it('XID 13 escalated to a GPU quarantine is on the plugin skip list: a node taint, not the latch', async () => {
    const esc: Policy = { ...P, xids: { ...P.xids, '13': { action: 'quarantine-gpu', then: [] } } };
    const { world } = await hit({ node: node(), pods: PODS }, xid(13, { gpu: 3 }), esc, 'ignores');
    expect(fenceOf(world)?.fallback).toBe('not-fenced-by-plugin');
    expect(ourTaint(world)).toBeDefined();
  });
});

describe('DRAIN_AND_RESET: new work fenced at once, running work left to finish, then the reset', () => {
  const P = DEFAULT_POLICY;
  const drainAndReset = (minute = 0) =>
    health('recovery-action', { gpu: 3, minute, recoveryAction: 'drain-and-reset' });
  const evicted = (plan: Plan | undefined) => (plan?.evictions ?? []).map((e) => e.name);

  it('fences the GPU, evicts nothing, keeps the node schedulable, and resets once its pod has finished', async () => {
    const { plan, world } = await hit({ node: node(), pods: PODS }, drainAndReset(), P);
    expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'gpu' });
    expect(evicted(plan)).toEqual([]);
    expect(plan.reason).toContain(`its 1 running pod is left to finish until ${at(480)}`);
    expect(requested(world).map((r) => r.action)).toEqual(['fence']);
    expect(world.node.allocatable?.['nvidia.com/gpu']).toBe('7');
    expect(world.node.unschedulable).toBe(false);
    expect(ourTaint(world)).toBeUndefined();
    expect(world.pods.map((p) => p.name)).toContain('train-3');
    // An hour on, train-3 still runs: nothing is evicted and no reset is asked for.
    let s = await sweep(world, 60, P);
    expect(evicted(s.plan)).toEqual([]);
    expect(requested(s.world).map((r) => r.action)).toEqual(['fence']);
    // train-3 finishes (Succeeded pods are not among the node's pods): the reset is asked for.
    s = await sweep({ ...s.world, pods: s.world.pods.filter((p) => p.name !== 'train-3') }, 61, P);
    expect(s.plan?.reason).toContain(`the running work on ${gpu(3).uuid} has finished`);
    expect(
      requested(s.world)
        .map((r) => r.action)
        .sort(),
    ).toEqual(['fence', 'reset']);
    expect(stateOf(s.world.node).incidents[0]?.evictAt).toBeUndefined();
    const back = await repair(s.world, 62, P, 'honours');
    expect(back.plan).toMatchObject({ action: 'restore' });
    expect(back.world.node.allocatable?.['nvidia.com/gpu']).toBe('8');
  });

  it('evicts what still runs at the deadline, then resets', async () => {
    const P1: Policy = {
      ...P,
      recoveryActions: { ...P.recoveryActions, 'drain-and-reset': { letWorkFinish: { deadlineMinutes: 60 } } },
    };
    let { world } = await hit({ node: node(), pods: PODS }, drainAndReset(), P1);
    let s = await sweep(world, 59, P1);
    expect(evicted(s.plan)).toEqual([]);
    s = await sweep(s.world, 60, P1);
    expect(evicted(s.plan)).toEqual(['train-3']);
    expect(s.plan?.reason).toContain(
      `1 pod(s) still on ${gpu(3).uuid} at the ${at(60)} deadline for running work to finish (ml/train-3): evicting them`,
    );
    world = s.world;
    expect(world.pods.map((p) => p.name)).not.toContain('train-3');
    s = await sweep(world, 61, P1);
    expect(
      requested(s.world)
        .map((r) => r.action)
        .sort(),
    ).toEqual(['fence', 'reset']);
  });

  it('letWorkFinish: false in the policy evicts at once, as every other GPU quarantine does', async () => {
    const P0 = loadPolicy('recoveryActions:\n  drain-and-reset: { letWorkFinish: false }\n', 'policy.yaml');
    const { plan } = await hit({ node: node(), pods: PODS }, drainAndReset(), P0);
    expect(evicted(plan)).toEqual(['train-3']);
    expect(() =>
      loadPolicy('recoveryActions:\n  drain-and-reset: { letWorkFinish: { deadlineMinutes: 0 } }\n', 'p.yaml'),
    ).toThrow(/recoveryActions.drain-and-reset.letWorkFinish/);
  });

  it('the recovery action clearing (after the reset) does not promise a return on quiet time', async () => {
    const { world } = await hit({ node: node(), pods: PODS }, drainAndReset(), P);
    const { plan } = await hit(world, health('recovery-action', { gpu: 3, minute: 5, state: 'resolved' }), P);
    expect(plan.reason).toContain(
      'resolved; it returns to service only after its reset and a passed health probe, never on quiet time',
    );
  });

  it('a GPU reset (not drain-and-reset) still evicts its pods at once', async () => {
    const { plan } = await hit(
      { node: node(), pods: PODS },
      health('recovery-action', { gpu: 3, recoveryAction: 'gpu-reset' }),
      P,
    );
    expect(evicted(plan)).toEqual(['train-3']);
  });
});

describe('DRAIN_P2P: quiesce peer-to-peer traffic, then read the recovery action again', () => {
  const P = DEFAULT_POLICY;
  const drainP2p = (minute = 0) => health('recovery-action', { gpu: 3, minute, recoveryAction: 'drain-p2p' });
  const everAsked = new Set<string>();
  const track = (w: World) => {
    for (const r of requested(w)) everAsked.add(r.action);
    return w;
  };

  it('fences the GPU and moves its pods, asks for no reset, and returns it when the driver answers none', async () => {
    everAsked.clear();
    const { plan, world } = await hit({ node: node(), pods: PODS }, drainP2p(), P);
    expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'gpu' });
    expect(plan.evictions.map((e) => e.name)).toEqual(['train-3']);
    expect(requested(track(world)).map((r) => r.action)).toEqual(['fence']);
    let s = await sweep(world, 10, P);
    expect(requested(track(s.world)).map((r) => r.action)).toEqual(['fence']); // pods gone: still no reset
    // The driver, asked again, answers none: the agent resolves the condition.
    const resolved = await hit(s.world, health('recovery-action', { gpu: 3, minute: 11, state: 'resolved' }), P);
    expect(resolved.plan.reason).toContain(
      `the sweep returns it to service after ${P.quietPeriodMinutes} quiet minutes`,
    );
    s = await sweep(resolved.world, 11 + P.quietPeriodMinutes + 1, P);
    track(s.world);
    expect(stateOf(s.world.node).incidents[0]).toMatchObject({ phase: 'closed' });
    s = await sweep(s.world, 11 + P.quietPeriodMinutes + 2, P);
    track(s.world);
    expect(everAsked).toContain('unfence');
    expect(everAsked).not.toContain('reset');
  });

  it('when the driver then asks for a GPU reset, the same incident resets the GPU', async () => {
    const { world } = await hit({ node: node(), pods: PODS }, drainP2p(), P);
    const again = await hit(world, health('recovery-action', { gpu: 3, minute: 3, recoveryAction: 'gpu-reset' }), P);
    expect(stateOf(again.world.node).incidents).toHaveLength(1);
    const s = await sweep(again.world, 4, P);
    expect(
      requested(s.world)
        .map((r) => r.action)
        .sort(),
    ).toEqual(['fence', 'reset']);
  });
});

describe('fence backends: policy', () => {
  it('reads fence settings and per-pool backends from the file, and names what is wrong', () => {
    const p = loadPolicy(
      'fence:\n  backend: nvidia-plugin\n  verifyMinutes: 5\npools:\n  h100:\n    fenceBackend: cordon\n',
      'policy.yaml',
    );
    expect(p.fence).toMatchObject({
      backend: 'nvidia-plugin',
      verifyMinutes: 5,
      nvidiaPlugin: DEFAULT_POLICY.fence.nvidiaPlugin,
    });
    expect(p.pools.h100?.fenceBackend).toBe('cordon');
    expect(() => loadPolicy('fence:\n  backend: magic\n', 'policy.yaml')).toThrow(PolicyFileError);
    expect(() => loadPolicy('fence:\n  backend: magic\n', 'policy.yaml')).toThrow(
      /policy.yaml:2: fence.backend: expected one of "ack-file"\|"nvidia-plugin"\|"dra"\|"cordon"/,
    );
    const d = loadPolicy('fence:\n  dra: { deviceTaintRuleVersion: v1alpha3 }\n', 'policy.yaml');
    expect(d.fence.dra).toEqual({
      driver: 'gpu.nvidia.com',
      deviceTaintRuleVersion: 'v1alpha3',
      resourceSliceVersion: 'v1',
    });
    expect(() => loadPolicy('fence:\n  dra: { deviceTaintRuleVersion: v2 }\n', 'p.yaml')).toThrow(
      /fence.dra.deviceTaintRuleVersion/,
    );
    expect(() =>
      loadPolicy('fence:\n  nvidiaPlugin:\n    namespace: Kube_System\n    selector: {}\n', 'p.yaml'),
    ).toThrow(/fence.nvidiaPlugin.namespace: expected a namespace name/);
  });
});

const kinds = (plan: Plan | undefined) => (plan ? renderSteps(plan) : []).map((s) => s.kind);
