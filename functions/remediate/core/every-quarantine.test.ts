/**
 * Issue #27: every GPU quarantine fences, whatever raised it (an XID, a health condition, a person),
 * through the pool's backend or the node-taint fallback; RMA-class conditions climb to replace-node
 * (or awaiting-repair with a person told) and never promise a reset; the Remediation's words say
 * what the plan does. Plans go through the real applier over the fake ports (testing.ts).
 */
import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { planSweep } from './sweep.ts';
import { STATE_LABEL } from './state.ts';
import {
  apply,
  at,
  factsFor,
  gpu,
  health,
  node,
  pod,
  pool,
  stateOf,
  xid,
  type PluginModel,
  type World,
  requested,
} from '../testing.ts';
import type { Capabilities, Plan, TriggerEvent } from './types.ts';
import type { HealthCondition } from '../../../events/index.ts';

const PODS = [pod('train-0', { gpus: [gpu(0).uuid] }), pod('train-3', { gpus: [gpu(3).uuid] })];
const withBackend = (backend: Policy['fence']['backend']): Policy => ({
  ...DEFAULT_POLICY,
  pools: { a100: { fenceBackend: backend } },
});

async function hit(
  w: World,
  e: TriggerEvent,
  policy: Policy,
  plugin: PluginModel = 'honours',
  capabilities?: Capabilities,
): Promise<{ plan: Plan; world: World }> {
  const plan = planRemediation(
    factsFor(e, w.node, {
      pods: w.pods,
      now: new Date(e.detail.observedAt),
      ...(capabilities ? { capabilities } : {}),
    }),
    policy,
  );
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
const ourTaint = (w: World) => w.node.taints.find((t) => t.key === DEFAULT_POLICY.taintKey);
const start = (): World => ({ node: node(), pods: PODS });

const CONDITIONS: HealthCondition[] = [
  'row-remap-failure',
  'sram-threshold-exceeded',
  'temperature',
  'memory-temperature',
];

describe('every quarantine fences (issue #27)', () => {
  it.each(CONDITIONS)(
    '%s: the ACK file fence is asked for, the GPU leaves allocatable (8 → 7), its pod moves, the node stays schedulable',
    async (condition) => {
      const { plan, world } = await hit(start(), health(condition, { gpu: 3 }), DEFAULT_POLICY);
      expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'gpu' });
      expect(requested(world).map((r) => [r.action, r.gpuUuid])).toEqual([['fence', gpu(3).uuid]]);
      expect(world.node.allocatable?.['nvidia.com/gpu']).toBe('7');
      expect(plan.evictions.map((e) => e.name)).toEqual(['train-3']);
      expect(plan.reason).toContain("fenced through the ACK device plugin's unhealthy-devices file");
      expect(ourTaint(world)).toBeUndefined();
      expect(world.node.conditions?.GpuReflexGpuFenced).toMatchObject({
        status: 'True',
        message: expect.stringContaining(gpu(3).uuid),
      });
    },
  );

  it.each(CONDITIONS)(
    "%s under NVIDIA's device plugin (which fences no health condition): the node taint holds the GPU out at once",
    async (condition) => {
      const { plan, world } = await hit(
        start(),
        health(condition, { gpu: 3 }),
        withBackend('nvidia-plugin'),
        'ignores',
      );
      expect(ourTaint(world)).toMatchObject({ effect: 'NoSchedule' });
      expect(plan.reason).toContain(`NVIDIA's device plugin does not take the GPU out for ${condition} by itself`);
    },
  );

  it.each(CONDITIONS)('%s under the cordon backend: the node taint, said so', async (condition) => {
    const { plan, world } = await hit(start(), health(condition, { gpu: 3 }), withBackend('cordon'), 'ignores');
    expect(ourTaint(world)).toMatchObject({ effect: 'NoSchedule' });
    expect(plan.reason).toContain('fence backend cordon');
  });

  it('a condition fence that does not show in allocatable is escalated to the node taint, as any fence', async () => {
    const P = DEFAULT_POLICY;
    const w = (await hit(start(), health('temperature', { gpu: 3 }), P, 'ignores')).world;
    const s = await sweep(w, P.fence.verifyMinutes, P, 'ignores');
    expect(s.plan?.reason).toContain(`was not fenced within ${P.fence.verifyMinutes} min`);
    expect(ourTaint(s.world)).toMatchObject({ effect: 'NoSchedule' });
  });

  it('a temperature quarantine says it stays fenced until resolved, and promises no reset', async () => {
    const { plan } = await hit(start(), health('temperature', { gpu: 3 }), DEFAULT_POLICY);
    expect(plan.reason).toContain('it stays fenced until the node agent reports the condition resolved');
    expect(plan.reason).not.toContain('resets the GPU');
  });

  it('a pending row remap that escalated to a quarantine is cured by a reset (it applies the remap), not by quiet time', async () => {
    const P: Policy = {
      ...DEFAULT_POLICY,
      conditions: { ...DEFAULT_POLICY.conditions, 'row-remap-pending': { action: 'quarantine-gpu', then: [] } },
    };
    const w = (await hit(start(), health('row-remap-pending', { gpu: 3 }), P)).world;
    const s = await sweep(w, 1, P);
    expect(
      requested(s.world)
        .map((r) => r.action)
        .sort(),
    ).toEqual(['fence', 'reset']);
  });
});

describe('a MIG-instance quarantine (an instance-scoped XID a policy quarantines)', () => {
  it('promises no fence it does not have: nothing holds one instance out, and the words say so', async () => {
    const P: Policy = {
      ...DEFAULT_POLICY,
      xids: { ...DEFAULT_POLICY.xids, '13': { action: 'quarantine-gpu', then: [] } },
    };
    const { plan, world } = await hit(start(), xid(13, { gpu: 3, mig: { gpuInstanceId: 2 } }), P);
    expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'mig-instance' });
    expect(requested(world)).toEqual([]);
    expect(plan.reason).not.toContain('no new work lands on it');
    expect(plan.reason).toContain('no fence holds one MIG instance out');
    expect(plan.reason).toContain('next: the incident closes after the quiet period');
  });
});

describe('RMA class: row-remap failure, SRAM threshold exceeded', () => {
  it.each(['row-remap-failure', 'sram-threshold-exceeded'] as const)(
    '%s: fenced, never reset; once the fence is seen it climbs to replace-node, drained, and with no cloud a person is told at awaiting-repair; the GPU stays out throughout',
    async (condition) => {
      const P = DEFAULT_POLICY;
      const first = await hit(start(), health(condition, { gpu: 3 }), P);
      expect(first.plan.reason).toContain(
        'NVIDIA says this GPU must be replaced (RMA), so it stays fenced and no reset is tried',
      );
      expect(first.plan.reason).toContain('no cloud adapter can replace it');
      expect(first.plan.reason).not.toContain('resets the GPU');
      const climbed = await sweep(first.world, 1, P);
      expect(climbed.plan?.reason).toContain('is fenced');
      expect(climbed.plan?.reason).toContain(`must be replaced (${condition}: RMA class, no reset cures it)`);
      expect(climbed.plan?.reason).toContain('escalating to replace-node: draining node gpu-a100-07 first');
      expect(climbed.plan?.evictions.map((e) => e.name)).toEqual(['train-0']);
      expect(requested(climbed.world).map((r) => r.action)).toEqual(['fence']); // no reset, ever
      const waiting = await sweep(climbed.world, 2, P);
      expect(waiting.world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
      expect(waiting.plan?.notices[0]?.text).toContain('a person must replace it');
      expect(waiting.world.node.allocatable?.['nvidia.com/gpu']).toBe('7');
      expect(requested(waiting.world).map((r) => r.action)).toEqual(['fence']);
      // hours later: still out, still no reset
      const later = await sweep(waiting.world, 600, P);
      expect(requested(later.world).map((r) => r.action)).toEqual(['fence']);
      expect(later.world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    },
  );

  it('where the cloud can replace the node, the words say so', async () => {
    const { plan } = await hit(start(), health('row-remap-failure', { gpu: 3 }), DEFAULT_POLICY, 'honours', {
      reboot: true,
      replace: true,
    });
    expect(plan.reason).toContain('the node is drained and replaced through its node pool, capacity first');
  });

  it('a resolve does not bring an RMA-class GPU back', async () => {
    const P = DEFAULT_POLICY;
    const w = (await hit(start(), health('row-remap-failure', { gpu: 3 }), P)).world;
    const { plan } = await hit(w, health('row-remap-failure', { gpu: 3, minute: 1, state: 'resolved' }), P);
    expect(plan.reason).toContain('NVIDIA says this GPU must be replaced, so it stays out until it is repaired');
  });

  it('a policy that ends the ladder at the quarantine leaves the GPU fenced at awaiting-repair and tells a person', async () => {
    const P: Policy = {
      ...DEFAULT_POLICY,
      conditions: { ...DEFAULT_POLICY.conditions, 'row-remap-failure': { then: [] } },
    };
    const first = await hit(start(), health('row-remap-failure', { gpu: 3 }), P);
    expect(first.plan.reason).toContain('it waits at awaiting-repair: a person must replace it');
    const s = await sweep(first.world, 1, P);
    expect(s.plan?.notices[0]?.text).toContain('nothing further up its ladder: awaiting-repair, a person must repair');
    expect(s.world.node.allocatable?.['nvidia.com/gpu']).toBe('7');
    expect(s.plan?.evictions ?? []).toEqual([]);
  });
});
