/**
 * A reset destroys every MIG instance of the GPU (mig-restore.ts): the repaired GPU returns only once
 * mig-manager, restarted on the node, applied the node's config again and the node agent lists the
 * GPU's instances. The decider, table by table; then the sweep through the real applier (testing.ts).
 */
import { describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION, type GpuActionState, type MigInventory } from '../../../events/index.ts';
import {
  apply,
  at,
  factsFor,
  gpu,
  node,
  pod,
  pool,
  stateOf,
  xid,
  type World,
  requested,
  answer,
  PASSED_PROBE,
} from '../testing.ts';
import { stepMigRestore } from './mig-restore.ts';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { STATE_LABEL, QUARANTINED_GPUS_ANNOTATION, type Incident } from './state.ts';
import { planSweep } from './sweep.ts';
import type { NodeFacts, Plan } from './types.ts';

const P = DEFAULT_POLICY;
const G3 = gpu(3).uuid;
const MANAGER = pod('nvidia-mig-manager-q8x2v', {
  namespace: 'gpu-operator',
  daemonSet: true,
  requestsGpu: false,
  labels: { app: 'nvidia-mig-manager' },
});
const seven = Array.from({ length: 7 }, (_, k) => ({ profile: '1g.10gb', gi: k + 7, start: k, size: 1, inUse: false }));

function inventory(minute: number, instances: MigInventory['gpus'][number]['instances']): Record<string, string> {
  const inv: MigInventory = {
    v: 1,
    at: at(minute),
    gpus: [
      { index: 3, uuid: G3, instances },
      { index: 0, uuid: gpu(0).uuid, instances: seven },
    ],
  };
  return { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inv) };
}
const MIG_1G = 'nvidia.com/mig-1g.10gb';
const MIG_LABELS = { 'nvidia.com/mig.config': 'all-1g.10gb', 'nvidia.com/mig.config.state': 'success' };
const incident = (o: Partial<Incident> = {}): Incident => ({
  key: `n/${G3}/xid-48`,
  trigger: 'xid-48',
  xid: 48,
  gpu: G3,
  scope: 'gpu',
  action: 'quarantine-gpu',
  ladder: ['quarantine-gpu', 'reboot-node'],
  level: 0,
  phase: 'quarantined',
  firstAt: at(0),
  lastAt: at(0),
  count: 1,
  workloads: [],
  pods: [],
  since: at(0),
  eventId: 'e',
  outAt: at(0),
  resetAt: at(2),
  ...o,
});
const facts = (labels: Record<string, string>, annotations: Record<string, string>) => ({ labels, annotations });

describe('stepMigRestore', () => {
  it.each([
    ['a GPU the agent does not list (not in MIG mode)', incident(), facts({}, {}), 'ready'],
    [
      'a node whose inventory lists other GPUs only',
      incident({ gpu: gpu(5).uuid }),
      facts(MIG_LABELS, inventory(3, [])),
      'ready',
    ],
    ['an inventory written before the reset', incident(), facts(MIG_LABELS, inventory(1, seven)), 'wait'],
    ['its instances listed after the reset', incident(), facts(MIG_LABELS, inventory(3, seven)), 'ready'],
    ['the GPU listed empty after the reset', incident(), facts(MIG_LABELS, inventory(3, [])), 'restart'],
    [
      'the GPU listed empty after the reset, its MIG mode unknown (never read as a GPU without MIG)',
      incident(),
      facts(MIG_LABELS, {
        [MIG_INVENTORY_ANNOTATION]: JSON.stringify({
          v: 1,
          at: at(3),
          gpus: [{ index: 3, uuid: G3, instances: [], migModeUnknown: 'NVML did not say whether it is in MIG mode' }],
        }),
      }),
      'restart',
    ],
    [
      'after the restart, still the empty inventory',
      incident({ migRestartedAt: at(4) }),
      facts(MIG_LABELS, inventory(3, [])),
      'wait',
    ],
    [
      'after the restart, mig-manager still pending',
      incident({ migRestartedAt: at(4) }),
      facts({ ...MIG_LABELS, 'nvidia.com/mig.config.state': 'pending' }, inventory(5, seven)),
      'wait',
    ],
    [
      'after the restart, instances listed by a newer inventory',
      incident({ migRestartedAt: at(4) }),
      facts(MIG_LABELS, inventory(5, seven)),
      'ready',
    ],
    [
      'after the restart, mig-manager failed',
      incident({ migRestartedAt: at(4) }),
      facts({ ...MIG_LABELS, 'nvidia.com/mig.config.state': 'failed' }, inventory(5, [])),
      'failed',
    ],
  ] as const)('%s: %s', (_, i, node, kind) => {
    expect(stepMigRestore(i, node, [MANAGER], new Date(at(5)), P).kind).toBe(kind);
  });

  it('restarts the mig-manager pod on the node, and records when', () => {
    const s = stepMigRestore(
      incident(),
      facts(MIG_LABELS, inventory(3, [])),
      [MANAGER, pod('train-0')],
      new Date(at(4)),
      P,
    );
    expect(s).toMatchObject({ kind: 'restart', pods: [MANAGER], incident: { migRestartedAt: at(4) } });
    expect(s.kind === 'restart' && s.why).toContain(
      'restarting gpu-operator/nvidia-mig-manager-q8x2v so it applies all-1g.10gb again',
    );
    const none = stepMigRestore(incident(), facts(MIG_LABELS, inventory(3, [])), [], new Date(at(4)), P);
    expect(none).toMatchObject({ kind: 'restart', pods: [] });
    expect(none.kind === 'restart' && none.why).toContain(
      'no mig-manager pod was found on the node in gpu-operator (app=nvidia-mig-manager)',
    );
  });

  it('records the inventory that showed the instances back', () => {
    expect(
      stepMigRestore(
        incident({ migRestartedAt: at(4) }),
        facts(MIG_LABELS, inventory(5, seven)),
        [],
        new Date(at(6)),
        P,
      ),
    ).toMatchObject({ kind: 'ready', incident: { migBackAt: at(5) }, why: expect.stringContaining('(7×1g.10gb)') });
  });

  it('gives up after repair.answerTimeoutMinutes: no new inventory after the reset, or no instances after the restart', () => {
    const t = P.repair.answerTimeoutMinutes;
    expect(
      stepMigRestore(incident(), facts(MIG_LABELS, inventory(1, seven)), [], new Date(at(2 + t)), P),
    ).toMatchObject({ kind: 'failed', why: expect.stringContaining('was not written again') });
    const late = stepMigRestore(
      incident({ migRestartedAt: at(4) }),
      facts(MIG_LABELS, inventory(3, [])),
      [],
      new Date(at(4 + t)),
      P,
    );
    expect(late).toMatchObject({
      kind: 'failed',
      why: expect.stringContaining(`did not come back within ${t} min of restarting mig-manager`),
    });
  });
});

describe('stepMigRestore says why it waits', () => {
  const t = P.repair.answerTimeoutMinutes;
  const stamped = (minute: number, checked: number, instances: MigInventory['gpus'][number]['instances']) => {
    const inv = JSON.parse(inventory(minute, instances)[MIG_INVENTORY_ANNOTATION]!) as MigInventory;
    return { [MIG_INVENTORY_ANNOTATION]: JSON.stringify({ ...inv, checked: at(checked) }) };
  };
  const why = (s: ReturnType<typeof stepMigRestore>) => (s.kind === 'wait' ? s.why : `not waiting: ${s.kind}`);

  it('names what it waits for, at every wait', () => {
    const before = stepMigRestore(incident(), facts(MIG_LABELS, inventory(1, seven)), [], new Date(at(5)), P);
    expect(why(before)).toContain(`the node agent's MIG inventory was last written at ${at(1)}, before the reset`);
    const unreadable = stepMigRestore(
      incident(),
      facts(MIG_LABELS, { [MIG_INVENTORY_ANNOTATION]: '{' }),
      [],
      new Date(at(5)),
      P,
    );
    expect(why(unreadable)).toContain(`${MIG_INVENTORY_ANNOTATION} is not JSON`);
    const restarted = incident({ migRestartedAt: at(4) });
    const empty = stepMigRestore(restarted, facts(MIG_LABELS, inventory(3, [])), [], new Date(at(5)), P);
    expect(why(empty)).toContain(`waiting for mig-manager, restarted at ${at(4)}, to apply all-1g.10gb again`);
    const pending = { ...MIG_LABELS, 'nvidia.com/mig.config.state': 'pending' };
    expect(why(stepMigRestore(restarted, facts(pending, inventory(5, seven)), [], new Date(at(6)), P))).toContain(
      'nvidia.com/mig.config.state=pending',
    );
    // The words do not move with the clock: said once, not rewritten on every sweep.
    expect(why(stepMigRestore(restarted, facts(MIG_LABELS, inventory(3, [])), [], new Date(at(6)), P))).toBe(
      why(empty),
    );
  });

  it('says when the node agent stopped confirming its inventory, rather than wait as if it were coming', () => {
    // Confirmed last at minute 1, the reset at 2: by minute 12 no confirmation for over 10 min (five missed).
    const patient = { repair: { ...P.repair, answerTimeoutMinutes: 30 } };
    const s = stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 1, seven)), [], new Date(at(12)), patient);
    expect(why(s)).toMatch(
      /the node agent last confirmed its MIG inventory at .*, over 10 min ago \(is the agent running/,
    );
    // Past the timeout the repair fails as before, and says the agent went quiet.
    const failed = stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 1, seven)), [], new Date(at(2 + t)), P);
    expect(failed).toMatchObject({ kind: 'failed', why: expect.stringContaining('over 10 min ago (is the agent') });
  });

  it('takes an inventory the agent confirmed after the reset as read after it, though unchanged since before', () => {
    // A GPU already empty before its reset (an earlier reset emptied it, or a person destroyed its instances) reads
    // the same after it: the agent writes nothing new, only confirms. By `at` alone the restore waited out
    // repair.answerTimeoutMinutes and failed, climbing to a node reboot, where mig-manager's restart was all it took.
    expect(stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 3, [])), [MANAGER], new Date(at(5)), P).kind).toBe(
      'restart',
    );
    expect(
      stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 3, [])), [MANAGER], new Date(at(2 + t)), P).kind,
    ).toBe('restart');
    // Its instances read after the reset as before: nothing to wait for.
    expect(stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 3, seven)), [], new Date(at(5)), P).kind).toBe(
      'ready',
    );
    // Confirmed before the reset only: still waited for.
    expect(stepMigRestore(incident(), facts(MIG_LABELS, stamped(1, 1, seven)), [], new Date(at(5)), P).kind).toBe(
      'wait',
    );
  });
});

describe('stepMigRestore with an inventory it cannot read', () => {
  // Not JSON, or not the contract (an agent newer than these functions adds a field the strict schema refuses): the
  // annotation is there, so the agent lists MIG GPUs, and what it says of this one is unknown — never "not MIG".
  const unreadable = { [MIG_INVENTORY_ANNOTATION]: JSON.stringify({ v: 1, at: at(3), gpus: [{ index: 3 }] }) };
  const t = P.repair.answerTimeoutMinutes;

  it('waits instead of returning the GPU, and past the timeout fails naming the problem', () => {
    expect(stepMigRestore(incident(), facts(MIG_LABELS, unreadable), [MANAGER], new Date(at(5)), P).kind).toBe('wait');
    expect(
      stepMigRestore(incident(), facts(MIG_LABELS, { [MIG_INVENTORY_ANNOTATION]: '{' }), [], new Date(at(2 + t)), P),
    ).toMatchObject({ kind: 'failed', why: expect.stringContaining(`${MIG_INVENTORY_ANNOTATION} is not JSON`) });
  });

  it('after the restart too: not back until an inventory it reads lists the instances', () => {
    const restarted = incident({ migRestartedAt: at(4) });
    expect(stepMigRestore(restarted, facts(MIG_LABELS, unreadable), [], new Date(at(5)), P).kind).toBe('wait');
    expect(stepMigRestore(restarted, facts(MIG_LABELS, unreadable), [], new Date(at(4 + t)), P)).toMatchObject({
      kind: 'failed',
      why: expect.stringContaining('does not match the contract'),
    });
  });
});

describe('the sweep: a reset MIG GPU returns only with its instances', () => {
  const agentWrites = (w: World, minute: number, instances: MigInventory['gpus'][number]['instances']): World => ({
    ...w,
    node: { ...w.node, annotations: { ...w.node.annotations, ...inventory(minute, instances) } },
  });
  async function sweep(w: World, minute: number): Promise<{ plan: Plan | undefined; world: World }> {
    const plan = planSweep(
      { now: new Date(at(minute)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
      P,
    ).plans[0];
    // The test's allocatable stands: the fake plugin counts whole GPUs, not the MIG devices of one.
    return { plan, world: plan ? await apply(w.node, w.pods, plan, new Set(), 'ignores') : w };
  }
  const quarantined = (w: World) => JSON.parse(w.node.annotations[QUARANTINED_GPUS_ANNOTATION] ?? '[]') as string[];

  it('restarts mig-manager after the passed probe, keeps the GPU fenced while it is empty, and restores it once the agent lists its instances', async () => {
    const mig = { ...node().capacity, [MIG_1G]: '14' };
    const n0: NodeFacts = {
      ...node(),
      labels: { ...node().labels, ...MIG_LABELS },
      annotations: inventory(0, seven),
      capacity: mig,
      allocatable: mig,
    };
    const e = xid(48, { gpu: 3 });
    const plan0 = planRemediation(factsFor(e, n0, { pods: [MANAGER], now: new Date(e.detail.observedAt) }), P);
    let w: World = { node: n0, pods: [MANAGER] };
    w = { ...w, node: (await apply(w.node, w.pods, plan0)).node };
    // The agent lists the GPU in the fence file and its 7 instances leave the allocatable: its fence
    // is verified, so its reset may be asked for (reset-gate.ts).
    w = { ...w, node: { ...w.node, allocatable: { ...w.node.allocatable, [MIG_1G]: '7' } } };
    const fence = requested(w).find((r) => r.action === 'fence')!;
    const listed: GpuActionState = {
      state: 'done',
      action: 'fence',
      gpuUuid: G3,
      at: at(0),
      fence: { listed: true, before: [] },
    };
    w = (await sweep(answer(w, fence.id, listed), 1)).world;
    const reset = requested(w).find((r) => r.action === 'reset')!;
    w = agentWrites(answer(w, reset.id, { state: 'done', action: 'reset', gpuUuid: G3, at: at(2) }), 2, []);
    w = (await sweep(w, 2)).world;
    const probe = requested(w).find((r) => r.action === 'probe')!;
    w = answer(w, probe.id, { state: 'done', action: 'probe', gpuUuid: G3, at: at(3), probe: PASSED_PROBE });
    // The probe passed, but the GPU is empty: mig-manager is restarted, the GPU stays out.
    const restart = await sweep(w, 4);
    expect(restart.plan?.evictions).toEqual([{ namespace: 'gpu-operator', name: MANAGER.name, uid: MANAGER.uid }]);
    expect(restart.plan?.action).not.toBe('restore');
    expect(restart.plan?.reason).toContain('the reset destroyed its MIG instances');
    w = restart.world;
    expect(w.node.labels[STATE_LABEL]).toBe('quarantined');
    expect(quarantined(w)).toEqual([G3]);
    expect(requested(w).map((r) => r.action)).toContain('fence');
    expect(stateOf(w.node).incidents[0]).toMatchObject({ phase: 'quarantined', migRestartedAt: at(4) });
    // Nothing changes while the agent still lists it empty; why it waits is recorded on the incident, once.
    const waiting = await sweep(w, 5);
    expect(waiting.plan?.action ?? 'none').not.toBe('restore');
    expect(quarantined(waiting.world)).toEqual([G3]);
    const said = `waiting for mig-manager, restarted at ${at(4)}, to apply all-1g.10gb again`;
    expect(waiting.plan?.reason).toContain(said);
    expect(stateOf(waiting.world.node).incidents[0]?.migWait).toContain(said);
    expect((await sweep(waiting.world, 6)).plan).toBeUndefined();
    // mig-manager applied the config; the agent lists the instances: back in service.
    const back = await sweep(agentWrites(waiting.world, 6, seven), 7);
    expect(back.plan).toMatchObject({ action: 'restore', phase: 'restored' });
    expect(back.plan?.notices.map((x) => x.text).join(' ')).toContain('its MIG instances applied again by mig-manager');
    expect(back.world.node.labels[STATE_LABEL]).toBe('healthy');
    expect(quarantined(back.world)).toEqual([]);
    expect(stateOf(back.world.node).incidents[0]).toMatchObject({
      phase: 'closed',
      probedAt: at(3),
      migRestartedAt: at(4),
      migBackAt: at(6),
    });
  });
});
