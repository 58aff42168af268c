/**
 * Issue #32: shared GPUs (time-slicing, MPS). One tenant's fault never punishes its neighbours; a
 * fence of a shared card is verified across all of its replicas, renamed resources included.
 */
import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { apply, at, factsFor, gpu, node, pod, pool, podResourcesSays, stateOf, xid } from '../testing.ts';
import { sharingOf } from './sharing.ts';
import type { NodeFacts, PodFacts, TriggerEvent } from './types.ts';
import type { GpuXidErrorDetail } from '../../../events/index.ts';

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}
const NV: Policy = { ...DEFAULT_POLICY, pools: { a100: { fenceBackend: 'nvidia-plugin' } } };
/** XID 31 restarting its workload at once (a RESTART_APP-style rule), to see whom a restart moves. */
const RESTART: Policy = { ...DEFAULT_POLICY, xids: { '31': { action: 'restart-workload', then: ['quarantine-gpu'] } } };

/** An 8-GPU node whose plugin time-slices every GPU into `replicas` (renamed: `nvidia.com/gpu.shared`). */
function sharedNode(replicas = 4, renamed = false, strategy = 'time-slicing'): NodeFacts {
  const n = node();
  const key = renamed ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu';
  const count = { [key]: String(8 * replicas) };
  return {
    ...n,
    labels: { ...n.labels, 'nvidia.com/gpu.sharing-strategy': strategy, 'nvidia.com/gpu.replicas': String(replicas) },
    capacity: count,
    allocatable: { ...count },
  };
}
/** Three teams' pods on GPU 3, one on GPU 5. */
const TENANTS = [
  pod('chat-a', { namespace: 'team-a', gpus: [gpu(3).uuid] }),
  pod('chat-b', { namespace: 'team-b', gpus: [gpu(3).uuid] }),
  pod('chat-c', { namespace: 'team-c', gpus: [gpu(3).uuid] }),
  pod('other', { namespace: 'team-d', gpus: [gpu(5).uuid] }),
];
const onCard = TENANTS.slice(0, 3).map((p) => ({ uid: p.uid }));

function withDetail(e: TriggerEvent, extra: Partial<GpuXidErrorDetail>): TriggerEvent {
  return { ...e, detail: { ...e.detail, ...extra } } as TriggerEvent;
}
async function hit(w: World, e: TriggerEvent, policy: Policy = DEFAULT_POLICY) {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods, now: new Date(e.detail.observedAt) }), policy);
  return { plan, world: await apply(w.node, w.pods, plan, new Set(), 'ignores') };
}
const setAlloc = (w: World, key: string, n: number): World => ({
  ...w,
  node: { ...w.node, allocatable: { ...w.node.allocatable, [key]: String(n) } },
});
/** PodResources as the agent writes it: GPU 3's replicas out but `left` (events/gpu-devices.ts). */
const podSays = (w: World, left = 0): World => ({
  ...w,
  node: podResourcesSays(w.node, [3], { replicas: 4, left }),
});
async function sweep(w: World, minute: number, policy: Policy) {
  const plan = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
    policy,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), 'ignores') : w };
}

describe('the sharing mode, from the node labels and the agent', () => {
  it.each([
    [{}, undefined, 'exclusive', 1],
    [
      { 'nvidia.com/gpu.sharing-strategy': 'time-slicing', 'nvidia.com/gpu.replicas': '4' },
      undefined,
      'time-slicing',
      4,
    ],
    [{ 'nvidia.com/gpu.sharing-strategy': 'mps', 'nvidia.com/gpu.replicas': '2' }, undefined, 'mps', 2],
    [{}, 'mps', 'mps', 1],
    [{ 'nvidia.com/gpu.sharing-strategy': 'none' }, 'time-slicing', 'time-slicing', 1],
  ] as const)('labels %j, agent %s → %s × %d', (labels, seen, mode, replicas) => {
    expect(sharingOf({ labels: { ...labels } }, seen)).toMatchObject({ mode, replicas });
  });

  it('a renamed resource (nvidia.com/gpu.shared) is time-slicing whatever the labels say', () => {
    expect(sharingOf({ labels: {}, capacity: { 'nvidia.com/gpu.shared': '8' } })).toMatchObject({
      mode: 'time-slicing',
      resource: 'nvidia.com/gpu.shared',
    });
  });
});

describe("one tenant's application XIDs on a time-sliced card never punish its neighbours", () => {
  it('six unresolved XID 31s (NVML only, three tenants on the card) restart no tenant and never quarantine the GPU', async () => {
    let w: World = { node: sharedNode(), pods: TENANTS };
    for (let m = 0; m < 6; m++) {
      const { plan, world } = await hit(w, xid(31, { gpu: 3, minute: m * 5, pods: onCard }));
      expect(plan.evictions).toEqual([]);
      expect(plan.action).not.toBe('quarantine-gpu');
      w = world;
    }
    expect(w.pods.map((p) => p.name)).toEqual(['chat-a', 'chat-b', 'chat-c', 'other']);
    expect(stateOf(w.node).incidents[0]!.workloads).toEqual([`unknown@${gpu(3).uuid}`]);
  });

  it('the words say it counts as one unknown workload', async () => {
    const { plan } = await hit({ node: sharedNode(), pods: TENANTS }, xid(31, { gpu: 3, pods: onCard }));
    expect(plan.reason).toContain('counts as one unknown workload, not 3, and no tenant is restarted');
  });

  it('a rule that restarts at once: an unresolved pid on a time-sliced card restarts no tenant', async () => {
    const { plan } = await hit({ node: sharedNode(), pods: TENANTS }, xid(31, { gpu: 3, pods: onCard }), RESTART);
    expect(plan.action).toBe('restart-workload');
    expect(plan.evictions).toEqual([]);
  });

  it('a kernel line that names the process: only that pod is restarted', async () => {
    const e = withDetail(xid(31, { gpu: 3, pods: onCard }), { culprit: { uid: 'uid-chat-b' }, via: 'kmsg', pid: 4101 });
    const { plan } = await hit({ node: sharedNode(), pods: TENANTS }, e, RESTART);
    expect(plan.evictions.map((p) => p.name)).toEqual(['chat-b']);
  });

  it('an exclusive GPU keeps the old rule: every pod named counts', async () => {
    const { plan } = await hit({ node: node(), pods: TENANTS }, xid(31, { gpu: 3, pods: onCard }), RESTART);
    expect(plan.evictions.map((p) => p.name).sort()).toEqual(['chat-a', 'chat-b', 'chat-c']);
  });
});

describe('MPS: every client of the card, counted as one workload', () => {
  const mps = () => sharedNode(2, false, 'mps');
  it('an XID 31 restarts every MPS client of the card (and no pod of another card)', async () => {
    const e = withDetail(xid(31, { gpu: 3, pods: onCard }), { sharing: 'mps' });
    const { plan } = await hit({ node: mps(), pods: TENANTS }, e, RESTART);
    expect(plan.evictions.map((p) => p.name).sort()).toEqual(['chat-a', 'chat-b', 'chat-c']);
    expect(plan.reason).toContain('shared through MPS');
  });

  it('repeats never escalate on MPS clients alone (one workload)', async () => {
    let w: World = { node: mps(), pods: TENANTS };
    for (let m = 0; m < 6; m++) {
      const { plan, world } = await hit(
        w,
        withDetail(xid(31, { gpu: 3, minute: m * 5, pods: onCard }), { sharing: 'mps' }),
      );
      expect(plan.action).not.toBe('quarantine-gpu');
      w = { ...world, pods: TENANTS };
    }
  });
});

describe('a fence of a shared card is verified across all of its replicas', () => {
  it('NVIDIA plugin, replicas=4: one replica out is not a fence; after verifyMinutes the node is tainted and the words say why', async () => {
    const { world } = await hit({ node: sharedNode(), pods: TENANTS }, xid(48, { gpu: 3, pods: onCard }), NV);
    const one = podSays(setAlloc(world, 'nvidia.com/gpu', 31), 3);
    expect((await sweep(one, 1, NV)).world.node.taints.find((t) => t.key === NV.taintKey)).toBeUndefined();
    const late = await sweep(one, NV.fence.verifyMinutes, NV);
    expect(late.plan?.notices[0]?.text).toContain('took only 1 of the 4 replica(s) out');
    expect(late.plan?.notices[0]?.text).toContain('k8s-device-plugin#1929');
    expect(late.world.node.taints.find((t) => t.key === NV.taintKey)).toBeDefined();
  });

  it('NVIDIA plugin, replicas=4: all four out verifies the fence', async () => {
    const { world } = await hit({ node: sharedNode(), pods: TENANTS }, xid(48, { gpu: 3, pods: onCard }), NV);
    const s = await sweep(podSays(setAlloc(world, 'nvidia.com/gpu', 28)), 1, NV);
    expect(stateOf(s.world.node).incidents[0]!.fence?.verifiedAt).toBe(at(1));
  });

  it('renamed nvidia.com/gpu.shared is counted: four replicas out verifies, and nothing says "no GPU capacity"', async () => {
    const { world } = await hit({ node: sharedNode(4, true), pods: TENANTS }, xid(48, { gpu: 3, pods: onCard }), NV);
    const s = await sweep(podSays(setAlloc(world, 'nvidia.com/gpu.shared', 28)), 1, NV);
    expect(stateOf(s.world.node).incidents[0]!.fence?.verifiedAt).toBe(at(1));
  });
});

describe('tenant-aware blast radius', () => {
  it('a hardware XID on a shared card moves only its tenants, and the approval says how many teams', async () => {
    const limited: Policy = { ...NV, blastRadius: { ...NV.blastRadius, maxTenants: 2 } };
    const { plan } = await hit({ node: sharedNode(), pods: TENANTS }, xid(48, { gpu: 3, pods: onCard }), limited);
    expect(plan.kind).toBe('approval');
    expect(plan.approval?.summary).toContain('moves pods of 3 teams (team-a, team-b, team-c)');
  });

  it('held back by the node count: the approval still says how many teams the fence moves', async () => {
    const full = {
      ...pool(),
      quarantinedInWindow: 10,
      quarantinedNodes: Array.from({ length: 10 }, (_, i) => `n${i}`),
    };
    const e = xid(48, { gpu: 3, pods: onCard });
    const facts = factsFor(e, sharedNode(), { pods: TENANTS, pool: full, now: new Date(e.detail.observedAt) });
    const plan = planRemediation(facts, NV);
    expect(plan.kind).toBe('approval');
    expect(plan.approval?.summary).toContain('moves pods of 3 teams (team-a, team-b, team-c)');
  });

  it('within the limit: the card’s tenants move, each told why by an Event on its pod', async () => {
    const { plan } = await hit({ node: sharedNode(), pods: TENANTS }, xid(48, { gpu: 3, pods: onCard }), NV);
    expect(plan.kind).toBe('act');
    expect(plan.evictions.map((p) => p.name).sort()).toEqual(['chat-a', 'chat-b', 'chat-c']);
    expect(plan.podEvents?.map((e) => e.pod.name).sort()).toEqual(['chat-a', 'chat-b', 'chat-c']);
    expect(plan.podEvents?.[0]?.note.note).toContain('shares with pods of 2 other team(s)');
    expect(plan.reason).toContain('3 pod(s) of 3 teams (team-a, team-b, team-c)');
  });
});
