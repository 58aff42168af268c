import { describe, expect, it } from 'vitest';
import { manualClock } from '../clock.ts';
import { ConflictError, ForbiddenError, ThrottledError, TransientError } from '../errors.ts';
import { describePortContracts } from './contract.ts';
import type { KubeHarness } from './contract.ts';
import { drainOnce } from './drain.ts';
import { fakeKube, matchesSelector } from './fake.ts';

function fakeHarness(): KubeHarness {
  const clock = manualClock();
  const k = fakeKube({ clock });
  return {
    ...k,
    clock,
    // The fakes do not model namespaces (see fake-cluster.ts).
    seedNamespace: async () => {},
    seedNode: async (s) => void k.cluster.addNode(s),
    seedPod: async (s) =>
      void k.cluster.addPod({
        namespace: s.namespace,
        name: s.name,
        nodeName: s.nodeName,
        labels: s.labels ?? {},
        annotations: s.annotations ?? {},
        owners: s.ownerKind ? [{ kind: s.ownerKind, name: `${s.name}-owner` }] : [],
        terminationGracePeriodSeconds: s.gracePeriodSeconds ?? 30,
        extendedResources: s.gpus ? { 'nvidia.com/gpu': s.gpus } : {},
      }),
    seedPdb: async (s) =>
      k.cluster.addPdb({ namespace: s.namespace, matchLabels: s.matchLabels, minAvailable: s.minAvailable }),
    close: async () => {},
  };
}

describePortContracts('fakes', async () => fakeHarness());

describe('fake failure injection', () => {
  it('a read-modify-write absorbs injected conflicts below the retry budget, like the real adapter', async () => {
    const k = fakeKube({ conflictAttempts: 3 });
    k.cluster.addNode({ name: 'n1' });
    k.cluster.failNext('nodes.setLabels', 409, 2);
    expect(await k.nodes.setLabels('n1', { a: 'b' })).toBe(true);
    expect((await k.nodes.get('n1')).labels).toEqual({ a: 'b' });
  });

  it('conflicts that exhaust the retry budget surface as ConflictError and change nothing', async () => {
    const k = fakeKube({ conflictAttempts: 3 });
    k.cluster.addNode({ name: 'n1' });
    k.cluster.failNext('nodes.addTaint', 409, 3);
    await expect(k.nodes.addTaint('n1', { key: 'x', effect: 'NoSchedule' })).rejects.toBeInstanceOf(ConflictError);
    expect((await k.nodes.get('n1')).taints).toEqual([]);
    expect(await k.nodes.addTaint('n1', { key: 'x', effect: 'NoSchedule' })).toBe(true);
  });

  it.each([
    [429, ThrottledError],
    [500, TransientError],
    [403, ForbiddenError],
  ] as const)('an injected %i on cordon throws %o once, then cordon works', async (status, cls) => {
    const k = fakeKube();
    k.cluster.addNode({ name: 'n1' });
    k.cluster.failNext('nodes.cordon', status);
    await expect(k.nodes.cordon('n1')).rejects.toBeInstanceOf(cls);
    expect(await k.nodes.cordon('n1')).toBe(true);
  });

  it('eviction answers injected 429 as blocked and 404 as gone', async () => {
    const k = fakeKube();
    k.cluster.addPod({ name: 'p', nodeName: 'n1' });
    k.cluster.failNext('pods.evict', 429);
    k.cluster.failNext('pods.evict', 404);
    expect(await k.pods.evict('default', 'p')).toEqual({ outcome: 'blocked', reason: 'injected 429' });
    expect(await k.pods.evict('default', 'p')).toEqual({ outcome: 'gone' });
    expect(await k.pods.evict('default', 'p')).toEqual({ outcome: 'evicted' });
  });

  it('state update re-runs the update function for each absorbed conflict', async () => {
    const k = fakeKube();
    k.cluster.failNext('state.update', 409, 2);
    let runs = 0;
    expect(await k.state.update('k', () => (runs++, 'v'))).toBe('v');
    expect(runs).toBe(3);
  });

  it('records every call with its arguments', async () => {
    const k = fakeKube();
    k.cluster.addNode({ name: 'n1' });
    await k.nodes.cordon('n1');
    await k.nodes.setLabels('n1', { a: null });
    expect(k.cluster.calls).toEqual([
      { op: 'nodes.cordon', args: ['n1'] },
      { op: 'nodes.setLabels', args: ['n1', { a: null }] },
    ]);
    expect(k.cluster.callsTo('nodes.cordon')).toHaveLength(1);
  });
});

describe('drain through the fakes', () => {
  it('one pod transient failure is reported as blocked and the others are still evicted', async () => {
    const k = fakeKube();
    k.cluster.addNode({ name: 'n1' });
    k.cluster.addPod({ name: 'a', nodeName: 'n1' });
    k.cluster.addPod({ name: 'b', nodeName: 'n1' });
    k.cluster.failNext('pods.evict', 500);
    const pass = await drainOnce(k, 'n1');
    expect(pass.blocked).toEqual([{ pod: 'default/a', reason: 'evicting pod default/a: injected 500' }]);
    expect(pass.evicted).toEqual(['default/b']);
    expect(pass.done).toBe(false);
  });

  it('a forbidden eviction stops the drain (misconfigured RBAC is not retried)', async () => {
    const k = fakeKube();
    k.cluster.addNode({ name: 'n1' });
    k.cluster.addPod({ name: 'a', nodeName: 'n1' });
    k.cluster.failNext('pods.evict', 403);
    await expect(drainOnce(k, 'n1')).rejects.toBeInstanceOf(ForbiddenError);
  });

  it('never evicts a pod that is already terminating again', async () => {
    const clock = manualClock();
    const k = fakeKube({ clock });
    k.cluster.addNode({ name: 'n1' });
    k.cluster.addPod({ name: 'a', nodeName: 'n1', terminationGracePeriodSeconds: 60 });
    await drainOnce(k, 'n1');
    const second = await drainOnce(k, 'n1');
    expect(second.terminating).toEqual(['default/a']);
    expect(k.cluster.callsTo('pods.evict')).toHaveLength(1);
  });
});

describe('matchesSelector', () => {
  it.each([
    ['a=1', { a: '1' }, true],
    ['a==1', { a: '1' }, true],
    ['a=1,b=2', { a: '1' }, false],
    ['a!=1', { a: '2' }, true],
    ['a!=1', { a: '1' }, false],
    ['a', { a: 'x' }, true],
    ['!a', { a: 'x' }, false],
    ['', {}, true],
  ])('%s on %j is %s', (sel, labels, expected) => {
    expect(matchesSelector(labels, sel)).toBe(expected);
  });
});
