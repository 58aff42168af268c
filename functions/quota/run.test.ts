import { beforeEach, describe, expect, it } from 'vitest';
import { QUOTA_REWRITTEN, type QuotaRewrittenDetail } from '../../events/index.ts';
import { RecordingPublisher, type EventPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { BadInputError, ConflictError, TransientError } from '../adapters/errors.ts';
import { DEFAULT_CONFLICT_ATTEMPTS } from '../adapters/kube/retry.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import { silentLogger } from '../adapters/logger.ts';
import { DEFAULT_TAINT_KEY } from '../lib/node-state.ts';
import { QuotaConfigSchema } from './core/config.ts';
import { planQuotas, quotaFacts } from './index.ts';
import {
  HOLD_UNTIL_ANNOTATION,
  PREVIOUS_HARD_ANNOTATION,
  rewriteQuotas,
  rollbackQuotas,
  type QuotaDeps,
} from './run.ts';

const GPU = 'nvidia.com/gpu';
const K = `requests.${GPU}`;
const T0 = Date.parse('2026-11-25T00:00:00Z');
let kube: FakeKube;
let clock: ManualClock;
let publisher: RecordingPublisher;
let notifier: RecordingNotifier;
let deps: QuotaDeps;

const config = QuotaConfigSchema.parse({
  limitRange: { default: { [GPU]: 1 }, max: { [GPU]: 8 } },
  teams: [
    { name: 'ml', namespaces: ['ml'], weight: 2, guarantee: { [GPU]: 8 } },
    { name: 'nlp', namespaces: ['nlp'], weight: 1, guarantee: { [GPU]: 8 } },
  ],
});

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  for (let i = 0; i < 3; i++) kube.cluster.addNode({ name: `gpu-${i}`, allocatable: { [GPU]: '8' } });
  for (let i = 0; i < 6; i++)
    kube.cluster.addPod({
      name: `train-${i}`,
      namespace: 'ml',
      nodeName: 'gpu-0',
      requests: { [GPU]: 1 },
      extendedResources: { [GPU]: 1 },
    });
  kube.cluster.addPod({
    name: 'done',
    namespace: 'nlp',
    phase: 'Succeeded',
    nodeName: 'gpu-1',
    requests: { [GPU]: 4 },
    extendedResources: { [GPU]: 4 },
  });
  publisher = new RecordingPublisher();
  notifier = new RecordingNotifier();
  deps = {
    nodes: kube.nodes,
    pods: kube.pods,
    quotas: kube.quotas,
    state: kube.state,
    leases: kube.leases,
    publisher,
    notifier,
    clock,
    logger: silentLogger,
    holder: 'r1',
    config,
  };
});

const hard = async (ns: string) => (await kube.quotas.getQuota(ns, 'gpu-reflex'))?.hard[K];
const events = () =>
  publisher.published.filter((e) => e.detailType === QUOTA_REWRITTEN).map((e) => e.detail as QuotaRewrittenDetail);

describe('rewrite-quotas', () => {
  it('writes each team’s quota and LimitRange, keeping what it replaced, and says so once', async () => {
    const out = await rewriteQuotas(deps);
    expect(out.changed).toEqual(['ml', 'nlp']);
    // 24 GPUs; guarantees 8 + 8; ml uses 6, nlp nothing (its finished pod does not count): of the
    // 18 free, nlp's guarantee is more than its weighted share (6), ml gets the other 10.
    expect([await hard('ml'), await hard('nlp')]).toEqual(['16', '8']);
    const q = await kube.quotas.getQuota('ml', 'gpu-reflex');
    expect(q?.labels).toMatchObject({ 'app.kubernetes.io/managed-by': 'gpu-reflex' });
    // There was no quota: a rollback deletes this one (null, not {}).
    expect(q?.annotations?.[PREVIOUS_HARD_ANNOTATION]).toBe('null');
    expect((await kube.quotas.getLimitRange('ml', 'gpu-reflex'))?.limits).toEqual([
      { type: 'Container', default: { [GPU]: '1' }, defaultRequest: { [GPU]: '1' }, max: { [GPU]: '8' } },
    ]);
    expect(events().map((e) => [e.namespace, e.changes])).toEqual([
      ['ml', [{ resource: K, from: null, to: '16' }]],
      ['nlp', [{ resource: K, from: null, to: '8' }]],
    ]);
    expect(notifier.notices.map((n) => n.title)).toEqual(['gpu-reflex: rewrote 2 team quotas']);
    // Nothing changed: nothing written, nothing said.
    await rewriteQuotas(deps);
    expect(events()).toHaveLength(2);
    expect(kube.cluster.calls.filter((c) => c.op === 'quotas.applyQuota')).toHaveLength(2);
  });

  it('shrinks with capacity when a node is taken out, keeping every guarantee and what runs', async () => {
    await rewriteQuotas(deps);
    expect([await hard('ml'), await hard('nlp')]).toEqual(['16', '8']);
    // Remediation taints gpu-2: 16 GPUs left for 8 + 8 guaranteed; ml keeps its 6 running and 2 more.
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    const out = await rewriteQuotas(deps);
    expect([await hard('ml'), await hard('nlp')]).toEqual(['8', '8']);
    expect(events().at(-1)).toMatchObject({ namespace: 'ml', changes: [{ resource: K, from: '16', to: '8' }] });
    expect(out.plan.pool[GPU]).toEqual({ capacity: 16, shared: 16 });
  });

  it('publishes a Quota Rewritten the bus refused on the next round, exactly once', async () => {
    let failures = 1;
    const flaky: EventPublisher = {
      publish: async (e) =>
        failures-- > 0
          ? Promise.reject(new TransientError('publishing events: Region is missing'))
          : publisher.publish(e),
    };
    // Not the round's failure: ml's event stays in its outbox, nlp is rewritten and published.
    expect((await rewriteQuotas({ ...deps, publisher: flaky })).changed).toEqual(['ml', 'nlp']);
    expect(await hard('ml')).toBe('16');
    expect(events().map((e) => e.namespace)).toEqual(['nlp']);
    await rewriteQuotas({ ...deps, publisher: flaky });
    await rewriteQuotas({ ...deps, publisher: flaky });
    expect(events().map((e) => e.namespace)).toEqual(['nlp', 'ml']);
  });

  it('still fails a round whose event the bus refuses as invalid (a bug), keeping it in the outbox', async () => {
    const invalid: EventPublisher = {
      publish: () => Promise.reject(new BadInputError('PutEvents: detail is not valid JSON')),
    };
    await expect(rewriteQuotas({ ...deps, publisher: invalid })).rejects.toThrow(BadInputError);
    expect(await kube.state.get('quota.ml')).toMatchObject({ events: [{ detailType: QUOTA_REWRITTEN }] });
  });

  it('says each rewrite in chat once, also when the bus refused its event and the next round publishes it', async () => {
    let failures = 1;
    const flaky: EventPublisher = {
      publish: async (e) =>
        failures-- > 0 ? Promise.reject(new TransientError('PutEvents: the bus is unreachable')) : publisher.publish(e),
    };
    // ml is written when its event is refused; whatever that round does, the next one finds ml written.
    await rewriteQuotas({ ...deps, publisher: flaky }).catch(() => undefined);
    await clock.advance(5 * 60_000);
    await rewriteQuotas({ ...deps, publisher: flaky });
    expect(
      events()
        .map((e) => e.namespace)
        .sort(),
    ).toEqual(['ml', 'nlp']);
    expect(notifier.notices.flatMap((n) => n.text.split('\n'))).toEqual([`ml: ${K} unset → 16`, `nlp: ${K} unset → 8`]);
  });

  it('never publishes a Quota Rewritten whose write did not land (a 409): the next round reports what it writes', async () => {
    await rewriteQuotas(deps);
    // Remediation takes gpu-2 out: ml 16 → 8 is decided and recorded, and its write is refused (a concurrent edit).
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    kube.cluster.failNext('quotas.applyQuota', 409, DEFAULT_CONFLICT_ATTEMPTS);
    await expect(rewriteQuotas(deps)).rejects.toThrow(ConflictError);
    expect(await hard('ml')).toBe('16');
    // gpu-2 is back before the next round: ml stays 16, and no event says it went to 8.
    await kube.nodes.removeTaint('gpu-2', DEFAULT_TAINT_KEY);
    await clock.advance(60_000);
    await rewriteQuotas(deps);
    expect(await hard('ml')).toBe('16');
    expect(events().map((e) => [e.namespace, e.changes.map((c) => `${c.from} → ${c.to}`)])).toEqual([
      ['ml', ['null → 16']],
      ['nlp', ['null → 8']],
    ]);
    expect(await kube.state.get('quota.ml')).toBeUndefined();
  });

  it('writes over no quota a person changed after the round read it: the value a rollback restores stays true', async () => {
    await rewriteQuotas(deps);
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    // A person sets ml to 20 between the round's read and its write (ml 16 → 8 is decided on 16).
    const quotas = deps.quotas;
    deps.quotas = Object.assign(Object.create(quotas) as typeof quotas, {
      listQuotas: async (ns?: string) => {
        const read = await quotas.listQuotas(ns);
        await quotas.applyQuota('ml', 'gpu-reflex', { hard: { [K]: '20' } });
        deps.quotas = quotas;
        return read;
      },
    });
    await rewriteQuotas(deps).catch(() => undefined);
    // Either the person's 20 stands, or the rewrite replaced it and says so: a rollback goes back to 20, not 16.
    if ((await hard('ml')) !== '20') {
      await rollbackQuotas(deps, ['ml'], 60, { force: true });
      expect(await hard('ml')).toBe('20');
    }
    await rewriteQuotas(deps);
    const q = await kube.quotas.getQuota('ml', 'gpu-reflex');
    expect([q?.hard[K], q?.annotations?.[PREVIOUS_HARD_ANNOTATION]]).toEqual(['8', JSON.stringify({ [K]: '20' })]);
  });

  it('takes a value a person wrote into its quota since its last rewrite for theirs, not its own: put back, and said', async () => {
    // A decrease is rate-limited so that gpu-reflex's own quota does not fall under a team at once. A person's hand
    // edit (ml 16 → 40, more than the fleet has) is not gpu-reflex's quota: read as its own, ml kept 36, 32, … for
    // rounds while the others' rises waited for that room, and chat said only "40 → 36".
    deps.config = QuotaConfigSchema.parse({ ...config, maxDecreasePerRound: { [GPU]: 4 } });
    await rewriteQuotas(deps);
    expect([await hard('ml'), await hard('nlp')]).toEqual(['16', '8']);
    await kube.quotas.applyQuota('ml', 'gpu-reflex', { hard: { [K]: '40' } });
    // What chat's and the CLI's `quota plan` show (the public entry): the change the round will make on the cluster.
    const read = await Promise.all([kube.nodes.list(), kube.pods.list(), kube.quotas.listQuotas()]);
    const planned = planQuotas(deps.config, quotaFacts(deps.config, ...read));
    expect(planned.namespaces.find((n) => n.namespace === 'ml')?.changes).toEqual([{ key: K, from: 40, to: 16 }]);
    const out = await rewriteQuotas(deps);
    expect(out.changed).toEqual(['ml']);
    expect(await hard('ml')).toBe('16');
    const q = await kube.quotas.getQuota('ml', 'gpu-reflex');
    // A rollback gives the person's value back (and holds it).
    expect(q?.annotations?.[PREVIOUS_HARD_ANNOTATION]).toBe(JSON.stringify({ [K]: '40' }));
    expect(events().at(-1)).toMatchObject({
      namespace: 'ml',
      changes: [{ resource: K, from: '40', to: '16' }],
      reason: expect.stringMatching(/^changed since gpu-reflex wrote it \(requests\.nvidia\.com\/gpu 16 → 40\)/),
    });
    expect(notifier.notices.at(-1)).toMatchObject({
      severity: 'warning',
      text: expect.stringContaining(
        'ml: requests.nvidia.com/gpu 40 → 16 (someone changed it since gpu-reflex wrote it: requests.nvidia.com/gpu 16 → 40;',
      ),
    });
    // Its own again: nothing more to say.
    await rewriteQuotas(deps);
    expect(notifier.notices).toHaveLength(2);
  });

  it('rolls back to the values before the last rewrite and holds the quota from rewrites for a while', async () => {
    await rewriteQuotas(deps);
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    await rewriteQuotas(deps);
    expect(await hard('ml')).toBe('8');
    const r = await rollbackQuotas(deps, ['ml', 'nope'], 60);
    expect(r.restored.map((x) => [x.namespace, x.to[K]])).toEqual([['ml', '16']]);
    expect(r.skipped).toEqual([{ namespace: 'nope', why: 'no ResourceQuota gpu-reflex there' }]);
    const q = await kube.quotas.getQuota('ml', 'gpu-reflex');
    expect(q?.hard[K]).toBe('16');
    expect(q?.annotations?.[HOLD_UNTIL_ANNOTATION]).toBe(new Date(T0 + 3_600_000).toISOString());
    expect(events().at(-1)?.reason).toMatch(/^rolled back by a person/);
    const held = await rewriteQuotas(deps);
    expect(held.held).toEqual(['ml']);
    expect(await hard('ml')).toBe('16');
    await clock.advance(61 * 60_000);
    expect((await rewriteQuotas(deps)).held).toEqual([]);
    expect(await hard('ml')).toBe('8');
  });

  it('rolls back every quota when the bus refuses a report: the report waits in the outbox for the next round', async () => {
    await rewriteQuotas(deps);
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    await rewriteQuotas(deps); // ml 16 → 8 (previous 16)
    let failures = 1;
    const flaky: EventPublisher = {
      publish: async (e) =>
        failures-- > 0 ? Promise.reject(new TransientError('PutEvents: the bus is unreachable')) : publisher.publish(e),
    };
    // Not the rollback's failure: ml is already written back, and a person running it again would roll the
    // rollback back (its previous values are the rewrite's); nlp, after it, would not be rolled back at all.
    const r = await rollbackQuotas({ ...deps, publisher: flaky }, ['ml', 'nlp'], 60);
    expect(r.restored.map((x) => x.namespace)).toEqual(['ml', 'nlp']);
    expect([await hard('ml'), await hard('nlp')]).toEqual(['16', undefined]);
    expect(events().filter((e) => /^rolled back by a person/.test(e.reason))).toHaveLength(1);
    await rewriteQuotas(deps);
    expect(events().filter((e) => e.namespace === 'ml' && /^rolled back by a person/.test(e.reason))).toEqual([
      expect.objectContaining({ changes: [{ resource: K, from: '8', to: '16' }] }),
    ]);
  });

  it('rolls a quota it created back to absence: deleted, not emptied, not held; the next round writes it again', async () => {
    await rewriteQuotas(deps);
    const r = await rollbackQuotas(deps, ['nlp'], 60);
    expect(r.restored).toEqual([{ namespace: 'nlp', from: { [K]: '8' }, to: {}, deleted: true, warnings: [] }]);
    expect(await kube.quotas.getQuota('nlp', 'gpu-reflex')).toBeUndefined();
    expect(events().at(-1)).toMatchObject({ namespace: 'nlp', changes: [{ resource: K, from: '8', to: null }] });
    expect(events().at(-1)?.reason).toMatch(/gpu-reflex had created this quota, so it is deleted/);
    const next = await rewriteQuotas(deps);
    expect(next.held).toEqual([]);
    expect(await hard('nlp')).toBe('8');
  });

  it('refuses to roll back below what a namespace uses unless forced, and says so', async () => {
    await rewriteQuotas(deps);
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    await rewriteQuotas(deps); // ml 16 → 8 (previous 16)
    // ml now runs 12 (status.used, as the API server counts it) and its previous value says 10.
    const q = kube.cluster.quotas.get('ml/gpu-reflex')!;
    q.used = { [K]: '12' };
    q.annotations = { ...q.annotations, [PREVIOUS_HARD_ANNOTATION]: JSON.stringify({ [K]: '10' }) };
    const refused = await rollbackQuotas(deps, ['ml'], 60);
    expect(refused.restored).toEqual([]);
    expect(refused.refused).toEqual([
      {
        namespace: 'ml',
        why:
          'going back would put it below what it uses: requests.nvidia.com/gpu 10 < 12 used; nothing changed ' +
          '(gpu-reflex quota rollback --force to roll back anyway)',
      },
    ]);
    expect(await hard('ml')).toBe('8');
    const forced = await rollbackQuotas(deps, ['ml'], 60, { force: true });
    expect(forced.restored[0]?.warnings).toEqual([
      'going back would put it below what it uses: requests.nvidia.com/gpu 10 < 12 used: its running pods stay, ' +
        'new ones are refused until they fit',
    ]);
    expect(await hard('ml')).toBe('10');
  });

  it('refuses a cut it cannot weigh against usage: the quota reports no used for the resource yet', async () => {
    await rewriteQuotas(deps);
    await kube.nodes.addTaint('gpu-2', { key: DEFAULT_TAINT_KEY, value: 'xid-79', effect: 'NoSchedule' });
    await rewriteQuotas(deps); // ml 16 → 8 (previous 16)
    // The quota controller has not counted ml yet (a quota just written, or a resource it did not limit before),
    // and the previous value is a cut: ml may run more than 4.
    const q = kube.cluster.quotas.get('ml/gpu-reflex')!;
    q.used = {};
    q.annotations = { ...q.annotations, [PREVIOUS_HARD_ANNOTATION]: JSON.stringify({ [K]: '4', 'requests.cpu': '8' }) };
    const refused = await rollbackQuotas(deps, ['ml'], 60);
    expect(refused.restored).toEqual([]);
    expect(refused.refused).toEqual([
      {
        namespace: 'ml',
        why:
          'going back would cut it where its usage is unknown (the quota’s status has no used for it yet): ' +
          'requests.cpu 8 (unlimited now), requests.nvidia.com/gpu 4 (8 now); nothing changed (gpu-reflex quota ' +
          'rollback --force to roll back anyway)',
      },
    ]);
    expect(await hard('ml')).toBe('8');
    // Going up needs no usage: nothing is taken away.
    q.annotations = { ...q.annotations, [PREVIOUS_HARD_ANNOTATION]: JSON.stringify({ [K]: '16' }) };
    expect((await rollbackQuotas(deps, ['ml'], 60)).restored.map((x) => x.to)).toEqual([{ [K]: '16' }]);
  });
});
