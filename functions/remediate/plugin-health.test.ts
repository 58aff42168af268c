/**
 * remediatePlugin (plugin-health.ts) over the Kubernetes fakes: a `Device Plugin Action` that was decided is
 * published, also when the bus refused it the first time (the outbox, lib/reflex.ts). The plan itself:
 * core/plugin-health.test.ts; the whole path on the local stack: test/e2e/local-device-plugin-dead.test.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { DEVICE_PLUGIN_ACTION, type DevicePluginMismatchDetail } from '../../events/index.ts';
import { RecordingPublisher, type EventPublisher, type PublishedEvent } from '../adapters/bus.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { TransientError } from '../adapters/errors.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { OUTBOX_ANNOTATION } from '../lib/outbox.ts';
import { DEFAULT_POLICY } from './core/policy.ts';
import { remediatePlugin } from './plugin-health.ts';
import { sweepRound } from './sweep-jobs.ts';
import { fakeDeps, T0 } from './testing.ts';

const NODE = 'gpu-a100-07';
const firing: DevicePluginMismatchDetail = {
  schemaVersion: 1,
  eventId: `plugin:${NODE}:firing:${T0}`,
  node: NODE,
  observedAt: new Date(T0).toISOString(),
  state: 'firing',
  mode: 'exclusive',
  gpus: 8,
  resources: [{ resource: 'nvidia.com/gpu', expected: 8, capacity: 8, allocatable: 0 }],
  kind: 'none-allocatable',
  message: 'NVML sees 8 GPUs; the node advertises 8 nvidia.com/gpu but none allocatable',
};

let kube: FakeKube;
let clock: ManualClock;
const deps = (publisher: EventPublisher) => fakeDeps(kube, { clock, publisher, policy: DEFAULT_POLICY });
const actions = (events: readonly PublishedEvent[]) => events.filter((e) => e.detailType === DEVICE_PLUGIN_ACTION);

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  kube.cluster.addNode({ name: NODE, labels: {}, allocatable: { 'nvidia.com/gpu': '0' } });
  kube.cluster.addPod({
    name: 'nvidia-device-plugin-ds-x1',
    namespace: 'kube-system',
    nodeName: NODE,
    labels: { name: 'nvidia-device-plugin-ds' },
    owners: [{ kind: 'DaemonSet', name: 'nvidia-device-plugin-ds' }],
    terminationGracePeriodSeconds: 0,
  });
});

describe('remediatePlugin', () => {
  it('restarts the plugin and publishes its Device Plugin Action once, also when the bus refused it first', async () => {
    const offered: PublishedEvent[] = [];
    const refusing: EventPublisher = {
      async publish(events) {
        offered.push(...events);
        throw new TransientError('PutEvents: the bus is unreachable');
      },
    };
    // The restart is done (the pod evicted, the record written); the refusal is not the invocation's failure:
    // a retry would find the restart recorded, decide nothing, and the action would wait for the next event.
    const out = await remediatePlugin(firing, deps(refusing));
    expect(out.step).toBe('restart');
    expect(out.published).toBe(false);
    const decided = actions(offered).map((e) => e.detail.eventId);
    expect(decided).toHaveLength(1);
    expect((await kube.nodes.get(NODE)).annotations[OUTBOX_ANNOTATION]).toContain(String(decided[0]));

    // The sweep finds the node by its outbox and sends the action, with the id it was decided with, once.
    const bus = new RecordingPublisher();
    await clock.advance(60_000);
    await sweepRound(deps(bus));
    await sweepRound(deps(bus));
    expect(actions(bus.published).map((e) => e.detail.eventId)).toEqual(decided);
    expect((await kube.nodes.get(NODE)).annotations[OUTBOX_ANNOTATION]).toBeUndefined();
  });

  it('sends what an earlier invocation left in the outbox even when it decides nothing itself', async () => {
    const offered: PublishedEvent[] = [];
    const refusing: EventPublisher = {
      async publish(events) {
        offered.push(...events);
        throw new TransientError('PutEvents: the bus is unreachable');
      },
    };
    // Whether or not the refusal fails the invocation, the action is in the node's outbox.
    await remediatePlugin(firing, deps(refusing)).catch(() => undefined);
    // The platform delivers the same event again: the restart is recorded, so nothing new is decided.
    const bus = new RecordingPublisher();
    const again = await remediatePlugin(firing, deps(bus));
    expect(again.step).toBe('none');
    expect(actions(bus.published).map((e) => e.detail.eventId)).toEqual(actions(offered).map((e) => e.detail.eventId));
  });
});
