import { describe, expect, it } from 'vitest';
import type { EventPublisher, PublishedEvent } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { TransientError } from '../adapters/errors.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { OUTBOX_ANNOTATION, readOutbox } from './outbox.ts';
import { emptyEdit, noActions } from './plan.ts';
import { carryOut } from './reflex.ts';

const event = (id: string): PublishedEvent => ({
  source: 'gpu-reflex.functions',
  detailType: 'Node Labels Changed',
  detail: { eventId: id },
});

/** One function's carry-out on gpu-1: an annotation of its own and one event, against the node as read now. */
async function carry(kube: FakeKube, id: string, publisher: EventPublisher) {
  const basis = await kube.nodes.get('gpu-1');
  return carryOut(
    {
      node: 'gpu-1',
      pending: readOutbox(basis.annotations),
      actions: {
        ...noActions<never>(),
        nodeEdit: { ...emptyEdit<never>('gpu-1'), annotations: { [`example.com/${id}`]: 'x' } },
      },
      events: () => [event(id)],
      basis,
    },
    { ...kube, publisher, notifier: new RecordingNotifier(), logger: silentLogger },
  );
}

describe('carryOut', () => {
  it('clears only what it sent: an event another function recorded on the node meanwhile stays', async () => {
    // Every function keeps its outbox in the same node annotation (idle-gpus, label-nodes, rebalance-mig,
    // remediation), each under its own lock: two may carry out on one node at once.
    const kube = fakeKube();
    kube.cluster.addNode({ name: 'gpu-1' });
    const sent: PublishedEvent[] = [];
    const refused: EventPublisher = {
      async publish() {
        throw new TransientError('PutEvents: throttled');
      },
    };
    let other: Promise<unknown> | undefined;
    const first: EventPublisher = {
      async publish(events) {
        // While the first publishes, the second records its event with its patch, and the bus refuses it.
        other = carry(kube, 'labels:b', refused).catch((e: unknown) => e);
        await other;
        sent.push(...events);
      },
    };
    await carry(kube, 'idle:a', first);
    expect(await other).toBeInstanceOf(TransientError);
    // The second's retry (or the next sweep) sends what the outbox holds: its event must still be there.
    const left = readOutbox((await kube.nodes.get('gpu-1')).annotations).events.map((e) => e.detail.eventId);
    expect(left).toEqual(['labels:b']);
    expect(sent.map((e) => e.detail.eventId)).toEqual(['idle:a']);
    expect((await kube.nodes.get('gpu-1')).annotations[OUTBOX_ANNOTATION]).toBeDefined();
  });
});
