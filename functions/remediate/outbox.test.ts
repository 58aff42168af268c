/**
 * The outbox (issue #10): PutEvents fails for the first N attempts; the sweep runs again (the invocation
 * itself ends without an error: issue #29); each event is published exactly once after recovery, under
 * the id it was decided with. Over the Kubernetes fakes with the real run.ts / sweep-run.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { APPROVAL_REQUESTED, REMEDIATION } from '../../events/index.ts';
import { RecordingPublisher, type EventPublisher, type PublishedEvent } from '../adapters/bus.ts';
import { NoChatNotifier, RecordingNotifier, type Notice, type Notifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { TransientError } from '../adapters/errors.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { DEFAULT_POLICY, type Policy } from './core/policy.ts';
import { carryOut } from '../lib/reflex.ts';
import { remediate, SWEPT, triggerOf, type RemediationDeps } from './run.ts';
import { STATE_LABEL } from './core/state.ts';
import { sweepRound } from './sweep-jobs.ts';
import { fakeDeps, xid79 } from './testing.ts';

const T0 = Date.parse('2026-11-21T03:00:00.000Z');

/** A bus that refuses the first `failures` PutEvents calls, and records what it was offered. */
class FlakyPublisher implements EventPublisher {
  readonly accepted = new RecordingPublisher();
  readonly attempts: PublishedEvent[][] = [];
  constructor(private failures: number) {}
  async publish(events: readonly PublishedEvent[]): Promise<void> {
    this.attempts.push([...events]);
    if (this.failures-- > 0) throw new TransientError('publishing events: Region is missing');
    await this.accepted.publish(events);
  }
}

const xid = xid79;

let kube: FakeKube;
let clock: ManualClock;

function depsWith(
  publisher: EventPublisher,
  policy: Policy = DEFAULT_POLICY,
  notifier: Notifier = new RecordingNotifier(),
): RemediationDeps {
  return fakeDeps(kube, { clock, publisher, policy, notifier });
}

/** A chat webhook that is down for the first `failures` notices, and records what got through. */
class FlakyChat implements Notifier {
  readonly sent: Notice[] = [];
  constructor(private failures: number) {}
  async notify(n: Notice): Promise<void> {
    if (this.failures-- > 0) throw new Error('webhook answered 503');
    this.sent.push(n);
  }
}

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  for (const name of ['gpu-a100-1', 'gpu-a100-2', 'gpu-a100-3', 'gpu-a100-4', 'gpu-a100-5']) {
    kube.cluster.addNode({ name, labels: { 'gpu-reflex.io/pool': 'a100' }, allocatable: { 'nvidia.com/gpu': '8' } });
    kube.cluster.addPod({
      name: `${name}-train`,
      namespace: 'ml',
      uid: `${name}-train-uid`,
      nodeName: name,
      extendedResources: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: 0,
    });
  }
});

/**
 * Runs the sweep as its schedule would, until `done` holds (at most 10 ticks); returns how many ran. A refused
 * publish is never the sweep's failure either: each tick must end without an error.
 */
async function sweepsUntil(bus: EventPublisher, done: () => boolean): Promise<number> {
  for (let ticks = 1; ticks <= 10; ticks++) {
    await sweepRound(depsWith(bus));
    if (done()) return ticks;
  }
  throw new Error('never delivered');
}

const ids = (events: readonly PublishedEvent[], detailType: string) =>
  events.filter((e) => e.detailType === detailType).map((e) => e.detail.eventId);

/**
 * Issue #29: an invocation whose publish the bus refused has recorded the events where the sweep finds them,
 * so it ends without an error — the platform neither retries it nor writes it to the dead-letter queue,
 * which would otherwise hold an event that the sweep delivers a minute later.
 */
describe('outbox', () => {
  it.each([1, 3])(
    'publishes a Remediation exactly once, with the id it was decided with, when PutEvents fails %i time(s)',
    async (n) => {
      const bus = new FlakyPublisher(n);
      const event = triggerOf('GPU XID Error', xid('gpu-a100-1', T0));
      const out = await remediate(event, depsWith(bus));
      expect(out.published).toBe(false);
      const decided = ids(bus.attempts[0]!, REMEDIATION)[0];
      expect((await kube.nodes.get('gpu-a100-1')).annotations[OUTBOX_ANNOTATION]).toContain(String(decided));
      const sweeps = await sweepsUntil(bus, () => ids(bus.accepted.published, REMEDIATION).includes(decided));
      expect(sweeps).toBe(n);
      expect(ids(bus.accepted.published, REMEDIATION).filter((id) => id === decided)).toHaveLength(1);
      // The node was acted on once, and the outbox is empty again.
      const node = await kube.nodes.get('gpu-a100-1');
      expect(node.unschedulable).toBe(true);
      expect(node.annotations[OUTBOX_ANNOTATION]).toBeUndefined();
      // One more redelivery after recovery changes nothing and says nothing.
      const before = bus.accepted.published.length;
      await remediate(event, depsWith(bus));
      expect(bus.accepted.published.length).toBe(before);
    },
  );

  it('publishes an Approval Requested exactly once after PutEvents recovers', async () => {
    const bus = new FlakyPublisher(2);
    const held: Policy = { ...DEFAULT_POLICY, blastRadius: { ...DEFAULT_POLICY.blastRadius, maxCount: 0 } };
    const event = triggerOf('GPU XID Error', xid('gpu-a100-2', T0));
    await remediate(event, depsWith(bus, held));
    const asked = ids(bus.attempts[0]!, APPROVAL_REQUESTED);
    expect(asked).toHaveLength(1);
    for (let tick = 0; tick < 3; tick++) await sweepRound(depsWith(bus, held));
    expect(ids(bus.accepted.published, APPROVAL_REQUESTED)).toEqual(asked);
    expect(ids(bus.accepted.published, REMEDIATION)).toHaveLength(1);
    expect((await kube.nodes.get('gpu-a100-2')).labels[STATE_LABEL]).toBe('awaiting-approval');
  });

  it('publishes the sweep Remediation exactly once after PutEvents recovers', async () => {
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-3', T0)), depsWith(new RecordingPublisher()));
    await clock.advance(5 * 60_000); // drained: the sweep moves the node to awaiting-repair
    const bus = new FlakyPublisher(2);
    expect(await sweepsUntil(bus, () => ids(bus.accepted.published, REMEDIATION).length > 0)).toBe(3);
    const sent = ids(bus.accepted.published, REMEDIATION);
    expect(sent).toHaveLength(1);
    expect(ids(bus.attempts[0]!, REMEDIATION)).toEqual(sent);
    expect((await kube.nodes.get('gpu-a100-3')).labels[STATE_LABEL]).toBe('awaiting-repair');
    await sweepRound(depsWith(bus));
    expect(ids(bus.accepted.published, REMEDIATION)).toHaveLength(1);
  });

  it('lets the next sweep deliver what a remediation could not', async () => {
    const bus = new FlakyPublisher(1);
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-4', T0)), depsWith(bus));
    await sweepRound(depsWith(bus));
    // first the remediation's own report, as decided; then the sweep's news (drained → awaiting repair)
    expect(ids(bus.accepted.published, REMEDIATION)[0]).toBe(ids(bus.attempts[0]!, REMEDIATION)[0]);
    expect(
      ids(bus.accepted.published, REMEDIATION).filter((id) => id === ids(bus.attempts[0]!, REMEDIATION)[0]),
    ).toHaveLength(1);
  });

  it('labels a node whose plan changed no state, so the sweep finds the outbox it leaves', async () => {
    // A valid Remediation report, as another node's remediation published it.
    const seen = new RecordingPublisher();
    await remediate(triggerOf('GPU XID Error', xid('gpu-a100-1', T0)), depsWith(seen));
    const report = seen.published.find((e) => e.detailType === REMEDIATION)!;
    const bus = new FlakyPublisher(1);
    const basis = await kube.nodes.get('gpu-a100-4');
    expect(basis.labels[STATE_LABEL]).toBeUndefined();
    const deps = depsWith(bus);
    const out = await carryOut(
      {
        node: 'gpu-a100-4',
        pending: { events: [], notices: [] },
        actions: { evictions: [], notices: [], cloud: [] },
        events: () => [report],
        basis,
        sweptBy: SWEPT,
      },
      deps,
    );
    expect(out.deferred).toHaveLength(1);
    expect((await kube.nodes.get('gpu-a100-4')).labels[STATE_LABEL]).toBe('healthy');
    await sweepRound(depsWith(bus));
    expect(ids(bus.accepted.published, REMEDIATION).filter((id) => id === report.detail.eventId)).toHaveLength(1);
    expect((await kube.nodes.get('gpu-a100-4')).annotations[OUTBOX_ANNOTATION]).toBeUndefined();
  });

  it('still throws, for the platform to retry, where no sweep would find the outbox', async () => {
    const bus = new FlakyPublisher(1);
    const report = { source: 'gpu-reflex.remediate', detailType: REMEDIATION, detail: { eventId: 'note-2' } };
    await expect(
      carryOut(
        {
          node: 'gpu-a100-5',
          pending: { events: [], notices: [] },
          actions: { evictions: [], notices: [], cloud: [] },
          events: () => [report],
        },
        depsWith(bus),
      ),
    ).rejects.toBeInstanceOf(TransientError);
  });

  it('throws a publish failure no retry can mend (an invalid event is our bug), even where the sweep looks', async () => {
    const broken: EventPublisher = {
      publish: async () => {
        throw new Error('publishing an invalid Remediation (a bug in what we built)');
      },
    };
    await expect(remediate(triggerOf('GPU XID Error', xid('gpu-a100-3', T0)), depsWith(broken))).rejects.toThrow(
      /invalid Remediation/,
    );
  });

  it('keeps a chat notice that failed, never fails the remediation for it, and the next sweep sends it once', async () => {
    const chat = new FlakyChat(1);
    const bus = new RecordingPublisher();
    const out = await remediate(triggerOf('GPU XID Error', xid('gpu-a100-5', T0)), depsWith(bus, DEFAULT_POLICY, chat));
    expect(out.plan.notices).toHaveLength(1);
    expect(chat.sent).toHaveLength(0);
    expect(bus.published.find((e) => e.detailType === REMEDIATION)?.detail).toMatchObject({ phase: 'acted' });
    expect((await kube.nodes.get('gpu-a100-5')).annotations[OUTBOX_ANNOTATION]).toContain(out.plan.notices[0]!.title);
    await sweepRound(depsWith(bus, DEFAULT_POLICY, chat));
    await sweepRound(depsWith(bus, DEFAULT_POLICY, chat));
    expect(chat.sent.filter((n) => n.text === out.plan.notices[0]!.text)).toHaveLength(1);
  });

  it('does not repeat a sent notice in chat when the publish fails and the sweep sends the events', async () => {
    const chat = new FlakyChat(0);
    const bus = new FlakyPublisher(1);
    const event = triggerOf('GPU XID Error', xid('gpu-a100-5', T0));
    await remediate(event, depsWith(bus, DEFAULT_POLICY, chat));
    expect(chat.sent).toHaveLength(1);
    await sweepRound(depsWith(bus, DEFAULT_POLICY, chat));
    expect(chat.sent.filter((n) => n.text === chat.sent[0]!.text)).toHaveLength(1);
    const decided = ids(bus.attempts[0]!, REMEDIATION)[0];
    expect(ids(bus.accepted.published, REMEDIATION).filter((id) => id === decided)).toHaveLength(1);
  });

  it('says a notice was skipped, and why, where no chat is configured — never "done" — and keeps nothing for later', async () => {
    const bus = new RecordingPublisher();
    const out = await remediate(
      triggerOf('GPU XID Error', xid('gpu-a100-1', T0)),
      depsWith(bus, DEFAULT_POLICY, new NoChatNotifier()),
    );
    expect(out.plan.notices.length).toBeGreaterThan(0);
    const report = bus.published.find((e) => e.detailType === REMEDIATION)!.detail as {
      phase: string;
      steps: { kind: string; result: string; message?: string }[];
    };
    expect(report.phase).toBe('acted');
    const notify = report.steps.filter((st) => st.kind === 'notify');
    expect(notify.length).toBeGreaterThan(0);
    for (const st of notify) expect(st).toMatchObject({ result: 'skipped' });
    expect(JSON.stringify(notify)).toContain('no chat webhook is configured');
    expect((await kube.nodes.get('gpu-a100-1')).annotations[OUTBOX_ANNOTATION]).toBeUndefined();
  });
});
