import { readFileSync } from 'node:fs';
import { matchesPattern } from '../../events/pattern.ts';
import { beforeEach, describe, expect, it } from 'vitest';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { DryRunNotifier, DryRunPublisher } from '../lib/dry-run.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { dryRunPorts, type DryRunAction } from '../adapters/kube/dry-run.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { silentLogger } from '../adapters/logger.ts';
import { IDLE_ANNOTATION, type IdleTrack } from '../lib/idle-record.ts';
import { DEFAULT_TAINT_KEY, QUARANTINED_GPUS_ANNOTATION } from '../lib/node-state.ts';
import { QuotaConfigSchema } from './core/config.ts';
import { quotaFacts } from './facts.ts';
import { idleLending, lendIdle, loanWords } from './idle-lending.ts';
import { rewriteQuotas, type QuotaDeps } from './run.ts';

const GPU = 'nvidia.com/gpu';
const K = `requests.${GPU}`;
const MIN = 60_000;
const T0 = Date.parse('2026-12-05T03:00:00Z');
const DEV = 'GPU-00000000-0000-4000-8000-000000000000';

const config = QuotaConfigSchema.parse({
  teams: [
    { name: 'research', namespaces: ['research'], weight: 1 },
    { name: 'train', namespaces: ['train'], weight: 1 },
  ],
});

let kube: FakeKube;
let clock: ManualClock;
let deps: QuotaDeps;
let notebook: PodInfo;

const track = (o: Partial<IdleTrack> = {}): IdleTrack => ({
  device: DEV,
  gpu: DEV,
  namespace: 'research',
  pod: 'notebook',
  since: T0 - 130 * MIN,
  lastEnd: T0 - MIN,
  notifiedAt: T0 - 10 * MIN,
  lend: { resource: GPU, uid: notebook.uid, until: T0 + 4 * MIN },
  ...o,
});
const node = (tracks: IdleTrack[] | undefined, o: Partial<NodeInfo> = {}) =>
  kube.cluster.addNode({
    name: 'gpu-0',
    allocatable: { [GPU]: '4' },
    ...o,
    annotations: {
      ...(tracks ? { [IDLE_ANNOTATION]: JSON.stringify({ v: 1, tracks }) } : {}),
      ...(o.annotations ?? {}),
    },
  });
const lending = async () => {
  const [nodes, pods, quotas] = await Promise.all([kube.nodes.list(), kube.pods.list(), kube.quotas.listQuotas()]);
  const facts = quotaFacts(config, nodes, pods, quotas);
  return { facts, lending: idleLending(config, nodes, pods, facts.out, clock.now()) };
};
const hard = async (ns: string) => (await kube.quotas.getQuota(ns, 'gpu-reflex'))?.hard[K];

beforeEach(() => {
  clock = manualClock(T0);
  kube = fakeKube({ clock });
  const pod = (namespace: string, name: string) =>
    kube.cluster.addPod({
      name,
      namespace,
      nodeName: 'gpu-0',
      requests: { [GPU]: 1 },
      extendedResources: { [GPU]: 1 },
    });
  notebook = pod('research', 'notebook');
  pod('train', 'train-0');
  pod('train', 'train-1');
  node(undefined);
  deps = {
    nodes: kube.nodes,
    pods: kube.pods,
    quotas: kube.quotas,
    state: kube.state,
    leases: kube.leases,
    publisher: new RecordingPublisher(),
    notifier: new RecordingNotifier(),
    clock,
    logger: silentLogger,
    holder: 'r1',
    config,
  };
});

describe('idle GPUs lent through quotas', () => {
  it('counts a told, idle, lent device as free: the owner’s usage is counted without it', async () => {
    node([track()]);
    const { facts, lending: l } = await lending();
    expect(l.loans).toEqual([
      { namespace: 'research', pod: 'notebook', node: 'gpu-0', device: DEV, resource: GPU, since: T0 - 130 * MIN },
    ]);
    expect(l.lent).toEqual({ research: { [GPU]: 1 } });
    expect(lendIdle(facts, l).usage).toEqual({ research: { [GPU]: 0 }, train: { [GPU]: 2 } });
    expect(loanWords(l, 'research')[0]).toMatch(
      /^lends 1 idle nvidia\.com\/gpu \(notebook idle since 2026-12-05T00:50/,
    );
    expect(loanWords(l, 'train')).toEqual([]);
  });

  it('reads a record that keeps ended runs (history) as one that does not: its open runs lend', async () => {
    const history = [{ namespace: 'research', pod: 'old', day: '2026-12-04', ms: 3_600_000 }];
    node(undefined, {
      annotations: { [IDLE_ANNOTATION]: JSON.stringify({ v: 1, tracks: [track()], history, closedTo: T0 - 1e7 }) },
    });
    expect((await lending()).lending.lent).toEqual({ research: { [GPU]: 1 } });
  });

  it('lends nothing on stale evidence, an untold run, another pod of the same name, or a node or GPU taken out', async () => {
    const refused = async () => (await lending()).lending;
    node([track({ lend: { resource: GPU, uid: notebook.uid, until: T0 } })]);
    expect((await refused()).loans).toEqual([]);
    expect((await refused()).refused[0]!.why).toMatch(/unseen time lends nothing/);
    node([track({ notifiedAt: undefined })]);
    expect((await refused()).loans).toEqual([]);
    node([track({ lend: { resource: GPU, uid: 'uid-of-an-earlier-notebook', until: T0 + 4 * MIN } })]);
    expect((await refused()).refused[0]!.why).toMatch(/not on gpu-0/);
    // The very pod, but the record sits on another node: not evidence about that pod.
    node(undefined);
    kube.cluster.addNode({
      name: 'gpu-1',
      allocatable: { [GPU]: '4' },
      annotations: { [IDLE_ANNOTATION]: JSON.stringify({ v: 1, tracks: [track()] }) },
    });
    expect((await refused()).refused[0]!.why).toMatch(/not on gpu-1/);
    node([track()], { unschedulable: true });
    expect((await refused()).refused[0]!.why).toMatch(/no capacity/);
    node([track()], { taints: [{ key: DEFAULT_TAINT_KEY, effect: 'NoSchedule' }] });
    expect((await refused()).loans).toEqual([]);
    node([track()], { annotations: { [QUARANTINED_GPUS_ANNOTATION]: JSON.stringify([DEV]) } });
    expect((await refused()).refused[0]!.why).toMatch(/fenced/);
  });

  it('lends nothing on a node whose fenced GPUs cannot be read: the GPU may be one remediation holds', async () => {
    // Read as "none fenced", the owner's usage was counted without a GPU that may be quarantined: its quota fell by one
    // and another team's rose on a GPU nobody can schedule on.
    for (const bad of ['not json', JSON.stringify({ gpus: [DEV] })]) {
      node([track()], { annotations: { [QUARANTINED_GPUS_ANNOTATION]: bad } });
      const { lending: l } = await lending();
      expect(l.loans).toEqual([]);
      expect(l.refused[0]!.why).toMatch(/cannot be read/);
    }
  });

  it('never lends more than the pod asks for, nor for a namespace or resource the quotas do not manage', async () => {
    const other = 'GPU-00000000-0000-4000-8000-000000000001';
    node([track(), track({ device: other, gpu: other })]);
    const l = (await lending()).lending;
    expect(l.lent).toEqual({ research: { [GPU]: 1 } });
    expect(l.refused[0]!.why).toMatch(/asks for 1 nvidia\.com\/gpu: no more/);
    node([track({ lend: { resource: 'nvidia.com/mig-1g.10gb', uid: notebook.uid, until: T0 + 4 * MIN } })]);
    expect((await lending()).lending.loans).toEqual([]);
    const outside = kube.cluster.addPod({
      name: 'nb',
      namespace: 'sandbox',
      nodeName: 'gpu-0',
      requests: { [GPU]: 1 },
    });
    node([track({ namespace: 'sandbox', pod: 'nb', lend: { resource: GPU, uid: outside.uid, until: T0 + 4 * MIN } })]);
    expect((await lending()).lending).toEqual({ loans: [], refused: [], lent: {} });
  });

  it('rewrite-quotas offers the idle GPU to the team that wants it, and gives it back once utilization returns', async () => {
    // Round 1, nothing idle: 4 GPUs, research uses 1, train 2 (its quota full: it wants more).
    await rewriteQuotas(deps);
    expect([await hard('research'), await hard('train')]).toEqual(['2', '2']);
    // The notebook is idle, told and lent: research keeps its usage + headroom, train borrows the rest.
    node([track()]);
    const lent = await rewriteQuotas(deps);
    expect(lent.lending?.loans.map((x) => x.pod)).toEqual(['notebook']);
    expect([await hard('research'), await hard('train')]).toEqual(['1', '3']);
    const research = lent.plan.namespaces.find((n) => n.namespace === 'research')!;
    expect(research.changes).toEqual([{ key: K, from: 2, to: 1 }]);
    const published = (deps.publisher as RecordingPublisher).published.map((e) => e.detail as { reason: string });
    expect(published.some((d) => /lends 1 idle nvidia\.com\/gpu \(notebook idle since/.test(d.reason))).toBe(true);
    // Utilization returns: idle-gpus drops the track; the next rewrite takes the GPU back at once.
    node(undefined);
    await clock.advance(5 * MIN);
    const back = await rewriteQuotas(deps);
    expect(back.lending?.loans).toEqual([]);
    expect([await hard('research'), await hard('train')]).toEqual(['2', '2']);
  });

  it('dry run (the shared wiring’s ports): the loan is planned and recorded, no quota changes', async () => {
    await rewriteQuotas(deps);
    node([track()]);
    const actions: DryRunAction[] = [];
    const bus = new RecordingPublisher();
    const dry: QuotaDeps = {
      ...deps,
      ...dryRunPorts(kube, (a) => actions.push(a)),
      publisher: new DryRunPublisher(bus),
      notifier: new DryRunNotifier(),
    };
    const out = await rewriteQuotas(dry);
    expect(out.changed).toEqual(['research', 'train']);
    expect([await hard('research'), await hard('train')]).toEqual(['2', '2']);
    const applied = actions
      .filter((a) => a.op === 'quotas.applyQuota')
      .map((a) => [a.args[0], (a.args[2] as { hard: object }).hard]);
    expect(applied).toEqual([
      ['research', { [K]: '1' }],
      ['train', { [K]: '3' }],
    ]);
    expect(bus.published.every((e) => e.detail.dryRun === true)).toBe(true);
  });

  it('writes nothing itself: with no loans the facts are the very object read', async () => {
    const { facts, lending: l } = await lending();
    expect(lendIdle(facts, l)).toBe(facts);
  });
});

describe("rewrite-quotas' rule takes idle-gpus' word at once", () => {
  // A loan starts when idle-gpus tells the owner and ends when the device works again or is reclaimed:
  // rewrite-quotas runs on each of those, not only at its next 5-minute round (issue #33).
  const rule = JSON.parse(readFileSync(new URL('../../events/patterns/rewrite-quotas.json', import.meta.url), 'utf8'));
  const example = JSON.parse(
    readFileSync(new URL('../../events/catalog/gpu-idle-allocation.example.json', import.meta.url), 'utf8'),
  );
  it.each(['idle', 'cancelled', 'evicted'])('matches GPU Idle Allocation %s', (state) => {
    expect(matchesPattern(rule, { ...example, detail: { ...example.detail, state } })).toBe(true);
  });
});
