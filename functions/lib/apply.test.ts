import { describe, expect, it, vi } from 'vitest';
import { RecordingNotifier, type Notifier } from '../adapters/chat/notifier.ts';
import { BadInputError } from '../adapters/errors.ts';
import { fakeKube } from '../adapters/kube/fake.ts';
import { applyActions } from './apply.ts';
import { emptyEdit, type Actions } from './plan.ts';

function seeded() {
  const kube = fakeKube();
  kube.cluster.addNode({ name: 'n1', labels: { keep: 'me' } });
  kube.cluster.addPod({ namespace: 'ml', name: 'a', uid: 'ua', nodeName: 'n1', terminationGracePeriodSeconds: 0 });
  kube.cluster.addPod({ namespace: 'ml', name: 'b', uid: 'ub', nodeName: 'n1', labels: { guarded: 'yes' } });
  kube.cluster.addPdb({ namespace: 'ml', matchLabels: { guarded: 'yes' }, minAvailable: 1 });
  return kube;
}

const actions = (o: Partial<Actions<{ v: number }>> = {}): Actions<{ v: number }> => ({
  nodeEdit: {
    ...emptyEdit<{ v: number }>('n1'),
    addTaints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }],
    unschedulable: true,
    labels: { state: 'out' },
    record: { v: 7 },
  },
  evictions: [
    { namespace: 'ml', name: 'a' },
    { namespace: 'ml', name: 'b' },
  ],
  notices: [{ title: 't', text: 'x', severity: 'warning' }],
  cloud: [{ kind: 'reboot', node: 'n1' }],
  ...o,
});
const codec = (r: { v: number }) => ({ annotations: { rec: JSON.stringify(r) } });

describe('applyActions', () => {
  it("records the plan's node Events on the node it edits", async () => {
    const kube = seeded();
    const recorded: string[] = [];
    const events = {
      record: async (r: { kind: string; name: string }, e: { reason: string }) =>
        void recorded.push(`${r.kind}/${r.name} ${e.reason}`),
    };
    await applyActions(
      actions({
        evictions: [],
        notices: [],
        cloud: [],
        nodeEvents: [{ type: 'Warning', reason: 'GpuFenceDrifted', action: 'Fence', note: 'x' }],
      }),
      { nodes: kube.nodes, pods: kube.pods, notifier: new RecordingNotifier(), events },
      codec,
    );
    expect(recorded).toEqual(['Node/n1 GpuFenceDrifted']);
  });

  it("records the plan's pod Events on each pod (a tenant moved off a shared GPU is told why, issue #32)", async () => {
    const kube = seeded();
    const recorded: string[] = [];
    const events = {
      record: async (r: { kind: string; name: string; namespace?: string; uid?: string }, e: { reason: string }) =>
        void recorded.push(`${r.kind}/${r.namespace}/${r.name}/${r.uid} ${e.reason}`),
    };
    const note = { type: 'Warning' as const, reason: 'SharedGpuFault', action: 'Evict', note: 'x' };
    await applyActions(
      actions({
        nodeEdit: undefined,
        notices: [],
        cloud: [],
        podEvents: [{ pod: { namespace: 'ml', name: 'a', uid: 'ua' }, note }],
      }),
      { nodes: kube.nodes, pods: kube.pods, notifier: new RecordingNotifier(), events },
      codec,
    );
    expect(recorded).toContain('Pod/ml/a/ua SharedGpuFault');
  });

  it('asks for every eviction at once and reports each, index for index, whatever order the answers come in', async () => {
    const kube = seeded();
    const asked: string[] = [];
    const answers = new Map<string, () => void>();
    // Answers held until every eviction was asked for: a one-at-a-time applier never gets past the first.
    const pods = {
      evict: (_ns: string, name: string) => {
        asked.push(name);
        return new Promise<{ outcome: 'evicted' } | { outcome: 'gone' }>((resolve) =>
          answers.set(name, () => resolve(name === 'a' ? { outcome: 'gone' } : { outcome: 'evicted' })),
        );
      },
    };
    const out = applyActions(
      actions({ nodeEdit: undefined, notices: [], cloud: [] }),
      { nodes: kube.nodes, pods, notifier: new RecordingNotifier() },
      codec,
    );
    await vi.waitFor(() => expect(asked).toEqual(['a', 'b']));
    answers.get('b')!();
    answers.get('a')!();
    expect((await out).evictions).toEqual([{ result: 'already' }, { result: 'done' }]);
  });

  it('patches the node once (record encoded by the codec), then evicts, then notifies, then cloud', async () => {
    const kube = seeded();
    const notifier = new RecordingNotifier();
    const out = await applyActions(actions(), { nodes: kube.nodes, pods: kube.pods, notifier }, codec);
    expect(kube.cluster.calls.map((c) => c.op)).toEqual(['nodes.update', 'pods.evict', 'pods.evict']);
    const n = await kube.nodes.get('n1');
    expect(n).toMatchObject({
      unschedulable: true,
      labels: { keep: 'me', state: 'out' },
      annotations: { rec: '{"v":7}' },
      taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }],
    });
    expect(out).toEqual({
      nodeEdit: { result: 'done' },
      evictions: [{ result: 'done' }, { result: 'blocked', message: expect.any(String) }],
      notices: [{ result: 'done' }],
      cloud: [{ result: 'skipped', message: 'no cloud adapter to reboot n1: a person must' }],
    });
    expect(notifier.notices).toHaveLength(1);
    // idempotent: a second run changes nothing on the node
    expect((await applyActions(actions(), { nodes: kube.nodes, pods: kube.pods, notifier }, codec)).nodeEdit).toEqual({
      result: 'already',
    });
  });

  it('evicts the pod the plan was made from, not a namesake created since (the uid is the precondition)', async () => {
    const kube = seeded();
    const out = await applyActions(
      actions({
        nodeEdit: undefined,
        notices: [],
        cloud: [],
        evictions: [{ namespace: 'ml', name: 'a', uid: 'an-older-a' }],
      }),
      { nodes: kube.nodes, pods: kube.pods, notifier: new RecordingNotifier() },
    );
    expect(out.evictions).toEqual([{ result: 'already' }]);
    expect((await kube.pods.listOnNode('n1')).find((p) => p.name === 'a')?.terminating).toBe(false);
  });

  it('throws a record without a codec as our own bug, not as bad input, before touching anything', async () => {
    const kube = seeded();
    const err = await applyActions(actions(), {
      nodes: kube.nodes,
      pods: kube.pods,
      notifier: new RecordingNotifier(),
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(BadInputError);
    expect(kube.cluster.calls).toEqual([]);
  });

  it('reports a failed notice and goes on; a failed node patch throws before any eviction', async () => {
    const kube = seeded();
    const failing: Notifier = {
      notify: async () => {
        throw new Error('webhook down');
      },
    };
    const out = await applyActions(
      actions({ cloud: [] }),
      { nodes: kube.nodes, pods: kube.pods, notifier: failing },
      codec,
    );
    expect(out.notices).toEqual([{ result: 'failed', message: 'webhook down' }]);
    const k2 = seeded();
    k2.cluster.failNext('nodes.update', 500);
    await expect(
      applyActions(actions(), { nodes: k2.nodes, pods: k2.pods, notifier: failing }, codec),
    ).rejects.toThrow();
    expect(k2.cluster.callsTo('pods.evict')).toEqual([]);
  });
});
