import { describe, expect, it } from 'vitest';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_ACTIONS_ANNOTATION,
  type GpuActionRequest,
  type GpuActionState,
} from '../../../events/index.ts';
import type { CloudOps } from '../../lib/apply.ts';
import type { CloudAction } from '../../lib/plan.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { planSweep } from './sweep.ts';
import { needsReplaceFacts } from './replace.ts';
import { REPAIRED_AT_ANNOTATION, type Incident } from './state.ts';
import { renderSteps } from './detail.ts';
import { apply, at, factsFor, node, pool, STANDARD_PODS, stateOf, xid, PASSED_PROBE } from '../testing.ts';
import type { NodeFacts, Plan, PodFacts, ReplaceFacts, TriggerEvent } from './types.ts';

/**
 * replace-node, capacity first, through the real applier over a fake node pool (a CloudOps that
 * keeps the pool's desired size and nodes, as ACK would): the sweep grows the pool by one, waits
 * for a new node to be Ready, and only then removes the broken node's instance.
 */
const P = DEFAULT_POLICY;
const CAN = { capabilities: { reboot: true, replace: true } };

class FakePool implements CloudOps {
  desired = 3;
  max = 10;
  members: ReplaceFacts['members'] = [0, 1, 2].map((i) => ({
    name: `gpu-a100-0${i}`,
    createdAt: at(-600),
    ready: true,
    held: false,
  }));
  calls: CloudAction[] = [];
  removed: string[] = [];
  removal?: ReplaceFacts['removal'];
  refused?: string;
  async run(a: CloudAction) {
    this.calls.push(a);
    if (a.kind !== 'replace') return false;
    if (a.step === 'grow') {
      if (this.desired >= a.to || this.desired !== a.from) return false;
      this.desired = a.to;
      return { done: true, taskId: 'T-grow' };
    }
    this.removed.push(a.instanceId);
    this.desired -= 1; // RemoveNodePoolNodes lowers the desired size itself
    this.removal = { state: 'running' };
    return { done: true, taskId: 'T-remove' };
  }
  facts(): ReplaceFacts {
    return {
      ...(this.refused ? { refused: this.refused } : {}),
      pool: { id: 'np-a100', name: 'a100', desired: this.desired, max: this.max },
      instanceId: 'i-broken',
      members: this.members,
      ...(this.removal ? { removal: this.removal } : {}),
    };
  }
  join(name: string, minute: number, ready = true) {
    this.members = [
      ...this.members.filter((m) => m.name !== name),
      { name, createdAt: at(minute), ready, held: false },
    ];
  }
}

interface World {
  node: NodeFacts;
  pods: PodFacts[];
}

async function hit(w: World, e: TriggerEvent): Promise<World> {
  return apply(w.node, w.pods, planRemediation(factsFor(e, w.node, { pods: w.pods, ...CAN }), P));
}

async function sweep(w: World, minute: number, cloud: FakePool): Promise<{ plan: Plan | undefined; world: World }> {
  const plan = planSweep(
    {
      now: new Date(at(minute)),
      ...CAN,
      nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods, replace: cloud.facts() }],
    },
    P,
  ).plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), 'honours', cloud) : w };
}

/** XID 79, drained, rebooted, back, and XID 79 again at minute 7: the ladder is at replace-node (the sweep at 8 acts). */
async function faultAfterReboot(cloud: FakePool, name = 'gpu-a100-00', pods = STANDARD_PODS): Promise<World> {
  let w: World = await hit(
    { node: { ...node(name), bootId: 'boot-1', ready: true }, pods },
    xid(79, { node: name, minute: 0 }),
  );
  w = (await sweep(w, 1, cloud)).world;
  w = (await sweep({ ...w, node: { ...w.node, bootId: 'boot-2' } }, 5, cloud)).world;
  return hit(w, xid(79, { node: name, minute: 7 }));
}

const steps = (p: Plan | undefined) =>
  (p ? renderSteps(p) : []).map((s) => `${s.kind}${s.message && s.kind === 'replace' ? `: ${s.message}` : ''}`);

describe('replace-node, capacity first', () => {
  it('grows the pool by one, waits for a new Ready node, then removes and releases the broken one', async () => {
    const cloud = new FakePool();
    let w = await faultAfterReboot(cloud);
    const grow = await sweep(w, 8, cloud);
    expect(grow.plan?.nextState.incidents[0]).toMatchObject({
      action: 'replace-node',
      phase: 'awaiting-repair',
      replace: { at: at(8), pool: 'np-a100', instanceId: 'i-broken', to: 4 },
    });
    expect(steps(grow.plan)).toContain('replace: node pool np-a100: desired size 3 → 4 (capacity first)');
    expect(grow.plan?.reason).toContain('replacing it, capacity first: node pool a100 grows 3 → 4');
    expect(cloud.desired).toBe(4);
    w = grow.world;
    // Booting, then joined but not Ready: nothing is removed.
    expect((await sweep(w, 9, cloud)).plan).toBeUndefined();
    cloud.join('gpu-a100-03', 11, false);
    expect((await sweep(w, 12, cloud)).plan).toBeUndefined();
    cloud.join('gpu-a100-03', 11, true);
    const remove = await sweep(w, 13, cloud);
    expect(steps(remove.plan)).toContain(
      'replace: node pool np-a100: instance i-broken removed and released (RemoveNodePoolNodes)',
    );
    expect(remove.plan?.nextState.incidents[0]?.replace).toMatchObject({ newNode: 'gpu-a100-03', readyAt: at(13) });
    expect(remove.plan?.reason).toContain('gpu-a100-03 joined node pool np-a100 and is Ready');
    expect(cloud.removed).toEqual(['i-broken']);
    // ACK lowered the size itself: the pool is back at 3, nothing asked to lower it again.
    expect(cloud.desired).toBe(3);
    expect(cloud.calls.filter((c) => c.kind === 'replace').map((c) => (c.kind === 'replace' ? c.step : ''))).toEqual([
      'grow',
      'remove',
    ]);
    // While the removal runs, the sweep waits (the incident closes when the node is gone: sweep-jobs).
    expect((await sweep(remove.world, 14, cloud)).plan).toBeUndefined();
  });

  it('never takes a node that was there before the grow as the new capacity', async () => {
    const cloud = new FakePool();
    const w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    cloud.join('gpu-a100-old', 2, true); // created before the pool was asked to grow
    cloud.join('gpu-a100-held', 20, true);
    cloud.members = cloud.members.map((m) => (m.name === 'gpu-a100-held' ? { ...m, held: true } : m));
    expect((await sweep(w, 21, cloud)).plan).toBeUndefined();
    expect(cloud.removed).toEqual([]);
  });

  it.each([
    [
      'the pool is not one gpu-reflex may size',
      (c: FakePool) =>
        (c.refused = 'node pool a100 (np-a100) is not one gpu-reflex may size: the autoscale policy does not name it'),
      'the autoscale policy does not name it',
    ],
    [
      'a subscription pool',
      (c: FakePool) => (c.refused = 'node pool a100 is subscription (PrePaid): ACK never releases its instances'),
      'subscription (PrePaid)',
    ],
    ['the pool at its maximum', (c: FakePool) => (c.max = 3), 'node pool a100 is at 3 of its maximum 3 nodes'],
  ])('tells a person and asks the cloud nothing when %s', async (_name, setUp, words) => {
    const cloud = new FakePool();
    const w = await faultAfterReboot(cloud);
    setUp(cloud);
    const { plan } = await sweep(w, 8, cloud);
    expect(steps(plan)).toContain('notify');
    expect(plan?.reason).toContain('a person must replace it');
    expect(plan?.reason).toContain(words);
    expect(plan?.cloud).toEqual([]);
    expect(cloud.desired).toBe(3);
  });

  it('tells a person once when no new node is Ready within the timeout, and removes nothing', async () => {
    const cloud = new FakePool();
    const w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    expect((await sweep(w, 8 + P.repair.replaceTimeoutMinutes - 1, cloud)).plan).toBeUndefined();
    const late = await sweep(w, 8 + P.repair.replaceTimeoutMinutes, cloud);
    expect(steps(late.plan)).toEqual(expect.arrayContaining(['notify']));
    expect(late.plan?.reason).toContain(
      `no new node is Ready after ${P.repair.replaceTimeoutMinutes} min: nothing was removed`,
    );
    expect((await sweep(late.world, 8 + P.repair.replaceTimeoutMinutes + 5, cloud)).plan).toBeUndefined();
    expect(cloud.removed).toEqual([]);
    // A person repairs it by hand and says so: it returns once its GPU passes the probe, nothing latches.
    const fixed = 8 + P.repair.replaceTimeoutMinutes + 10;
    const marked: World = {
      ...late.world,
      node: {
        ...late.world.node,
        annotations: { ...late.world.node.annotations, [REPAIRED_AT_ANNOTATION]: at(fixed) },
      },
    };
    const asked = (await sweep(marked, fixed + 1, cloud)).world;
    const probe = (JSON.parse(asked.node.annotations[GPU_ACTIONS_ANNOTATION] ?? '[]') as GpuActionRequest[]).find(
      (r) => r.action === 'probe',
    )!;
    const probed = {
      state: 'done',
      action: 'probe',
      gpuUuid: probe.gpuUuid,
      at: at(fixed + 2),
      probe: PASSED_PROBE,
    } satisfies GpuActionState;
    const answered: World = {
      ...asked,
      node: {
        ...asked.node,
        annotations: {
          ...asked.node.annotations,
          [GPU_ACTION_RESULTS_ANNOTATION]: JSON.stringify({ [probe.id]: probed }),
        },
      },
    };
    expect((await sweep(answered, fixed + 3, cloud)).plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(cloud.removed).toEqual([]);
  });

  it('asks again, with the same absolute size, when the grow did not reach the pool', async () => {
    const cloud = new FakePool();
    let w = await faultAfterReboot(cloud);
    const first = await sweep(w, 8, cloud);
    w = first.world;
    cloud.desired = 3; // the call was lost (or the autoscaler held the pool)
    const again = await sweep(w, 9, cloud);
    expect(steps(again.plan)).toContain('replace: node pool np-a100: desired size 3 → 4 (capacity first)');
    expect(cloud.desired).toBe(4);
    // asked twice, never more than one node added
    expect((await sweep(again.world, 10, cloud)).plan).toBeUndefined();
    expect(cloud.desired).toBe(4);
  });

  it('tells a person once when the removal fails', async () => {
    const cloud = new FakePool();
    let w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    cloud.join('gpu-a100-03', 10);
    w = (await sweep(w, 11, cloud)).world;
    cloud.removal = { state: 'failed', error: 'RemoveNodesFailed: injected' };
    const told = await sweep(w, 13, cloud);
    expect(told.plan?.reason).toContain('failed (RemoveNodesFailed: injected): gpu-a100-03 serves in its place');
    expect(steps(told.plan)).toContain('notify');
    expect((await sweep(told.world, 14, cloud)).plan).toBeUndefined();
  });

  it('tells a person once when ACK says the removal succeeded yet the node is still in the pool past the deadline', async () => {
    const cloud = new FakePool();
    let w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    cloud.join('gpu-a100-03', 10);
    w = (await sweep(w, 11, cloud)).world;
    expect(cloud.removed).toEqual(['i-broken']);
    // The task ends `success`, yet the node stays, on the same instance.
    cloud.removal = { state: 'success', taskId: 'T-remove' };
    expect((await sweep(w, 11 + P.repair.replaceTimeoutMinutes - 1, cloud)).plan).toBeUndefined();
    // Before, it waited here for good: the node out of service, the incident open, no one told.
    const told = await sweep(w, 11 + P.repair.replaceTimeoutMinutes, cloud);
    expect(told.plan?.reason).toContain(
      `its ACK task T-remove ended, ACK said success, yet gpu-a100-00 is still in the pool on instance i-broken ` +
        `${P.repair.replaceTimeoutMinutes} min later: gpu-a100-03 serves in its place`,
    );
    expect(steps(told.plan)).toContain('notify');
    expect(told.plan?.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-repair' });
    expect(cloud.removed).toEqual(['i-broken']);
    expect((await sweep(told.world, 12 + P.repair.replaceTimeoutMinutes, cloud)).plan).toBeUndefined();
  });

  it('tells a person once when the removal task is still running past the deadline, and still tells a failure after', async () => {
    const cloud = new FakePool();
    let w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    cloud.join('gpu-a100-03', 10);
    w = (await sweep(w, 11, cloud)).world;
    cloud.removal = { state: 'running', taskId: 'T-remove' };
    expect((await sweep(w, 11 + P.repair.replaceTimeoutMinutes - 1, cloud)).plan).toBeUndefined();
    // Before, the node stayed out of service here, silently, for as long as the task ran.
    const told = await sweep(w, 11 + P.repair.replaceTimeoutMinutes, cloud);
    expect(told.plan?.reason).toContain(
      `its ACK task T-remove is still running ${P.repair.replaceTimeoutMinutes} min after it was asked`,
    );
    expect(steps(told.plan)).toContain('notify');
    expect(told.plan?.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-repair' });
    expect((await sweep(told.world, 12 + P.repair.replaceTimeoutMinutes, cloud)).plan).toBeUndefined();
    cloud.removal = { state: 'failed', error: 'RemoveNodesFailed: injected', taskId: 'T-remove' };
    const failed = await sweep(told.world, 13 + P.repair.replaceTimeoutMinutes, cloud);
    expect(failed.plan?.reason).toContain('failed (RemoveNodesFailed: injected)');
    expect(steps(failed.plan)).toContain('notify');
  });

  it("tells a person once when the removal's task is in a state ACK does not document, and never reads it as done", async () => {
    const cloud = new FakePool();
    let w = (await sweep(await faultAfterReboot(cloud), 8, cloud)).world;
    cloud.join('gpu-a100-03', 10);
    w = (await sweep(w, 11, cloud)).world;
    cloud.removal = { state: 'unknown', raw: 'canceled' };
    const told = await sweep(w, 13, cloud);
    expect(told.plan?.reason).toContain("its ACK task answers state 'canceled', which gpu-reflex does not know");
    expect(steps(told.plan)).toContain('notify');
    // Still replacing: the incident stays open and the node out of service until it is gone.
    expect(told.plan?.nextState.incidents[0]).toMatchObject({
      phase: 'awaiting-repair',
      replace: { removalTold: 'canceled' },
    });
    expect((await sweep(told.world, 14, cloud)).plan).toBeUndefined();
    // A failure after it is still told: the first telling was of another thing.
    cloud.removal = { state: 'failed', error: 'RemoveNodesFailed: injected' };
    const failed = await sweep(told.world, 15, cloud);
    expect(failed.plan?.reason).toContain('failed (RemoveNodesFailed: injected)');
    expect(steps(failed.plan)).toContain('notify');
  });

  it('replaces two nodes of one pool in one round with two new nodes, not one', async () => {
    const cloud = new FakePool();
    const a = await faultAfterReboot(cloud);
    const b = await faultAfterReboot(cloud, 'gpu-a100-01', []);
    const facts = cloud.facts();
    const out = planSweep(
      {
        now: new Date(at(8)),
        ...CAN,
        nodes: [a, b].map((x) => ({
          node: x.node,
          state: stateOf(x.node),
          pool: pool(),
          pods: x.pods,
          replace: facts,
        })),
      },
      P,
    );
    const grows = out.plans
      .flatMap((p) => p.cloud)
      .map((c) => (c.kind === 'replace' && c.step === 'grow' ? `${c.from}→${c.to}` : ''));
    expect(grows).toEqual(['3→4', '4→5']);
  });

  const base = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pods: [] }), P).nextState.incidents[0]!;
  const inc = (o: Partial<Incident>): Incident => ({
    ...base,
    ladder: ['drain-node', 'reboot-node', 'replace-node'],
    level: 0,
    action: 'drain-node',
    phase: 'draining',
    lastAt: at(0),
    ...o,
  });
  it.each([
    ['a drain that leads to a reboot', inc({}), false],
    ['a drain whose next rung is replace-node', inc({ ladder: ['drain-node', 'replace-node'] }), true],
    [
      'a reboot under way',
      inc({ level: 1, action: 'reboot-node', phase: 'awaiting-repair', reboot: { at: at(1) } }),
      false,
    ],
    [
      'back from the reboot, quiet: its probe may fail and climb to replace-node this sweep',
      inc({
        level: 1,
        action: 'reboot-node',
        phase: 'awaiting-repair',
        reboot: { at: at(1), backAt: at(3) },
        lastAt: at(0),
      }),
      true,
    ],
    [
      'back from the reboot, with no replace-node up its ladder',
      inc({
        ladder: ['drain-node', 'reboot-node'],
        level: 1,
        action: 'reboot-node',
        phase: 'awaiting-repair',
        reboot: { at: at(1), backAt: at(3) },
        lastAt: at(0),
      }),
      false,
    ],
    [
      'the fault again after the reboot',
      inc({
        level: 1,
        action: 'reboot-node',
        phase: 'awaiting-repair',
        reboot: { at: at(1), backAt: at(3) },
        lastAt: at(5),
      }),
      true,
    ],
    [
      'a replacement under way',
      inc({
        level: 2,
        action: 'replace-node',
        phase: 'awaiting-repair',
        replace: { at: at(6), pool: 'np', instanceId: 'i-1', to: 3 },
      }),
      true,
    ],
  ])('reads a pool only where the round may start or move a replacement: %s', (_name, i, wanted) => {
    expect(needsReplaceFacts(i)).toBe(wanted);
  });
});
