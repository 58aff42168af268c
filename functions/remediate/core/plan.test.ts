import { describe, expect, it } from 'vitest';
import { describeXid, XID_CATALOG, type RemediationAction } from '../../../events/index.ts';
import { poolFacts } from './blast-radius.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY, type Policy } from './policy.ts';
import { renderSteps } from './detail.ts';
import { apply, factsFor, gpu, health, node, pod, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';
import type { Plan, PodFacts, TriggerEvent } from './types.ts';

const P = DEFAULT_POLICY;
const kinds = (plan: Plan) => renderSteps(plan).map((s) => s.kind);
const evicted = (plan: Plan) =>
  renderSteps(plan)
    .filter((s) => s.kind === 'evict')
    .map((s) => s.target)
    .sort();

/** Feeds events one after another through plan → apply, as the handler would. */
async function replay(
  events: TriggerEvent[],
  pods: PodFacts[] = STANDARD_PODS,
  n = node(),
): Promise<{ plans: Plan[]; node: typeof n }> {
  const plans: Plan[] = [];
  let cur = { node: n, pods };
  for (const e of events) {
    const plan = planRemediation(factsFor(e, cur.node, { pods: cur.pods }), P);
    plans.push(plan);
    cur = await apply(cur.node, cur.pods, plan);
  }
  return { plans, node: cur.node };
}

describe('planRemediation: first actions', () => {
  it.each([...XID_CATALOG.keys()])('takes the documented first action for XID %i', async (x) => {
    const plan = planRemediation(factsFor(xid(x, { pods: [{ uid: 'uid-train-0' }] }), node()), P);
    expect(plan.action).toBe(describeXid(x).action);
    const expected: Record<RemediationAction, string[]> = {
      ignore: [],
      observe: [],
      'restart-workload': ['pod/ml/train-0'],
      'quarantine-gpu': ['pod/ml/train-0'],
      'drain-node': ['pod/ml/train-0', 'pod/ml/train-1', 'pod/ml/web'],
      'reboot-node': ['pod/ml/train-0', 'pod/ml/train-1', 'pod/ml/web'],
      'replace-node': ['pod/ml/train-0', 'pod/ml/train-1', 'pod/ml/web'],
    };
    expect(evicted(plan)).toEqual(expected[plan.action as RemediationAction]);
  });

  it.each([
    ['gpu-lost', 'critical', 'drain-node', 'act'],
    ['ecc-uncorrected', 'critical', 'quarantine-gpu', 'act'],
    ['row-remap-pending', 'warning', 'observe', 'act'],
    ['retired-pages-pending', 'warning', 'observe', 'act'],
    ['row-remap-failure', 'critical', 'quarantine-gpu', 'act'],
    ['temperature', 'critical', 'quarantine-gpu', 'act'],
    ['temperature', 'warning', 'observe', 'act'],
    ['power', 'warning', 'observe', 'act'],
    ['throttling', 'warning', 'observe', 'act'],
    ['nvlink-down', 'critical', 'quarantine-gpu', 'act'],
    ['recovery-action', 'critical', 'observe', 'act'],
    ['utilization-high', 'info', 'ignore', 'noop'],
    ['framebuffer-high', 'info', 'ignore', 'noop'],
    ['monitoring-degraded', 'warning', 'observe', 'act'],
    ['gpu-missing', 'critical', 'drain-node', 'act'],
  ] as const)(
    'takes the documented first action for health condition %s (%s): %s',
    async (condition, severity, action, kind) => {
      const plan = planRemediation(factsFor(health(condition, { severity }), node()), P);
      expect(plan).toMatchObject({ action, kind });
    },
  );

  it('drains the node for XID 79: taint, cordon, label, evict every pod but DaemonSet and mirror pods', async () => {
    const plan = planRemediation(factsFor(xid(79, { pods: [{ uid: 'uid-train-0' }] }), node()), P);
    expect(plan).toMatchObject({ kind: 'act', action: 'drain-node', scope: 'node', phase: 'decided' });
    expect(kinds(plan).slice(0, 3)).toEqual(['taint', 'cordon', 'label']);
    expect(plan.nodeEdit).toMatchObject({
      addTaints: [{ key: 'gpu-reflex.io/unhealthy', value: 'xid-79', effect: 'NoSchedule' }],
      unschedulable: true,
      labels: { 'gpu-reflex.io/state': 'draining' },
    });
    expect(plan.nodeEdit?.record).toBe(plan.nextState);
    expect(evicted(plan)).toEqual(['pod/ml/train-0', 'pod/ml/train-1', 'pod/ml/web']);
    expect(plan.nextState).toMatchObject({ phase: 'draining', taint: 'xid-79', cordoned: true });
    expect(plan.reason).toContain('GPU has fallen off the bus');
    expect(plan.reason).toContain('awaiting-repair');
    expect(kinds(plan)).toContain('notify');
  });

  it('does not claim an admin cordon as its own', async () => {
    const n = { ...node(), unschedulable: true };
    const plan = planRemediation(factsFor(xid(79), n), P);
    expect(kinds(plan)).not.toContain('cordon');
    expect(plan.nextState.cordoned).toBe(false);
  });

  it('quarantines one GPU without tainting a node that has other healthy GPUs', async () => {
    const plan = planRemediation(factsFor(xid(48, { gpu: 1 }), node()), P);
    expect(plan).toMatchObject({ action: 'quarantine-gpu', scope: 'gpu' });
    expect(kinds(plan)).not.toContain('taint');
    expect(kinds(plan)).not.toContain('cordon');
    expect(plan.nextState).toMatchObject({ phase: 'quarantined', quarantinedGpus: [gpu(1).uuid] });
    // no pods reported: the device plugin's allocation says train-1 holds GPU 1
    expect(evicted(plan)).toEqual(['pod/ml/train-1']);
  });

  it('taints the node once every GPU on it is quarantined', async () => {
    const plan = planRemediation(factsFor(xid(48, { gpu: 0 }), node('gpu-a100-07', 1)), P);
    expect(renderSteps(plan).find((s) => s.kind === 'taint')?.message).toBe(
      'gpu-reflex.io/unhealthy=xid-48:NoSchedule',
    );
  });

  it('restarts only the reported workload for XID 94', async () => {
    const plan = planRemediation(
      factsFor(xid(94, { pods: [{ uid: 'uid-train-1' }, { uid: 'uid-dcgm-exporter' }] }), node()),
      P,
    );
    expect(evicted(plan)).toEqual(['pod/ml/train-1']);
    expect(plan.nextState.phase).toBe('healthy');
  });

  it('evicts every GPU pod when nobody knows which pods used the GPU', async () => {
    const pods = [pod('a'), pod('b'), pod('cpu', { requestsGpu: false }), pod('ds', { daemonSet: true })];
    const plan = planRemediation(factsFor(xid(48), node(), { pods }), P);
    expect(evicted(plan)).toEqual(['pod/ml/a', 'pod/ml/b']);
  });

  it('acts on a MIG instance only for an application XID: the pods of that instance', async () => {
    const mig = {
      gpuInstanceId: 3,
      computeInstanceId: 0,
      uuid: 'MIG-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9',
      profile: '1g.10gb',
    };
    const pods = [
      pod('inst3', { migInstances: [mig.uuid] }),
      pod('inst5', { migInstances: ['MIG-11111111-4e5f-4061-8273-94a5b6c7d8e9'] }),
    ];
    const quarantine94: Policy = { ...P, xids: { ...P.xids, '94': { action: 'quarantine-gpu', then: [] } } };
    for (const reported of [[{ uid: 'uid-inst3' }], []]) {
      const plan = planRemediation(factsFor(xid(94, { mig, pods: reported }), node(), { pods }), quarantine94);
      expect(plan).toMatchObject({ scope: 'mig-instance', incident: `gpu-a100-07/${gpu(0).uuid}/gi3/xid-94` });
      expect(evicted(plan)).toEqual(['pod/ml/inst3']);
      expect(plan.target.migInstances).toEqual([{ gpuUuid: gpu(0).uuid, gpuInstanceId: 3, computeInstanceId: 0 }]);
      expect(plan.nextState.quarantinedGpus).toEqual([mig.uuid]);
    }
  });

  it("treats a whole-GPU XID seen on a MIG instance as the whole GPU's: every instance's pods move, the GPU is fenced and reset", async () => {
    const mig = {
      gpuInstanceId: 3,
      computeInstanceId: 0,
      uuid: 'MIG-0a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9',
      profile: '1g.10gb',
    };
    const pods = [
      pod('inst3', { migInstances: [mig.uuid] }),
      pod('inst5', { migInstances: ['MIG-11111111-4e5f-4061-8273-94a5b6c7d8e9'] }),
    ];
    for (const x of [95, 48, 64]) {
      // The agent reports the pods of every instance of the GPU for such an XID.
      const plan = planRemediation(
        factsFor(xid(x, { mig, pods: [{ uid: 'uid-inst3' }, { uid: 'uid-inst5' }] }), node(), { pods }),
        P,
      );
      expect(plan).toMatchObject({
        scope: 'gpu',
        action: 'quarantine-gpu',
        incident: `gpu-a100-07/${gpu(0).uuid}/xid-${x}`,
      });
      expect(evicted(plan).sort()).toEqual(['pod/ml/inst3', 'pod/ml/inst5']);
      expect(plan.nextState.quarantinedGpus).toEqual([gpu(0).uuid]);
      expect(plan.reason).toContain('the node agent resets the GPU');
    }
  });

  it.each([
    [13, 'node-reboot', 'drain-node'],
    [154, 'gpu-reset', 'quarantine-gpu'],
    [154, 'none', 'observe'],
    [154, 'drain-and-reset', 'quarantine-gpu'],
    [48, 'drain-p2p', 'quarantine-gpu'],
  ] as const)('lets the recovery action override the table: XID %i with %s → %s', async (x, ra, action) => {
    expect(planRemediation(factsFor(xid(x, { recoveryAction: ra }), node()), P).action).toBe(action);
  });

  it('counts XID 74 from two GPUs of a node at once as one NVLink incident: one quarantine, not two', async () => {
    const { plans, node: after } = await replay([
      xid(74, { gpu: 0, minute: 0, pods: [{ uid: 'uid-train-0' }] }),
      xid(74, { gpu: 1, minute: 0, pods: [{ uid: 'uid-train-1' }] }),
    ]);
    expect(plans[0]).toMatchObject({ action: 'quarantine-gpu', kind: 'act' });
    expect(plans[1]).toMatchObject({ kind: 'noop' });
    expect(plans[1]!.reason).toContain(`the same NVLink incident as ${gpu(0).uuid}`);
    expect(evicted(plans[1]!)).toEqual([]);
    expect(stateOf(after).quarantinedGpus).toEqual([gpu(0).uuid]);
    // Later, on its own, GPU 1's 74 is its own incident.
    const later = planRemediation(factsFor(xid(74, { gpu: 1, minute: 5 }), after), P);
    expect(later).toMatchObject({
      action: 'quarantine-gpu',
      kind: 'act',
      incident: `gpu-a100-07/${gpu(1).uuid}/xid-74`,
    });
  });

  it.each([
    ['nonfatal', undefined, 'observe'],
    ['fatal', undefined, 'quarantine-gpu'],
    [undefined, undefined, 'quarantine-gpu'], // NVML only: no word either way, so the catalog's action
    ['nonfatal', 'gpu-reset', 'quarantine-gpu'], // a recovery action NVML asks for still wins
  ] as const)('NVLink5 XID 145 whose kernel line says %s (recovery action %s) → %s', async (severity, ra, action) => {
    const e = xid(145, { ...(severity ? { severity } : {}), ...(ra ? { recoveryAction: ra } : {}) });
    expect(planRemediation(factsFor(e, node()), P).action).toBe(action);
  });

  it('drains a node that has fewer GPUs than it should (gpu-count: node-level, no GPU to name)', async () => {
    const plan = planRemediation(factsFor(health('gpu-count', { gpu: null }), node()), P);
    expect(plan).toMatchObject({ action: 'drain-node', scope: 'node', kind: 'act' });
  });

  it('reports monitoring-degraded and acts on nothing', async () => {
    for (const e of [
      health('monitoring-degraded', { gpu: null, severity: 'warning' }),
      health('monitoring-degraded', { severity: 'critical' }),
    ]) {
      const plan = planRemediation(factsFor(e, node()), P);
      expect(kinds(plan)).toContain('notify');
      expect(kinds(plan).every((k) => k === 'notify' || k === 'annotate')).toBe(true);
      expect(plan.nextState.incidents).toEqual([]);
      expect(plan.nextState.phase).toBe('healthy');
    }
  });
});

describe('planRemediation: duplicates, replays, escalation', () => {
  it('acts once on the same event delivered 5 times, then 4 noops', async () => {
    const e = xid(79);
    const { plans } = await replay([e, e, e, e, e]);
    expect(plans.map((p) => p.kind)).toEqual(['act', 'noop', 'noop', 'noop', 'noop']);
    expect(
      plans
        .slice(1)
        .every((p) => renderSteps(p).length === 0 && p.phase === 'skipped' && p.reason.startsWith('already handled')),
    ).toBe(true);
  });

  it('treats the same observation under another event id (nvml and kmsg) as a duplicate', async () => {
    const { plans } = await replay([xid(48, { eventId: 'xid:a:nvml:1' }), xid(48, { eventId: 'xid:a:kmsg:1' })]);
    expect(plans.map((p) => p.kind)).toEqual(['act', 'noop']);
  });

  it('counts a repeat of an open incident without acting again', async () => {
    const { plans } = await replay([xid(48, { minute: 0 }), xid(48, { minute: 5 })]);
    expect(plans[1]).toMatchObject({ kind: 'noop', action: 'quarantine-gpu' });
    expect(plans[1]?.nextState.incidents[0]?.count).toBe(2);
    expect(kinds(plans[1]!)).toEqual(['annotate']);
  });

  it.each([13, 31])('observes application XID %i once', async (x) => {
    const plan = planRemediation(factsFor(xid(x, { pods: [{ uid: 'uid-train-0' }] }), node()), P);
    expect(plan).toMatchObject({ kind: 'act', action: 'observe' });
    expect(kinds(plan)).toEqual(['annotate']);
  });

  it.each([13, 31])(
    'escalates XID %i seen 3 times on one GPU across different workloads within the window',
    async (x) => {
      const { plans } = await replay([
        xid(x, { minute: 0, pods: [{ uid: 'uid-a' }] }),
        xid(x, { minute: 20, pods: [{ uid: 'uid-b' }] }),
        xid(x, { minute: 40, pods: [{ uid: 'uid-train-0' }] }),
      ]);
      expect(plans.map((p) => p.action)).toEqual(['observe', 'observe', 'restart-workload']);
      expect(plans[2]?.reason).toContain('Escalated');
      expect(evicted(plans[2]!)).toEqual(['pod/ml/train-0']);
    },
  );

  // The agent sends repeats of one XID on one GPU and pid as one event with `count` (node-agent/xid-aggregate.ts).
  it('counts an aggregated XID event as the occurrences it carries', async () => {
    const held = xid(13, { minute: 2, pods: [{ uid: 'uid-b' }] });
    if (held.detailType !== 'GPU XID Error') throw new Error('an XID event');
    held.detail.count = 2;
    const { plans } = await replay([xid(13, { minute: 0, pods: [{ uid: 'uid-a' }] }), held]);
    expect(plans.map((p) => p.action)).toEqual(['observe', 'restart-workload']);
    expect(plans[1]?.reason).toContain('seen 3 times');
  });

  it('says how far a repeat that did not escalate is toward escalation, counting only the window', async () => {
    const { plans } = await replay([0, 20, 70].map((m, i) => xid(13, { minute: m, pods: [{ uid: `u${i}` }] })));
    expect(plans[0]?.escalation).toBeUndefined();
    expect(plans[1]?.escalation).toEqual({
      seen: 2,
      needed: 3,
      workloads: 2,
      neededWorkloads: 2,
      windowMinutes: 60,
      next: 'restart-workload',
    });
    // At minute 70 the one at minute 0 has left the hour: only 20 and 70 count.
    expect(plans[2]?.escalation).toMatchObject({ seen: 2, workloads: 2 });
  });

  it('keeps climbing: 3 more across workloads after restart-workload quarantine the GPU', async () => {
    const ev = (m: number, uid: string) => xid(13, { minute: m, pods: [{ uid }] });
    const { plans } = await replay([ev(0, 'a'), ev(1, 'b'), ev(2, 'c'), ev(3, 'd'), ev(4, 'e'), ev(5, 'f')]);
    expect(plans.map((p) => p.action)).toEqual([
      'observe',
      'observe',
      'restart-workload',
      'restart-workload',
      'restart-workload',
      'quarantine-gpu',
    ]);
  });

  // One program that keeps faulting is the program's problem, not the GPU's.
  it('does not escalate when the same workload repeats the XID', async () => {
    const { plans } = await replay([0, 10, 20, 30].map((m) => xid(13, { minute: m, pods: [{ uid: 'uid-same' }] })));
    expect(plans.map((p) => p.action)).toEqual(['observe', 'observe', 'observe', 'observe']);
  });

  it('does not escalate repeats spread beyond the window', async () => {
    const { plans } = await replay([0, 61, 122].map((m, i) => xid(13, { minute: m, pods: [{ uid: `u${i}` }] })));
    expect(plans.map((p) => p.action)).toEqual(['observe', 'observe', 'observe']);
  });

  it('never escalates XID 45, however often and across however many workloads', async () => {
    const { plans } = await replay(
      Array.from({ length: 12 }, (_, i) => xid(45, { minute: i, pods: [{ uid: `u${i}` }] })),
    );
    expect(new Set(plans.map((p) => p.action))).toEqual(new Set(['observe']));
    expect(plans.every((p) => !kinds(p).includes('evict'))).toBe(true);
  });

  it('closes an observed condition when it resolves, and ignores a resolve older than the firing', async () => {
    const { plans } = await replay([
      health('row-remap-pending', { minute: 5, severity: 'warning' }),
      health('row-remap-pending', { minute: 1, state: 'resolved' }),
      health('row-remap-pending', { minute: 9, state: 'resolved' }),
    ]);
    expect(plans[1]?.reason).toContain('out of order');
    expect(plans[2]?.nextState.incidents[0]).toMatchObject({ phase: 'closed', closedAt: plans[2]?.trigger.observedAt });
  });

  it('never reopens a closed incident from a stale replay', async () => {
    const { plans, node: n } = await replay([
      health('ecc-uncorrected', { minute: 0 }),
      health('ecc-uncorrected', { minute: 10, state: 'resolved' }),
    ]);
    expect(plans[0]?.action).toBe('quarantine-gpu');
    // close the incident as the sweep does after the quiet period
    const st = stateOf(n);
    const closed = {
      ...st,
      incidents: st.incidents.map((i) => ({ ...i, phase: 'closed' as const, closedAt: '2026-11-21T03:45:00.000Z' })),
    };
    const replayed = planRemediation(
      {
        ...factsFor(health('ecc-uncorrected', { minute: 0 }), n),
        state: closed,
        now: new Date('2026-11-21T04:00:00Z'),
      },
      P,
    );
    expect(replayed).toMatchObject({ kind: 'noop', phase: 'skipped' });
    expect(renderSteps(replayed)).toEqual([]);
    // even once the occurrence and the event id have aged out of the bounded history
    const forgotten = planRemediation(
      {
        ...factsFor(health('ecc-uncorrected', { minute: 0 }), n),
        state: { ...closed, recent: [], handled: [] },
        now: new Date('2026-11-21T04:00:00Z'),
      },
      P,
    );
    expect(forgotten).toMatchObject({ kind: 'noop', phase: 'skipped' });
    expect(renderSteps(forgotten)).toEqual([]);
    expect(forgotten.reason).toContain('stale replay');
    const fresh = planRemediation({ ...factsFor(health('ecc-uncorrected', { minute: 50 }), n), state: closed }, P);
    expect(fresh.kind).toBe('act');
  });

  it('starts one rung higher when a hardware fault returns soon after a restore', async () => {
    const n = node();
    const st = stateOf(n);
    const closedIncident = planRemediation(factsFor(xid(48, { minute: 0 }), n), P).nextState.incidents[0]!;
    const state = {
      ...st,
      incidents: [{ ...closedIncident, phase: 'closed' as const, closedAt: '2026-11-21T04:00:00.000Z' }],
    };
    const plan = planRemediation({ ...factsFor(xid(48, { minute: 90 }), n), state }, P);
    expect(plan.action).toBe('reboot-node');
    expect(kinds(plan)).toContain('cordon');
  });
});

describe('planRemediation: blast radius', () => {
  it('acts on the allowed share of a pool in a storm and asks for approval for the rest, first come first served', async () => {
    const names = Array.from({ length: 6 }, (_, i) => `gpu-a100-0${i}`);
    const out: string[] = [];
    const results = names.map((name, i) => {
      const plan = planRemediation(
        factsFor(xid(79, { node: name, minute: i }), node(name), {
          pool: pool({ nodes: 10, quarantinedInWindow: out.length, quarantinedNodes: [...out] }),
        }),
        P,
      );
      if (plan.kind === 'act') out.push(name);
      return plan;
    });
    expect(results.map((p) => p.kind)).toEqual(['act', 'act', 'approval', 'approval', 'approval', 'approval']);
    const held = results[2]!;
    expect(held).toMatchObject({ phase: 'awaiting-approval', action: 'drain-node' });
    expect(kinds(held)).toEqual(expect.arrayContaining(['approval', 'notify']));
    expect(kinds(held)).not.toEqual(expect.arrayContaining(['taint']));
    expect(held.nextState.phase).toBe('awaiting-approval');
    expect(held.reason).toContain('2 of 10 nodes');
  });

  it('lets a person-approved incident past the limit', async () => {
    const plan = planRemediation(
      factsFor(xid(79), node(), { pool: pool({ quarantinedInWindow: 5 }), approved: true }),
      P,
    );
    expect(plan.kind).toBe('act');
  });

  it('does not count a node twice: a second fault on a node already out is not held back', async () => {
    const first = planRemediation(factsFor(xid(48, { gpu: 0 }), node()), P);
    const after = await apply(node(), STANDARD_PODS, first);
    const plan = planRemediation(
      factsFor(xid(79, { gpu: 2 }), after.node, {
        pool: pool({ quarantinedInWindow: 2, quarantinedNodes: ['gpu-a100-07', 'x'] }),
      }),
      P,
    );
    expect(plan.kind).toBe('act');
  });

  it('always allows one node in a small pool, and none when a limit is 0', async () => {
    expect(planRemediation(factsFor(xid(79), node(), { pool: pool({ nodes: 2 }) }), P).kind).toBe('act');
    const strict = { ...P, blastRadius: { ...P.blastRadius, maxCount: 0 } };
    expect(planRemediation(factsFor(xid(79), node(), { pool: pool({ nodes: 100 }) }), strict).kind).toBe('approval');
  });

  it('never holds back restarts and observations', async () => {
    expect(
      planRemediation(
        factsFor(xid(94, { pods: [{ uid: 'uid-train-0' }] }), node(), { pool: pool({ quarantinedInWindow: 9 }) }),
        P,
      ).kind,
    ).toBe('act');
  });
});

describe('planRemediation: approvals are asked once', () => {
  it('counts repeats of a held-back fault without asking again', async () => {
    const full = pool({ quarantinedInWindow: 2, quarantinedNodes: ['x', 'y'] });
    const first = planRemediation(factsFor(xid(79, { minute: 0 }), node(), { pool: full }), P);
    const w = await apply(node(), STANDARD_PODS, first);
    const again = planRemediation(factsFor(xid(79, { minute: 3 }), w.node, { pool: full }), P);
    expect(first.kind).toBe('approval');
    expect(again).toMatchObject({ kind: 'noop', action: 'drain-node' });
    expect(kinds(again)).toEqual(['annotate']);
    expect(again.nextState.incidents[0]).toMatchObject({ phase: 'awaiting-approval', count: 2 });
    // once there is room, the next occurrence acts
    const room = planRemediation(
      factsFor(xid(79, { minute: 6 }), (await apply(w.node, w.pods, again)).node, { pool: pool() }),
      P,
    );
    expect(room.kind).toBe('act');
  });
});

describe('poolFacts', () => {
  it('counts nodes out now and nodes back within the window, not held-back ones', async () => {
    const out = (
      await apply(node('n-out'), STANDARD_PODS, planRemediation(factsFor(xid(79, { node: 'n-out' }), node('n-out')), P))
    ).node;
    const heldPlan = planRemediation(
      factsFor(xid(79, { node: 'n-held' }), node('n-held'), { pool: pool({ quarantinedInWindow: 9 }) }),
      P,
    );
    const held = (await apply(node('n-held'), STANDARD_PODS, heldPlan)).node;
    const backState = stateOf(out);
    const back = {
      ...backState,
      phase: 'healthy' as const,
      incidents: backState.incidents.map((i) => ({
        ...i,
        phase: 'closed' as const,
        closedAt: '2026-11-21T03:30:00.000Z',
      })),
    };
    const members = [
      { name: 'n-out', state: stateOf(out) },
      { name: 'n-held', state: stateOf(held) },
      { name: 'n-back', state: back },
      { name: 'n-fine', state: stateOf(node('n-fine')) },
    ];
    expect(poolFacts(P, 'a100', members, new Date('2026-11-21T04:00:00Z'))).toEqual({
      name: 'a100',
      nodes: 4,
      quarantinedInWindow: 2,
      quarantinedNodes: ['n-back', 'n-out'],
    });
    expect(poolFacts(P, 'a100', members, new Date('2026-11-21T04:31:00Z')).quarantinedNodes).toEqual(['n-out']);
  });
});
