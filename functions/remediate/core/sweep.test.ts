import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { HISTORY_ANNOTATION, REPAIRED_AT_ANNOTATION, STATE_LABEL } from './state.ts';
import { planSweep, type SweepFacts } from './sweep.ts';
import { renderSteps } from './detail.ts';
import {
  apply,
  at,
  factsFor,
  health,
  node,
  pod,
  pool,
  STANDARD_PODS,
  stateOf,
  xid,
  type World,
  requested,
  answer,
  PASSED_PROBE,
} from '../testing.ts';
import type { NodeFacts, Plan, PodFacts, TriggerEvent } from './types.ts';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_ACTIONS_ANNOTATION } from '../../../events/index.ts';

const P = DEFAULT_POLICY;
const kinds = (plan: Plan | undefined) => (plan ? renderSteps(plan) : []).map((s) => s.kind);

async function hit(w: World, e: TriggerEvent): Promise<World> {
  const plan = planRemediation(factsFor(e, w.node, { pods: w.pods }), P);
  return await apply(w.node, w.pods, plan);
}

async function sweep(
  w: World,
  minute: number,
  o: Partial<SweepFacts> = {},
): Promise<{ plan: Plan | undefined; world: World; retries: ReturnType<typeof planSweep>['retries'] }> {
  const out = planSweep(
    { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }], ...o },
    P,
  );
  const plan = out.plans[0];
  return { plan, world: plan ? await apply(w.node, w.pods, plan) : w, retries: out.retries };
}

const start = (pods: PodFacts[] = STANDARD_PODS): World => ({ node: node(), pods });

describe('planSweep: restoring', () => {
  it('returns a GPU NVIDIA answers with a reset only after a done reset and a passed probe, never on quiet time', async () => {
    let w = await hit(start(), xid(48, { minute: 0 }));
    expect(w.node.labels[STATE_LABEL]).toBe('quarantined');
    const gpu = stateOf(w.node).incidents[0]!.gpu!;
    // fenced at once, through the node agent, and said where people look (kubectl describe node)
    expect(requested(w).map((r) => [r.action, r.gpuUuid])).toEqual([['fence', gpu]]);
    expect(w.node.conditions?.GpuReflexGpuFenced).toMatchObject({
      status: 'True',
      message: expect.stringContaining(gpu),
    });
    // its pods are gone: a reset is asked for
    let s = await sweep(w, 1);
    w = s.world;
    const reset = requested(w).find((r) => r.action === 'reset')!;
    expect(reset).toMatchObject({ gpuUuid: gpu, timeoutSeconds: P.repair.answerTimeoutMinutes * 60 });
    // hours of quiet restore nothing while the agent has not answered (within its timeout)
    expect((await sweep(w, 5)).plan).toBeUndefined();
    w = answer(w, reset.id, { state: 'done', action: 'reset', gpuUuid: gpu, at: at(6) });
    s = await sweep(w, 7);
    w = s.world;
    expect(s.plan?.reason).toContain('health probe requested');
    const probe = requested(w).find((r) => r.action === 'probe')!;
    expect(probe.probeSeconds).toBe(P.repair.probeSeconds);
    expect(requested(w).some((r) => r.action === 'reset')).toBe(false);
    w = answer(w, probe.id, { state: 'done', action: 'probe', gpuUuid: gpu, at: at(8), probe: PASSED_PROBE });
    const { plan, world } = await sweep(w, 9);
    expect(plan).toMatchObject({ kind: 'act', action: 'restore', phase: 'restored' });
    expect((plan ? renderSteps(plan) : []).find((st) => st.kind === 'notify')?.message).toContain(
      'after a reset and a passed health probe',
    );
    expect(world.node.labels[STATE_LABEL]).toBe('healthy');
    expect(world.node.annotations['gpu-reflex.io/quarantined-gpus']).toBeUndefined();
    expect(stateOf(world.node).incidents[0]).toMatchObject({
      phase: 'closed',
      closedAt: at(9),
      resetAt: at(6),
      probedAt: at(8),
    });
    expect(world.node.conditions?.GpuReflexGpuFenced).toMatchObject({ status: 'False' });
    // the fence is lifted through the agent, and forgotten once it says so
    const unfence = requested(world).find((r) => r.action === 'unfence')!;
    expect(requested(world).map((r) => r.action)).toEqual(['unfence']);
    const after = await sweep(
      answer(world, unfence.id, { state: 'done', action: 'unfence', gpuUuid: gpu, at: at(10) }),
      11,
    );
    expect(after.world.node.annotations[GPU_ACTIONS_ANNOTATION]).toBeUndefined();
    // the original event, replayed late, changes nothing
    const replay = planRemediation(factsFor(xid(48, { minute: 0 }), after.world.node, { now: new Date(at(40)) }), P);
    expect(replay).toMatchObject({ kind: 'noop' });
    expect(renderSteps(replay)).toEqual([]);
  });

  it('never returns a reset-class GPU on quiet time alone: without an agent it climbs to awaiting-repair', async () => {
    let w = await hit(start(), xid(95, { minute: 0 }));
    w = (await sweep(w, 1)).world; // reset requested
    for (const m of [5, 8]) expect((await sweep(w, m)).plan).toBeUndefined();
    // nobody answered within the timeout: XID 95's ladder goes on to reboot the node (a drain first)
    const s = await sweep(w, 1 + P.repair.answerTimeoutMinutes + 1);
    expect(s.plan?.reason).toMatch(/did not answer the reset .* escalating to reboot-node/);
    expect(s.world.node.labels[STATE_LABEL]).toBe('draining');
    expect(s.world.node.unschedulable).toBe(true);
    expect(stateOf(s.world.node).incidents.find((i) => i.phase !== 'closed')).toMatchObject({
      action: 'reboot-node',
      phase: 'draining',
    });
  });

  it('a reset refused as busy is asked again quietly; still busy at the answer timeout, it climbs and says what held the GPU', async () => {
    let w = await hit(start(), xid(95, { minute: 0 }));
    w = (await sweep(w, 1)).world;
    const reset = requested(w).find((r) => r.action === 'reset')!;
    // a pod in its termination grace still holds the GPU
    w = answer(w, reset.id, {
      state: 'failed',
      action: 'reset',
      gpuUuid: reset.gpuUuid,
      at: at(2),
      reason: 'busy',
      holders: ['ml/stray-0'],
    });
    const again = await sweep(w, 3);
    expect(again.plan?.kind).toBe('noop'); // bookkeeping: no Remediation event for a retry
    const second = requested(again.world).find((r) => r.action === 'reset')!;
    expect(second.id).toBe(`${reset.id}.2`);
    w = answer(again.world, second.id, {
      state: 'failed',
      action: 'reset',
      gpuUuid: reset.gpuUuid,
      at: at(4),
      reason: 'busy',
      holders: ['ml/stray-0'],
    });
    for (let m = 5; m <= 10; m++) {
      const s = await sweep(w, m);
      w = s.world;
      for (const r of requested(w).filter(
        (x) => x.action === 'reset' && !JSON.parse(w.node.annotations[GPU_ACTION_RESULTS_ANNOTATION] ?? '{}')[x.id],
      )) {
        w = answer(w, r.id, {
          state: 'failed',
          action: 'reset',
          gpuUuid: r.gpuUuid,
          at: at(m),
          reason: 'busy',
          holders: ['ml/stray-0'],
        });
      }
    }
    const s = await sweep(w, 1 + P.repair.answerTimeoutMinutes + 1);
    expect(s.plan?.reason).toContain('failed on the node: busy (held by ml/stray-0)');
    expect(stateOf(s.world.node).incidents.find((i) => i.phase !== 'closed')?.action).toBe('reboot-node');
  });

  it('a fault seen again after the reset is a failed repair, whatever the probe says', async () => {
    let w = await hit(start(), xid(95, { minute: 0 }));
    w = (await sweep(w, 1)).world;
    const gpu = requested(w)[0]!.gpuUuid;
    w = answer(w, requested(w).find((r) => r.action === 'reset')!.id, {
      state: 'done',
      action: 'reset',
      gpuUuid: gpu,
      at: at(2),
    });
    w = (await sweep(w, 3)).world;
    w = await hit(w, xid(95, { minute: 4 }));
    w = answer(w, requested(w).find((r) => r.action === 'probe')!.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: gpu,
      at: at(5),
      probe: PASSED_PROBE,
    });
    const s = await sweep(w, 6);
    expect(s.plan?.action).not.toBe('restore');
    expect(s.plan?.reason).toContain(`faulted again at ${at(4)}, after its reset at ${at(2)}`);
  });

  it('a probe that does not pass does not restore the GPU', async () => {
    let w = await hit(start(), xid(95, { minute: 0 }));
    w = (await sweep(w, 1)).world;
    const gpu = requested(w)[0]!.gpuUuid;
    w = answer(w, requested(w).find((r) => r.action === 'reset')!.id, {
      state: 'done',
      action: 'reset',
      gpuUuid: gpu,
      at: at(2),
    });
    w = (await sweep(w, 3)).world;
    w = answer(w, requested(w).find((r) => r.action === 'probe')!.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: gpu,
      at: at(4),
      probe: { ...PASSED_PROBE, remapPending: true, passed: false },
    });
    const s = await sweep(w, 5);
    expect(s.plan?.action).not.toBe('restore');
    expect(s.plan?.reason).toContain('did not pass: a row remap is pending');
  });

  it('waits for a condition that clears by itself (temperature) to resolve before returning its GPU, fenced meanwhile', async () => {
    let w = await hit(start(), health('temperature', { minute: 0, severity: 'critical' }));
    expect(w.node.labels[STATE_LABEL]).toBe('quarantined');
    expect(requested(w).map((r) => r.action)).toEqual(['fence']);
    const verified = await sweep(w, 1);
    expect(verified.plan?.reason).toContain('is fenced');
    w = verified.world;
    expect((await sweep(w, 120)).plan).toBeUndefined();
    w = await hit(w, health('temperature', { minute: 121, state: 'resolved' }));
    expect((await sweep(w, 140)).plan).toBeUndefined();
    const back = await sweep(w, 152);
    expect(back.plan?.action).toBe('restore');
    expect(requested(back.world).map((r) => r.action)).toEqual(['unfence']);
  });

  it('closes observed incidents once quiet for the escalation window', async () => {
    const w = await hit(start(), xid(13, { minute: 0, pods: [{ uid: 'a' }] }));
    expect((await sweep(w, 59)).plan).toBeUndefined();
    const { plan } = await sweep(w, 61);
    expect(plan).toMatchObject({ kind: 'noop' });
    expect(plan?.nextState.incidents[0]?.phase).toBe('closed');
  });
});

describe('planSweep: drains and repair', () => {
  it('moves a drained node to awaiting-repair and says no cloud adapter can reboot it', async () => {
    const w = await hit(start(), xid(79, { minute: 0 }));
    expect(w.pods.map((p) => p.name)).toEqual(['dcgm-exporter', 'kube-proxy']);
    const { plan, world } = await sweep(w, 1);
    expect(plan).toMatchObject({ phase: 'awaiting-repair' });
    expect(kinds(plan)).toContain('notify');
    expect(kinds(plan)).not.toContain('reboot');
    expect(plan?.reason).toContain('no cloud adapter');
    expect(world.node.labels[STATE_LABEL]).toBe('awaiting-repair');
    expect(world.node.unschedulable).toBe(true);
  });

  it('reboots a drained node when a cloud adapter can', async () => {
    const w = await hit(start(), xid(79, { minute: 0 }));
    expect(kinds((await sweep(w, 1, { capabilities: { reboot: true } })).plan)).toContain('reboot');
  });

  it('returns a rebooted node once it shows a new boot id and its GPU passes the health probe, never on quiet time', async () => {
    const booted = (w: World, bootId: string, ready = true): World => ({ ...w, node: { ...w.node, bootId, ready } });
    let w = booted(await hit(start(), xid(79, { minute: 0 })), 'boot-1');
    const asked = await sweep(w, 1, { capabilities: { reboot: true } });
    expect(kinds(asked.plan)).toContain('reboot');
    expect(asked.plan?.nextState.incidents[0]?.reboot).toEqual({ at: at(1), fromBoot: 'boot-1' });
    w = asked.world;
    // Rebooting: the old boot id, then a new one but not Ready yet: nothing moves.
    expect((await sweep(w, 3, { capabilities: { reboot: true } })).plan).toBeUndefined();
    expect((await sweep(booted(w, 'boot-2', false), 4, { capabilities: { reboot: true } })).plan).toBeUndefined();
    const back = await sweep(booted(w, 'boot-2'), 5, { capabilities: { reboot: true } });
    expect(back.plan?.nextState.incidents[0]?.reboot).toEqual({ at: at(1), fromBoot: 'boot-1', backAt: at(5) });
    expect(back.plan?.reason).toContain('is back from its reboot');
    expect(back.plan?.reason).toContain('it returns only when the probe passes');
    w = back.world;
    const gpu = stateOf(w.node).incidents[0]!.gpu!;
    const probe = requested(w).find((r) => r.action === 'probe')!;
    expect(probe).toMatchObject({ gpuUuid: gpu, probeSeconds: P.repair.probeSeconds });
    // Quiet time restores nothing: only the probe's answer does.
    expect((await sweep(w, 5 + P.quietPeriodMinutes + 1, { capabilities: { reboot: true } })).plan?.action).not.toBe(
      'restore',
    );
    w = answer(w, probe.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: gpu,
      at: at(6),
      probe: { ...PASSED_PROBE, counted: true },
    });
    const { plan, world } = await sweep(w, 7, { capabilities: { reboot: true } });
    expect(plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(plan?.reason).toContain(`rebooted at ${at(1)}, back at ${at(5)}`);
    expect(plan?.notices.at(-1)?.text).toContain('after its reboot and a passed health probe');
    expect(world.node).toMatchObject({ unschedulable: false, taints: [] });
    expect(world.node.labels[STATE_LABEL]).toBe('healthy');
  });

  it("defers to the node pool's own auto repair: no reboot of its own, the node's return watched, restored on a passed probe", async () => {
    const OWNER = 'ACK auto repair of node pool gpu-a100';
    // The sweep could reboot (a cloud adapter), but this node's pool repairs its nodes itself.
    const sweepOwned = async (w: World, minute: number) => {
      const out = planSweep(
        {
          now: new Date(at(minute)),
          capabilities: { reboot: true },
          nodes: [
            { node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods, capabilities: { repairOwner: OWNER } },
          ],
        },
        P,
      );
      const plan = out.plans[0];
      return { plan, world: plan ? await apply(w.node, w.pods, plan) : w };
    };
    let w: World = await hit(start(), xid(79, { minute: 0 }));
    w = { ...w, node: { ...w.node, bootId: 'boot-1', ready: true } };
    const handed = await sweepOwned(w, 1);
    expect(kinds(handed.plan)).not.toContain('reboot');
    expect(handed.plan?.reason).toContain(`${OWNER} repairs this node, so gpu-reflex defers`);
    expect(handed.plan?.nextState.incidents[0]).toMatchObject({
      phase: 'awaiting-repair',
      reboot: { at: at(1), fromBoot: 'boot-1', by: OWNER },
    });
    w = { ...handed.world, node: { ...handed.world.node, bootId: 'boot-2' } };
    w = (await sweepOwned(w, 6)).world;
    const probe = requested(w).find((r) => r.action === 'probe')!;
    w = answer(w, probe.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: probe.gpuUuid,
      at: at(7),
      probe: { ...PASSED_PROBE, counted: true },
    });
    const { plan } = await sweepOwned(w, 8);
    expect(plan).toMatchObject({ action: 'restore' });
    expect(plan?.reason).toContain(`repaired by ${OWNER} at ${at(1)}, back at ${at(6)}`);
  });

  it('leaves a node the cloud cannot reach to a person, saying why, though the deployment can reboot others', async () => {
    const WHY = 'it names no ECS instance: spec.providerID unset';
    let w: World = await hit(start(), xid(79, { minute: 0 }));
    w = { ...w, node: { ...w.node, bootId: 'boot-1', ready: true } };
    const out = planSweep(
      {
        now: new Date(at(1)),
        capabilities: { reboot: true, replace: true },
        nodes: [
          {
            node: w.node,
            state: stateOf(w.node),
            pool: pool(),
            pods: w.pods,
            capabilities: { reboot: false, replace: false, unreachable: WHY },
          },
        ],
      },
      P,
    );
    const plan = out.plans[0];
    expect(kinds(plan)).not.toContain('reboot');
    expect(plan?.cloud ?? []).toEqual([]);
    expect(plan?.reason).toContain(
      `awaiting-repair, a person must reboot it (${WHY}), then annotate gpu-reflex.io/repaired-at=<time>`,
    );
    expect(plan?.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-repair' });
    expect(plan?.nextState.incidents[0]?.reboot).toBeUndefined();
  });

  it('climbs to replace-node when the fault comes back after the reboot', async () => {
    let w = await hit(start(), xid(79, { minute: 0 }));
    w = { ...w, node: { ...w.node, bootId: 'boot-1', ready: true } };
    w = (await sweep(w, 1, { capabilities: { reboot: true } })).world;
    w = (await sweep({ ...w, node: { ...w.node, bootId: 'boot-2' } }, 5, { capabilities: { reboot: true } })).world;
    w = await hit(w, xid(79, { minute: 7 }));
    const { plan } = await sweep(w, 8, { capabilities: { reboot: true } });
    expect(plan?.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-repair', action: 'replace-node' });
    expect(plan?.nextState.incidents[0]?.reboot).toBeUndefined();
    expect(plan?.reason).toMatch(
      /the fault came back at .*, after the reboot \(back at .*\); escalating to replace-node/,
    );
    expect(plan?.reason).toContain('no cloud adapter can');
  });

  it('tells a person once when a rebooted node does not come back', async () => {
    let w: World = await hit(start(), xid(79, { minute: 0 }));
    w = { ...w, node: { ...w.node, bootId: 'boot-1', ready: false } };
    w = (await sweep(w, 1, { capabilities: { reboot: true } })).world;
    expect(
      (await sweep(w, 1 + P.repair.rebootTimeoutMinutes - 1, { capabilities: { reboot: true } })).plan,
    ).toBeUndefined();
    const late = await sweep(w, 1 + P.repair.rebootTimeoutMinutes, { capabilities: { reboot: true } });
    expect(kinds(late.plan)).toContain('notify');
    expect(late.plan?.reason).toContain(
      `has not come back (no new boot id, not Ready) after ${P.repair.rebootTimeoutMinutes} min: a person must look`,
    );
    expect(
      (await sweep(late.world, 1 + P.repair.rebootTimeoutMinutes + 10, { capabilities: { reboot: true } })).plan,
    ).toBeUndefined();
  });

  it('restores a repaired node once its GPU passes the health probe: untaint, uncordon, label healthy', async () => {
    let w = (await sweep(await hit(start(), xid(79, { minute: 0 })), 1)).world;
    expect((await sweep(w, 300)).plan).toBeUndefined(); // not repaired: waits, never guesses
    w = { ...w, node: { ...w.node, annotations: { ...w.node.annotations, [REPAIRED_AT_ANNOTATION]: at(60) } } };
    const asked = await sweep(w, 61);
    expect(asked.plan?.reason).toContain('health probe of');
    w = asked.world;
    const probe = requested(w).find((r) => r.action === 'probe')!;
    // Quiet time restores nothing: no answer within the timeout keeps the node out and tells a person.
    const quietly = (await sweep(w, 61 + Math.max(P.quietPeriodMinutes, P.repair.answerTimeoutMinutes) + 1)).plan;
    expect(quietly?.action).not.toBe('restore');
    expect(quietly?.reason).toContain('did not answer the health probe');
    w = answer(w, probe.id, {
      state: 'done',
      action: 'probe',
      gpuUuid: probe.gpuUuid,
      at: at(62),
      probe: { ...PASSED_PROBE, counted: true },
    });
    const { plan, world } = await sweep(w, 91);
    expect(plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(kinds(plan)).toEqual(expect.arrayContaining(['untaint', 'uncordon', 'label']));
    expect(world.node).toMatchObject({ unschedulable: false, taints: [] });
    expect(world.node.labels[STATE_LABEL]).toBe('healthy');
  });

  it('retries blocked evictions and lists them', async () => {
    const pods = [...STANDARD_PODS, pod('guarded')];
    const first = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pods }), P);
    const w = await apply(node(), pods, first, new Set(['guarded']));
    const { plan, retries } = await sweep(w, 10);
    expect(retries).toEqual([
      { node: 'gpu-a100-07', pod: 'ml/guarded', incident: first.incident, since: expect.any(String) },
    ]);
    expect((plan ? renderSteps(plan) : []).filter((s) => s.kind === 'evict').map((s) => s.target)).toEqual([
      'pod/ml/guarded',
    ]);
  });

  it('escalates a drain stuck past its timeout to the next action in then', async () => {
    const pods = [...STANDARD_PODS, pod('guarded')];
    const first = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pods }), P);
    const w = await apply(node(), pods, first, new Set(['guarded']));
    const { plan } = await sweep(w, 31, { capabilities: { reboot: true } });
    expect(kinds(plan)).toContain('reboot');
    expect(plan?.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-repair', action: 'reboot-node', level: 1 });
    expect(plan?.reason).toContain('drain timeout');
  });

  it('tells a person once when a stuck drain has nothing to escalate to (XID 54)', async () => {
    const pods = [...STANDARD_PODS, pod('guarded')];
    const first = planRemediation(factsFor(xid(54, { minute: 0 }), node(), { pods }), P);
    let w = await apply(node(), pods, first, new Set(['guarded']));
    const a = await sweep(w, 31);
    expect(kinds(a.plan)).toEqual(expect.arrayContaining(['evict', 'notify']));
    w = await apply(w.node, w.pods, a.plan!, new Set(['guarded']));
    const b = await sweep(w, 32);
    expect(kinds(b.plan)).not.toContain('notify');
    expect(kinds(b.plan)).toContain('evict');
  });
});

describe('planSweep: approvals and orphans', () => {
  it('acts on held-back nodes by itself when the window has room, oldest fault first', async () => {
    const held = await Promise.all(
      ['gpu-a100-03', 'gpu-a100-02'].map(async (name, i) => {
        const plan = planRemediation(
          factsFor(xid(79, { node: name, minute: 5 - i }), node(name), {
            pool: pool({ quarantinedInWindow: 2, quarantinedNodes: ['x', 'y'] }),
          }),
          P,
        );
        expect(plan.kind).toBe('approval');
        return await apply(node(name), STANDARD_PODS, plan);
      }),
    );
    const out = planSweep(
      {
        now: new Date(at(90)),
        nodes: held.map((w) => ({
          node: w.node,
          state: stateOf(w.node),
          pool: pool({ quarantinedInWindow: 1, quarantinedNodes: ['x'] }),
          pods: w.pods,
        })),
      },
      P,
    );
    const byNode = Object.fromEntries(out.plans.map((p) => [p.target.node, p]));
    // gpu-a100-02 saw its fault first (minute 4): it gets the one free slot
    expect(kinds(byNode['gpu-a100-02'])).toEqual(expect.arrayContaining(['taint', 'cordon', 'evict']));
    expect(byNode['gpu-a100-03']).toBeUndefined();
  });

  it('adopts a node left out of service without a history and restores it after the quiet period', async () => {
    const n: NodeFacts = {
      ...node(),
      labels: { ...node().labels, [STATE_LABEL]: 'draining' },
      annotations: { [HISTORY_ANNOTATION]: '{broken' },
      taints: [{ key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' }],
      unschedulable: true,
    };
    const first = await sweep({ node: n, pods: [] }, 0);
    expect(first.plan?.nextState.incidents[0]).toMatchObject({ trigger: 'orphan' });
    const w = first.world;
    expect((await sweep(w, 29)).plan).toBeUndefined();
    // an orphan drain waits for repair like any drain
    const repaired = {
      ...w,
      node: { ...w.node, annotations: { ...w.node.annotations, [REPAIRED_AT_ANNOTATION]: at(1) } },
    };
    expect((await sweep(repaired, 40)).plan).toMatchObject({ action: 'restore' });
  });

  it.each([
    ['approved', 'act', 'draining'],
    ['rejected', 'act', 'closed'], // the label goes back to healthy
    ['expired', undefined, 'awaiting-approval'],
  ] as const)('obeys a chat decision on a held-back incident: %s', async (decision, kind, phase) => {
    const full = pool({ quarantinedInWindow: 2, quarantinedNodes: ['x', 'y'] });
    const plan = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pool: full }), P);
    const w = await apply(node(), STANDARD_PODS, plan);
    const out = planSweep(
      {
        now: new Date(at(5)),
        nodes: [{ node: w.node, state: stateOf(w.node), pool: full, pods: w.pods }],
        decisions: [{ incident: plan.incident, decision }],
      },
      P,
    );
    expect(out.plans[0]?.kind).toBe(kind);
    expect((out.plans[0]?.nextState ?? stateOf(w.node)).incidents[0]?.phase).toBe(phase);
    if (decision === 'rejected') {
      expect((out.plans[0] ? renderSteps(out.plans[0]) : []).map((s) => s.message)).toContain(
        'gpu-reflex.io/state=healthy',
      );
      expect(out.plans[0]?.action).toBe('observe'); // never left service: nothing was restored
    }
  });

  it('lets a held-back node without a history go back to healthy, adopting nothing', async () => {
    const n: NodeFacts = {
      ...node(),
      labels: { ...node().labels, [STATE_LABEL]: 'awaiting-approval' },
      annotations: { [HISTORY_ANNOTATION]: 'null' },
    };
    const { plan } = await sweep({ node: n, pods: [] }, 0);
    expect((plan ? renderSteps(plan) : []).map((s) => s.message)).toContain('gpu-reflex.io/state=healthy');
    expect(plan?.nextState.incidents).toEqual([]);
  });
});
