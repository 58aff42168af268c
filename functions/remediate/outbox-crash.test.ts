/**
 * The outbox's write-ahead (issue #26): what an invocation decided to publish is written in the same
 * node patch as the state it changes, before anything else happens. Here the process dies right after
 * that patch — no notice sent, no PutEvents, no second write — and a later sweep, in a new process,
 * still publishes the Remediation report once, under the id it was decided with. (The retry tests in
 * outbox.test.ts cannot show this: where a notice went out, their failed publish writes the events
 * a second time.)
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { REMEDIATION } from '../../events/index.ts';
import { RecordingPublisher, type EventPublisher } from '../adapters/bus.ts';
import { RecordingNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import type { NodeOps } from '../adapters/kube/ports.ts';
import { silentLogger } from '../adapters/logger.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { DEFAULT_POLICY } from './core/policy.ts';
import { STATE_LABEL } from './core/state.ts';
import { remediate, triggerOf, type RemediationDeps } from './run.ts';
import { sweepRound } from './sweep-jobs.ts';
import { xid79 } from './testing.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');
const NODE = 'gpu-a100-1';

class Killed extends Error {
  override name = 'Killed';
}

let kube: FakeKube;
let clock: ManualClock;

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  kube.cluster.addNode({
    name: NODE,
    labels: { 'gpu-reflex.io/pool': 'a100' },
    allocatable: { 'nvidia.com/gpu': '8' },
  });
  kube.cluster.addNode({
    name: 'gpu-a100-2',
    labels: { 'gpu-reflex.io/pool': 'a100' },
    allocatable: { 'nvidia.com/gpu': '8' },
  });
  kube.cluster.addPod({
    name: 'train',
    namespace: 'ml',
    uid: 'train-uid',
    nodeName: NODE,
    extendedResources: { 'nvidia.com/gpu': 1 },
    terminationGracePeriodSeconds: 0,
  });
});

const xid = () => xid79(NODE, T0);

/** A process that dies after its first node write has landed: every later call, of any port, never happens. */
function dyingAfterFirstWrite(): { deps: RemediationDeps; offered: RecordingPublisher } {
  let dead = false;
  const die = () => {
    throw new Killed('the functions process was killed');
  };
  const nodes: NodeOps = new Proxy(kube.nodes, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      return async (...args: unknown[]) => {
        if (dead) die();
        const out = await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args);
        if (prop === 'update') dead = true;
        return out;
      };
    },
  });
  const offered = new RecordingPublisher();
  const publisher: EventPublisher = { publish: async (e) => (dead ? die() : offered.publish(e)) };
  const notifier: Notifier = { notify: async () => die() };
  const pods = new Proxy(kube.pods, {
    get: (t, p, r) => {
      const v = Reflect.get(t, p, r) as unknown;
      return typeof v === 'function'
        ? (...a: unknown[]) => (dead ? die() : (v as (...x: unknown[]) => unknown).apply(t, a))
        : v;
    },
  });
  return {
    deps: {
      nodes,
      pods,
      state: kube.state,
      leases: kube.leases,
      publisher,
      notifier,
      policy: DEFAULT_POLICY,
      clock,
      logger: silentLogger,
      holder: 'req-1',
    },
    offered,
  };
}

describe('outbox write-ahead', () => {
  it('keeps the decided report through a process killed right after its state patch, and the next sweep publishes it once', async () => {
    const dying = dyingAfterFirstWrite();
    await expect(remediate(triggerOf('GPU XID Error', xid()), dying.deps)).rejects.toBeInstanceOf(Killed);
    expect(dying.offered.published).toEqual([]);
    const node = await kube.nodes.get(NODE);
    expect(node.labels[STATE_LABEL]).toBe('draining');
    const recorded = JSON.parse(node.annotations[OUTBOX_ANNOTATION] ?? '{"events":[]}') as {
      events: { detailType: string; detail: { eventId: string } }[];
    };
    const decided = recorded.events.filter((e) => e.detailType === REMEDIATION).map((e) => e.detail.eventId);
    expect(decided).toHaveLength(1);

    // A new process: the sweep finds the outbox and delivers it, once.
    const bus = new RecordingPublisher();
    const fresh: RemediationDeps = {
      nodes: kube.nodes,
      pods: kube.pods,
      state: kube.state,
      leases: kube.leases,
      publisher: bus,
      notifier: new RecordingNotifier(),
      policy: DEFAULT_POLICY,
      clock,
      logger: silentLogger,
      holder: 'req-2',
    };
    await sweepRound(fresh);
    await sweepRound(fresh);
    expect(bus.published.filter((e) => e.detailType === REMEDIATION && e.detail.eventId === decided[0])).toHaveLength(
      1,
    );
  });
});
