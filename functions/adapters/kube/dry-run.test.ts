import { describe, expect, it } from 'vitest';
import { manualClock } from '../clock.ts';
import { NotFoundError } from '../errors.ts';
import { drainOnce } from './drain.ts';
import { DryRunOverlay, dryRunPorts } from './dry-run.ts';
import type { DryRunAction } from './dry-run.ts';
import { fakeKube } from './fake.ts';
import type { FakeKube } from './fake.ts';
import type { Json } from './model.ts';
import type { CardFenceOps, StateStore } from './ports.ts';

function seeded(): FakeKube {
  const k = fakeKube({ clock: manualClock() });
  k.cluster.addNode({ name: 'n1', labels: { pool: 'a' }, taints: [{ key: 'old', effect: 'NoSchedule' }] });
  k.cluster.addPod({ name: 'train', nodeName: 'n1' });
  k.cluster.addPod({ name: 'dcgm', nodeName: 'n1', owners: [{ kind: 'DaemonSet', name: 'dcgm' }] });
  k.cluster.quotas.set('t/q', {
    namespace: 't',
    name: 'q',
    labels: {},
    hard: { 'requests.nvidia.com/gpu': '4' },
    used: {},
    resourceVersion: '1',
  });
  k.cluster.state.set('seen', '1');
  return k;
}

/** Write calls, each judged on the seeded state. */
const clock = manualClock();
const CALLS: ((p: FakeKube) => Promise<unknown>)[] = [
  (p) => p.nodes.cordon('n1'),
  (p) => p.nodes.uncordon('n1'),
  (p) => p.nodes.addTaint('n1', { key: 'gpu-reflex/xid', value: '79', effect: 'NoSchedule' }),
  (p) => p.nodes.addTaint('n1', { key: 'old', effect: 'NoSchedule' }),
  (p) => p.nodes.removeTaint('n1', 'absent'),
  (p) => p.nodes.removeTaint('n1', 'old'),
  (p) => p.nodes.setLabels('n1', { pool: 'a' }),
  (p) => p.nodes.setAnnotations('n1', { why: 'XID 79' }),
  (p) => p.pods.evict('default', 'ghost'),
  (p) => p.quotas.applyQuota('t', 'q', { hard: { 'requests.nvidia.com/gpu': '4' } }),
  (p) => p.quotas.applyQuota('t', 'q', { hard: { 'requests.nvidia.com/gpu': '8' } }),
  (p) => p.quotas.applyQuota('t', 'q2', { hard: { 'requests.nvidia.com/gpu': '2' } }),
  // The same writes again: the live run finds its own (unchanged), and so must the dry run.
  (p) => p.quotas.applyQuota('t', 'q', { hard: { 'requests.nvidia.com/gpu': '8' } }),
  (p) => p.quotas.applyQuota('t', 'q2', { hard: { 'requests.nvidia.com/gpu': '2' } }),
  (p) => p.quotas.applyLimitRange('t', 'l', { limits: [{ type: 'Container' }] }),
  (p) => p.quotas.applyLimitRange('t', 'l', { limits: [{ type: 'Container' }] }),
  (p) => p.state.update('seen', (c) => (typeof c === 'number' ? c + 1 : 1)),
  (p) => p.leases.tryAcquire('pool-a', 'fn', 30, clock),
  (p) => p.leases.renew('pool-a', 'fn', clock),
  (p) => p.leases.release('pool-a', 'fn'),
];

async function script(p: FakeKube): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const call of CALLS) out.push(await call(p));
  return out;
}

describe('dryRunPorts', () => {
  it('answers each write as the real ports would, one after another on the same cluster', async () => {
    // The live run sees its own writes; so does the dry run, through its overlay: the script's
    // answers are the ones the same script gets from the real ports on a cluster seeded alike.
    const live = seeded();
    const realAnswers = await script(live);
    const actions: DryRunAction[] = [];
    const dry = dryRunPorts(seeded(), (a) => actions.push(a));
    const dryAnswers = await script(dry);
    expect(dryAnswers).toEqual(realAnswers);
    // cordon, then uncordon of the node it cordoned: both change it.
    expect(realAnswers.slice(0, 9)).toEqual([true, true, true, false, false, true, false, true, { outcome: 'gone' }]);
    expect(actions.map((a) => a.result)).toEqual(dryAnswers);
    // And every later read sees what the live run made.
    const { resourceVersion: _a, ...dryNode } = await dry.nodes.get('n1');
    const { resourceVersion: _b, ...liveNode } = await live.nodes.get('n1');
    expect(dryNode).toEqual(liveNode);
    expect(await dry.state.get('seen')).toEqual(await live.state.get('seen'));
    expect(await dry.state.getAll()).toEqual(await live.state.getAll());
    expect(await dry.leases.get('pool-a')).toEqual(await live.leases.get('pool-a'));
    const hardOf = async (p: FakeKube) =>
      (await p.quotas.listQuotas('t'))
        .map((q) => [q.name, q.hard])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0])));
    expect(await hardOf(dry)).toEqual(await hardOf(live));
    expect((await dry.quotas.listLimitRanges('t')).map((l) => l.limits)).toEqual(
      (await live.quotas.listLimitRanges('t')).map((l) => l.limits),
    );
  });

  it('a deleted quota is gone for the rest of the run, and deleting it again is absent', async () => {
    const k = seeded();
    const dry = dryRunPorts(k, () => {});
    expect(await dry.quotas.deleteQuota('t', 'q', '1')).toBe('deleted');
    expect(await dry.quotas.getQuota('t', 'q')).toBeUndefined();
    expect(await dry.quotas.listQuotas()).toEqual([]);
    expect(await dry.quotas.deleteQuota('t', 'q', '1')).toBe('absent');
    expect(k.cluster.quotas.has('t/q')).toBe(true);
  });

  it('a second decision sees the first one: a held lease, a ledger entry, a cordoned node', async () => {
    const k = seeded();
    const dry = dryRunPorts(k, () => {});
    expect((await dry.leases.tryAcquire('pool-a', 'first', 30, clock)).acquired).toBe(true);
    expect((await dry.leases.tryAcquire('pool-a', 'second', 30, clock)).acquired).toBe(false);
    await dry.state.update('ledger', () => ({ out: ['n1'] }));
    expect(await dry.state.get('ledger')).toEqual({ out: ['n1'] });
    expect(await dry.nodes.cordon('n1')).toBe(true);
    expect(await dry.nodes.cordon('n1')).toBe(false);
    await dry.nodes.update('n1', { labels: { 'gpu-reflex.io/state': 'draining' } });
    expect((await dry.nodes.listMetadata('gpu-reflex.io/state=draining')).map((n) => n.name)).toEqual(['n1']);
    expect((await dry.nodes.list('gpu-reflex.io/state!=draining')).map((n) => n.name)).toEqual([]);
    // The cluster itself is as seeded.
    expect(k.cluster.state.get('ledger')).toBeUndefined();
    expect((await k.nodes.get('n1')).unschedulable).toBe(false);
  });

  it('an evicted pod terminates for its grace period, then is gone, and is not evicted twice', async () => {
    const c = manualClock();
    const k = seeded();
    const dry = dryRunPorts(k, () => {}, new DryRunOverlay(c));
    expect(await dry.pods.evict('default', 'train', { gracePeriodSeconds: 10 })).toEqual({ outcome: 'evicted' });
    expect((await dry.pods.listOnNode('n1')).find((p) => p.name === 'train')?.terminating).toBe(true);
    await c.advance(10_000);
    expect((await dry.pods.listOnNode('n1')).map((p) => p.name)).toEqual(['dcgm']);
    expect(await dry.pods.evict('default', 'train')).toEqual({ outcome: 'gone' });
    expect(k.cluster.pods().every((p) => !p.terminating)).toBe(true);
  });

  it('changes nothing in the cluster', async () => {
    const k = seeded();
    const before = {
      node: await k.nodes.get('n1'),
      pods: k.cluster.pods(),
      quotas: [...k.cluster.quotas],
      state: [...k.cluster.state],
    };
    const actions: DryRunAction[] = [];
    await script(dryRunPorts(k, (a) => actions.push(a)));
    expect(await k.nodes.get('n1')).toEqual(before.node);
    expect(k.cluster.pods()).toEqual(before.pods);
    expect([...k.cluster.quotas]).toEqual(before.quotas);
    expect([...k.cluster.state]).toEqual(before.state);
    expect(k.cluster.leases.size).toBe(0);
    const writes = k.cluster.calls.filter(
      (c) => !/\.(get|getAll|list|listOnNode|getQuota|getLimitRange|listQuotas|listLimitRanges)$/.test(c.op),
    );
    expect(writes).toEqual([]);
    expect(actions).toHaveLength(CALLS.length);
  });

  it('a dry drain reports the evictions it would request and leaves the pods running', async () => {
    const k = seeded();
    const actions: DryRunAction[] = [];
    const pass = await drainOnce(
      dryRunPorts(k, (a) => actions.push(a)),
      'n1',
    );
    expect(pass.evicted).toEqual(['default/train']);
    expect(pass.skipped).toEqual([{ pod: 'default/dcgm', reason: 'daemonset' }]);
    expect(actions.map((a) => a.op)).toEqual(['nodes.cordon', 'pods.evict']);
    expect(k.cluster.pods().every((p) => !p.terminating)).toBe(true);
    expect((await k.nodes.get('n1')).unschedulable).toBe(false);
  });

  it('reads a shard where the real store keeps it, and writes nothing there', async () => {
    const objects = new Map<string, Map<string, Json>>();
    const store = (name: string): StateStore => {
      const m = objects.get(name) ?? objects.set(name, new Map()).get(name)!;
      return {
        get: async (k) => m.get(k),
        getAll: async () => Object.fromEntries(m),
        update: async (k, fn) => {
          const v = fn(m.get(k));
          if (v === undefined) m.delete(k);
          else m.set(k, v);
          return v;
        },
        shard: (n) => store(`${name}-${n}`),
      };
    };
    await store('state').shard!('approvals').update('approval.apr-1', () => ({ status: 'open' }));
    const seen: DryRunAction[] = [];
    const dry = dryRunPorts({ ...seeded(), state: store('state') }, (a) => seen.push(a));
    expect(await dry.state.shard!('approvals').get('approval.apr-1')).toEqual({ status: 'open' });
    expect(
      await dry.state.shard!('approvals').update('approval.apr-1', () => ({ status: 'approved-applied' })),
    ).toEqual({ status: 'approved-applied' });
    expect(objects.get('state-approvals')?.get('approval.apr-1')).toEqual({ status: 'open' });
    expect(seen.map((a) => a.args)).toEqual([['approvals/approval.apr-1']]);
  });

  it("answers a gpushare card fence change by the ConfigMap's listing and writes nothing", async () => {
    let listed = [3];
    const writes: unknown[] = [];
    const cardFences: CardFenceOps = {
      listed: async () => listed,
      change: async (...args) => (writes.push(args), (listed = [3, 1]), true),
    };
    const seen: DryRunAction[] = [];
    const dry = dryRunPorts({ ...seeded(), cardFences }, (a) => seen.push(a));
    expect(await dry.cardFences!.change('n1', [1], [])).toBe(true);
    expect(await dry.cardFences!.change('n1', [3], [])).toBe(false);
    expect(await dry.cardFences!.change('n1', [1], [])).toBe(false);
    // The dry run reads what it would have listed; the ConfigMap lists what it did.
    expect(await dry.cardFences!.listed('n1')).toEqual([1, 3]);
    expect(listed).toEqual([3]);
    expect(writes).toEqual([]);
    expect(seen.map((a) => a.op)).toEqual(['cardFences.change', 'cardFences.change', 'cardFences.change']);
  });

  it('reads still fail as the real ports do', async () => {
    await expect(dryRunPorts(seeded(), () => {}).nodes.cordon('missing')).rejects.toBeInstanceOf(NotFoundError);
  });
});
