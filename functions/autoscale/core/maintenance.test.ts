import { describe, expect, it } from 'vitest';
import {
  planMaintenance as planned,
  type CapacityWarning,
  type MaintenanceFacts,
  type TrackedNode,
} from './maintenance.ts';

const MIN = 60_000;
const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const reboot = (deadline: number, node = 'n-a'): CapacityWarning => ({
  node,
  instanceId: `i-${node}`,
  kind: 'maintenance',
  type: 'SystemMaintenance.Reboot',
  eventId: `e-${node}`,
  deadline,
});
const tracked = (deadline: number, over: Partial<TrackedNode> = {}): TrackedNode => ({
  eventId: 'e-n-a',
  type: 'SystemMaintenance.Reboot',
  kind: 'maintenance',
  instanceId: 'i-n-a',
  deadline,
  since: T0,
  replacement: true,
  ownCordon: true,
  ...over,
});

function facts(over: Partial<MaintenanceFacts> = {}): MaintenanceFacts {
  return {
    now: T0,
    policy: { drainBeforeMinutes: 30, prepareMinutes: 60 },
    warnings: [],
    tracked: {},
    nodes: new Map([
      ['n-a', { pool: 'np-a', ready: true, gpus: true }],
      ['n-b', { pool: 'np-a', ready: true, gpus: true }],
    ]),
    pools: [{ id: 'np-a', desired: 2, max: 4 }],
    ...over,
  };
}

/** The members with n-a cordoned, as a tracked node of ours is. */
const cordonedA = (): MaintenanceFacts['nodes'] =>
  new Map([
    ['n-a', { pool: 'np-a', ready: true, gpus: true, unschedulable: true }],
    ['n-b', { pool: 'np-a', ready: true, gpus: true }],
  ]);

/** Each member on the instance its name says (`i-<node>`), unless the test gives another. */
const planMaintenance = (f: MaintenanceFacts) =>
  planned({ ...f, nodes: new Map([...f.nodes].map(([n, m]) => [n, { instanceId: `i-${n}`, ...m }])) });

const kinds = (f: MaintenanceFacts) => planMaintenance(f).steps.map((s) => `${s.kind} ${s.node}`);

describe('planMaintenance', () => {
  it('does nothing for an event 2 h ahead until 90 min before it (prepare 60 + drain 30)', () => {
    expect(kinds(facts({ warnings: [reboot(T0 + 120 * MIN)] }))).toEqual([]);
    expect(kinds(facts({ now: T0 + 29 * MIN, warnings: [reboot(T0 + 120 * MIN)] }))).toEqual([]);
  });

  it('prepares a node inside the window: cordon and one more node of its pool, capacity first', () => {
    const plan = planMaintenance(facts({ now: T0 + 30 * MIN, warnings: [reboot(T0 + 120 * MIN)] }));
    expect(plan.steps.map((s) => s.kind)).toEqual(['prepare']);
    expect(plan.grow).toEqual({ 'np-a': { from: 2, to: 3, nodes: ['n-a'] } });
  });

  it('buys no replacement above the pool max, and says so; the node is still prepared', () => {
    const plan = planMaintenance(
      facts({
        now: T0 + 30 * MIN,
        warnings: [reboot(T0 + 120 * MIN)],
        pools: [{ id: 'np-a', desired: 2, max: 2 }],
      }),
    );
    expect(plan.grow).toEqual({});
    expect(plan.refused).toEqual([{ node: 'n-a', pool: 'np-a', why: 'node pool np-a is at its max (2)' }]);
    expect(plan.steps.map((s) => s.kind)).toEqual(['prepare']);
  });

  it('counts two warned nodes of one pool against its max together', () => {
    const plan = planMaintenance(
      facts({
        now: T0 + 30 * MIN,
        warnings: [reboot(T0 + 120 * MIN, 'n-a'), reboot(T0 + 120 * MIN, 'n-b')],
        pools: [{ id: 'np-a', desired: 2, max: 3 }],
      }),
    );
    expect(plan.grow).toEqual({ 'np-a': { from: 2, to: 3, nodes: ['n-a'] } });
    expect(plan.refused.map((r) => r.node)).toEqual(['n-b']);
  });

  it('waits for the replacement before draining, and drains once it is Ready with its GPUs', () => {
    const d = T0 + 120 * MIN;
    const waiting = facts({
      now: T0 + 40 * MIN,
      warnings: [reboot(d)],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 0 }) },
      nodes: cordonedA(),
      pools: [{ id: 'np-a', desired: 3, max: 4 }],
    });
    expect(kinds(waiting)).toEqual([]);
    const joined = (m: { ready: boolean; gpus?: boolean }) =>
      new Map([...cordonedA(), ['n-c', { pool: 'np-a', ...m }]]);
    expect(kinds({ ...waiting, nodes: joined({ ready: true, gpus: false }) })).toEqual([]);
    expect(kinds({ ...waiting, nodes: joined({ ready: true }) })).toEqual([]);
    expect(kinds({ ...waiting, nodes: joined({ ready: false, gpus: true }) })).toEqual([]);
    expect(kinds({ ...waiting, nodes: joined({ ready: true, gpus: true }) })).toEqual(['drain n-a']);
  });

  it('drains early by identity, not a count: Ready members that were there when it was asked are no replacement', () => {
    const d = T0 + 120 * MIN;
    // The size lowered back to 2 in the ACK console (or n-b back from NotReady): 2 of 2 Ready with GPUs, none new.
    const f = facts({
      now: T0 + 40 * MIN,
      warnings: [reboot(d)],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 0 }) },
      nodes: cordonedA(),
      pools: [{ id: 'np-a', desired: 2, max: 4 }],
    });
    expect(kinds(f)).toEqual([]);
    // A record kept before `before` was: no node is known to be its replacement.
    const legacy = new Map([...cordonedA(), ['n-c', { pool: 'np-a', ready: true, gpus: true }]]);
    expect(kinds({ ...f, tracked: { 'n-a': tracked(d) }, nodes: legacy })).toEqual([]);
  });

  it('takes one new node for one node moved off: two prepared together wait for two', () => {
    const d = T0 + 120 * MIN;
    const b = { ...tracked(d, { before: ['n-a', 'n-b'], owed: 0 }), eventId: 'e-n-b', instanceId: 'i-n-b' };
    const nodes = new Map([
      ['n-a', { pool: 'np-a', ready: true, gpus: true, unschedulable: true }],
      ['n-b', { pool: 'np-a', ready: true, gpus: true, unschedulable: true }],
      ['n-c', { pool: 'np-a', ready: true, gpus: true }],
    ]);
    const f = facts({
      now: T0 + 40 * MIN,
      warnings: [reboot(d), reboot(d, 'n-b')],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 0 }), 'n-b': b },
      nodes,
      pools: [{ id: 'np-a', desired: 4, max: 4 }],
    });
    expect(kinds(f)).toEqual(['drain n-a']);
    nodes.set('n-d', { pool: 'np-a', ready: true, gpus: true });
    expect(kinds(f)).toEqual(['drain n-a', 'drain n-b']);
  });

  it('takes no node a scale-out was still owed when the replacement was asked for the replacement', () => {
    const d = T0 + 120 * MIN;
    // Asked while the pool (desired 3) still waited for a scale-out's node: desired 4, n-a and n-b its members then.
    const asked = planMaintenance(
      facts({ now: T0 + 30 * MIN, warnings: [reboot(d)], pools: [{ id: 'np-a', desired: 3, max: 4 }] }),
    );
    expect(asked.steps[0]).toMatchObject({ kind: 'prepare', tracked: { before: ['n-a', 'n-b'], owed: 1 } });
    const nodes = new Map([...cordonedA(), ['n-c', { pool: 'np-a', ready: true, gpus: true }]]);
    const f = facts({
      now: T0 + 40 * MIN,
      warnings: [reboot(d)],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 1 }) },
      nodes,
      pools: [{ id: 'np-a', desired: 4, max: 4 }],
    });
    expect(kinds(f)).toEqual([]);
    nodes.set('n-d', { pool: 'np-a', ready: true, gpus: true });
    expect(kinds(f)).toEqual(['drain n-a']);
    // A record kept before `owed` was: whose the new nodes are is unknown; drained by its deadline.
    expect(kinds({ ...f, tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'] }) } })).toEqual([]);
    expect(kinds({ ...f, now: d - 30 * MIN, tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'] }) } })).toEqual([
      'drain n-a',
    ]);
  });

  it("records the pool's members when it asks the replacement, none when it asks none", () => {
    const d = T0 + 120 * MIN;
    const plan = planMaintenance(facts({ now: T0 + 30 * MIN, warnings: [reboot(d)] }));
    expect(plan.steps[0]).toMatchObject({ kind: 'prepare', tracked: { before: ['n-a', 'n-b'], owed: 0 } });
    const full = planMaintenance(
      facts({ now: T0 + 30 * MIN, warnings: [reboot(d)], pools: [{ id: 'np-a', desired: 2, max: 2 }] }),
    );
    expect(full.steps[0]).toMatchObject({ kind: 'prepare', tracked: { replacement: false } });
    expect((full.steps[0] as { tracked: TrackedNode }).tracked.before).toBeUndefined();
  });

  it('drains at the drain deadline (30 min before) even when no replacement came', () => {
    const d = T0 + 120 * MIN;
    const f = facts({
      now: d - 30 * MIN,
      warnings: [reboot(d)],
      tracked: { 'n-a': tracked(d) },
      nodes: cordonedA(),
      pools: [{ id: 'np-a', desired: 3, max: 4 }],
    });
    expect(kinds(f)).toEqual(['drain n-a']);
    expect(kinds({ ...f, now: d - 31 * MIN })).toEqual([]);
  });

  it('cordons a node recorded as ours that is schedulable (its cordon never made), before its drain', () => {
    const d = T0 + 120 * MIN;
    const f = facts({ now: d - 30 * MIN, warnings: [reboot(d)], tracked: { 'n-a': tracked(d) } });
    expect(kinds(f)).toEqual(['cordon n-a', 'drain n-a']);
    // Not ours, or remediation's by now: left as it is.
    expect(kinds({ ...f, tracked: { 'n-a': tracked(d, { ownCordon: false }) } })).toEqual(['drain n-a']);
  });

  it('drains a spot instance at its interruption notice, with its replacement asked at once', () => {
    const plan = planMaintenance(
      facts({
        warnings: [{ ...reboot(T0 + 5 * MIN), kind: 'preemption', type: 'Recycling', eventId: 'spot:i-n-a' }],
      }),
    );
    expect(plan.steps.map((s) => `${s.kind} ${s.node}`)).toEqual(['prepare n-a', 'drain n-a']);
    expect(plan.grow['np-a']?.to).toBe(3);
  });

  it('returns a node once its event is over and it is Ready again; not while it reboots', () => {
    const d = T0 + 120 * MIN;
    const f = facts({ now: d + 5 * MIN, warnings: [], tracked: { 'n-a': tracked(d) } });
    expect(kinds(f)).toEqual(['return n-a']);
    const rebooting = new Map(f.nodes);
    rebooting.set('n-a', { pool: 'np-a', ready: false, unschedulable: true });
    expect(kinds({ ...f, nodes: rebooting })).toEqual(['wait n-a']);
  });

  it('keeps a node back Ready without its GPUs cordoned and tells a person once; the same when unknown', () => {
    const d = T0 + 120 * MIN;
    const back = (m: { gpus?: boolean; unschedulable?: boolean }, over: Partial<TrackedNode> = {}) =>
      planMaintenance(
        facts({
          now: d + 5 * MIN,
          warnings: [],
          tracked: { 'n-a': tracked(d, over) },
          nodes: new Map([...cordonedA(), ['n-a', { pool: 'np-a', ready: true, unschedulable: true, ...m }]]),
        }),
      ).steps;
    expect(back({ gpus: false })).toEqual([
      expect.objectContaining({
        kind: 'keep',
        node: 'n-a',
        tell: true,
        why: expect.stringMatching(/none of its type/),
      }),
    ]);
    expect(back({ gpus: false }, { told: d })).toEqual([expect.objectContaining({ kind: 'keep', tell: false })]);
    expect(back({})).toEqual([
      expect.objectContaining({ kind: 'keep', tell: true, why: expect.stringMatching(/unknown.*cannot be read/) }),
    ]);
    expect(back({ gpus: true })).toEqual([expect.objectContaining({ kind: 'return', node: 'n-a' })]);
    // Uncordoned by someone meanwhile: theirs now, only forgotten.
    expect(back({ gpus: false, unschedulable: false })).toEqual([
      expect.objectContaining({ kind: 'forget', node: 'n-a' }),
    ]);
  });

  it('tells a person once when a node is not Ready again 15 min after its event is over; keeps it cordoned', () => {
    const d = T0 + 120 * MIN;
    const down = (now: number, over: Partial<TrackedNode> = {}, m: { unschedulable?: boolean } = {}) =>
      planMaintenance(
        facts({
          now,
          warnings: [],
          tracked: { 'n-a': tracked(d, over) },
          nodes: new Map([...cordonedA(), ['n-a', { pool: 'np-a', ready: false, unschedulable: true, ...m }]]),
        }),
      ).steps;
    // First seen over while it restarts: when is recorded, nobody is told yet.
    expect(down(d + 5 * MIN)).toEqual([expect.objectContaining({ kind: 'wait', node: 'n-a', over: d + 5 * MIN })]);
    expect(down(d + 19 * MIN, { over: d + 5 * MIN })).toEqual([
      expect.not.objectContaining({ over: expect.anything() }),
    ]);
    // Still not Ready 15 min on: kept cordoned, a person told, once.
    expect(down(d + 20 * MIN, { over: d + 5 * MIN })).toEqual([
      expect.objectContaining({ kind: 'keep', tell: true, why: expect.stringMatching(/not Ready again/) }),
    ]);
    expect(down(d + 90 * MIN, { over: d + 5 * MIN, told: d + 20 * MIN })).toEqual([
      expect.objectContaining({ kind: 'keep', tell: false }),
    ]);
    // Uncordoned by someone meanwhile: theirs now, only forgotten.
    expect(down(d + 20 * MIN, { over: d + 5 * MIN }, { unschedulable: false })).toEqual([
      expect.objectContaining({ kind: 'forget', node: 'n-a' }),
    ]);
  });

  it("never lifts a cordon it did not set: a person's, or one remediation holds by then", () => {
    const d = T0 + 120 * MIN;
    const theirs = facts({ now: d + 5 * MIN, warnings: [], tracked: { 'n-a': tracked(d, { ownCordon: false }) } });
    expect(kinds(theirs)).toEqual(['forget n-a']);
    const held = new Map(theirs.nodes);
    held.set('n-a', { pool: 'np-a', ready: true, heldBy: 'remediation holds it (gpu-reflex.io/state=quarantined)' });
    expect(kinds({ ...theirs, tracked: { 'n-a': tracked(d) }, nodes: held })).toEqual(['forget n-a']);
    // Prepared while already cordoned: not ours.
    const cordoned = new Map(theirs.nodes);
    cordoned.set('n-a', { pool: 'np-a', ready: true, gpus: true, unschedulable: true });
    const plan = planMaintenance(facts({ now: T0 + 30 * MIN, warnings: [reboot(d)], nodes: cordoned }));
    expect(plan.steps[0]).toMatchObject({ kind: 'prepare', tracked: { ownCordon: false } });
  });

  it('returns nothing while the events could not be read (unknown is not "over")', () => {
    const d = T0 + 120 * MIN;
    const after = kinds(facts({ now: d + 5 * MIN, warnings: undefined, tracked: { 'n-a': tracked(d) } }));
    expect(after).not.toContain('return n-a');
    // …and a tracked node past its drain deadline keeps being drained on its stored deadline.
    expect(
      kinds(facts({ now: d - 10 * MIN, warnings: undefined, tracked: { 'n-a': tracked(d) }, nodes: cordonedA() })),
    ).toEqual(['drain n-a']);
  });

  it('keeps a node prepared while its event is listed, whatever other event of it ECS lists beside it', () => {
    const d = T0 + 120 * MIN;
    // A second event of the same instance, a day later, listed after the one the node was prepared for.
    const later = { ...reboot(d + 24 * 60 * MIN), type: 'SystemMaintenance.Redeploy', eventId: 'e-n-a-2' };
    const f = facts({
      now: d - 60 * MIN,
      warnings: [reboot(d), later],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 0 }) },
      nodes: cordonedA(),
      pools: [{ id: 'np-a', desired: 3, max: 4 }],
    });
    expect(kinds(f)).toEqual([]);
    expect(kinds({ ...f, now: d - 30 * MIN })).toEqual(['drain n-a']);
    // Its own event over, the other one is the node's next: returned now, prepared for that one in its window.
    expect(kinds({ ...f, now: d + 5 * MIN, warnings: [later] })).toEqual(['return n-a']);
  });

  it('drains a prepared node by another event of it listed since, when that one is due first', () => {
    const d = T0 + 120 * MIN;
    const sooner = { ...reboot(d - 60 * MIN), type: 'SystemFailure.Redeploy', eventId: 'e-n-a-2' };
    const f = facts({
      now: d - 90 * MIN,
      warnings: [reboot(d), sooner],
      tracked: { 'n-a': tracked(d, { before: ['n-a', 'n-b'], owed: 0 }) },
      nodes: cordonedA(),
      pools: [{ id: 'np-a', desired: 3, max: 4 }],
    });
    expect(planMaintenance(f).steps).toEqual([
      expect.objectContaining({ kind: 'drain', why: expect.stringMatching(/SystemFailure.Redeploy at 01:00/) }),
    ]);
    expect(kinds({ ...f, now: d - 91 * MIN })).toEqual([]);
  });

  it('prepares a node with two events for the first of them', () => {
    const d = T0 + 120 * MIN;
    const later = { ...reboot(d + 24 * 60 * MIN), type: 'SystemMaintenance.Redeploy', eventId: 'e-n-a-2' };
    const plan = planMaintenance(facts({ now: T0 + 30 * MIN, warnings: [reboot(d), later] }));
    expect(plan.steps).toEqual([
      expect.objectContaining({ kind: 'prepare', node: 'n-a', tracked: expect.objectContaining({ eventId: 'e-n-a' }) }),
    ]);
  });

  it('forgets a tracked node whose name is on another instance now (ACK names nodes by IP): never cordons that one', () => {
    // A reclaimed spot node's IP taken by the pool's next instance, on a round the events cannot be read.
    const spot = tracked(T0, { kind: 'preemption', type: 'Recycling', eventId: 'spot:i-n-a' });
    const nodes = new Map<string, { pool: string; ready: boolean; gpus: boolean; instanceId?: string }>([
      ['n-a', { pool: 'np-a', ready: true, gpus: true, instanceId: 'i-new' }],
      ['n-b', { pool: 'np-a', ready: true, gpus: true, instanceId: 'i-n-b' }],
    ]);
    const f = facts({ now: T0 + 10 * MIN, warnings: undefined, tracked: { 'n-a': spot }, nodes });
    expect(kinds(f)).toEqual(['forget n-a']);
    // Its instance unread: not known to be the node prepared, left as it is.
    nodes.set('n-a', { pool: 'np-a', ready: true, gpus: true });
    expect(planned(f).steps.map((s) => `${s.kind} ${s.node}`)).toEqual(['wait n-a']);
    // The same instance: the node prepared.
    nodes.set('n-a', { pool: 'np-a', ready: true, gpus: true, instanceId: 'i-n-a' });
    expect(kinds(f)).toEqual(['cordon n-a', 'drain n-a']);
  });

  it('forgets a tracked node that left the cluster', () => {
    expect(kinds(facts({ tracked: { 'n-gone': tracked(T0) } }))).toEqual(['forget n-gone']);
  });
});
