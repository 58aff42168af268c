/**
 * The real adapters, through the real @kubernetes/client-node, against the simulated cluster
 * (infra/local/kube). Each test starts a fresh simulated API server on a loopback port.
 */
import { CoreV1Api, PatchStrategy, PolicyV1Api, setHeaderOptions } from '@kubernetes/client-node';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { startKubeSim, type Fleet } from '../../../infra/local/kube/index.ts';
import { manualClock } from '../clock.ts';
import { ConfigurationError, ConflictError, ForbiddenError, fromKubeError } from '../errors.ts';
import { loadKubeConfig, makeKubeApis } from './config.ts';
import { describePortContracts } from './contract.ts';
import { drain, drainOnce } from './drain.ts';
import type { KubeHarness, PodSeed } from './contract.ts';
import { kubePorts } from './client.ts';
import { KubeLeaseOps } from './kube-lease-ops.ts';
import { KubeNodeOps } from './kube-node-ops.ts';
import { KubePodOps } from './kube-pod-ops.ts';
import { KubeStateStore } from './kube-state-store.ts';

type Sim = Awaited<ReturnType<typeof startKubeSim>>;
const NS = 'gpu-reflex';
const MERGE = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  try {
    await core.createNamespace({ body: { metadata: { name } } });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
}

function podBody(s: PodSeed) {
  return {
    metadata: {
      name: s.name,
      namespace: s.namespace,
      labels: s.labels,
      annotations: s.annotations,
      ...(s.ownerKind
        ? {
            ownerReferences: [
              {
                apiVersion: 'apps/v1',
                kind: s.ownerKind,
                name: `${s.name}-owner`,
                uid: `uid-${s.name}-owner`,
                controller: true,
              },
            ],
          }
        : {}),
    },
    spec: {
      nodeName: s.nodeName,
      terminationGracePeriodSeconds: s.gracePeriodSeconds ?? 30,
      containers: [
        {
          name: 'main',
          image: 'cuda:12',
          ...(s.gpus ? { resources: { limits: { 'nvidia.com/gpu': String(s.gpus) } } } : {}),
        },
      ],
    },
  };
}

interface SimContext {
  sim: Sim;
  kc: KubeConfig;
  core: CoreV1Api;
}

async function startSim(fleet?: Fleet): Promise<SimContext> {
  const sim = await startKubeSim(fleet ? { fleet } : {});
  const kc = loadKubeConfig({ kubeconfigText: sim.kubeconfig() });
  const core = kc.makeApiClient(CoreV1Api);
  await ensureNamespace(core, NS);
  return { sim, kc, core };
}

/** `as`: the ports' requests impersonate that user (seeding stays the admin's); `fleet`: what the sim holds. */
async function simHarness(as?: string, fleet?: Fleet): Promise<KubeHarness> {
  const { sim, kc, core } = await startSim(fleet);
  const policy = kc.makeApiClient(PolicyV1Api);
  const clock = manualClock(Date.UTC(2026, 0, 1), (ms) => sim.advance(ms));
  const portsKc = as ? loadKubeConfig({ kubeconfigText: sim.kubeconfig(as) }) : kc;
  const ports = kubePorts(portsKc, { namespace: NS, pageSize: 2 });
  return {
    ...ports,
    clock,
    seedNamespace: (name) => ensureNamespace(core, name),
    seedNode: async (s) => {
      await core.createNode({
        body: {
          metadata: { name: s.name, labels: s.labels },
          status: { allocatable: { cpu: '64', memory: '512Gi', pods: '110', 'nvidia.com/gpu': '8' } },
        },
      });
    },
    seedPod: async (s) => {
      await ensureNamespace(core, s.namespace);
      await core.createNamespacedPod({ namespace: s.namespace, body: podBody(s) });
    },
    seedPdb: async (s) => {
      await ensureNamespace(core, s.namespace);
      await policy.createNamespacedPodDisruptionBudget({
        namespace: s.namespace,
        body: {
          metadata: { name: s.name, namespace: s.namespace },
          spec: { minAvailable: s.minAvailable, selector: { matchLabels: s.matchLabels } },
        },
      });
    },
    close: async () => {
      await sim.close();
    },
  };
}

describePortContracts('real adapters on the simulated cluster', () => simHarness());

/**
 * The same contract with the ports' requests made as the functions' ServiceAccount (the kubeconfig's
 * `as:`), so the simulated server's RBAC, loaded from the repository's own infra/k8s manifests,
 * decides each one: a permission the adapters need and the manifests do not grant fails here with 403.
 */
const FUNCTIONS_SA = 'system:serviceaccount:gpu-reflex:gpu-reflex-functions';
function rbacObjects(): Record<string, unknown>[] {
  const docs = ['functions-rbac.yaml', 'functions-identity.yaml'].flatMap((f) =>
    parseAllDocuments(readFileSync(new URL(`../../../infra/k8s/${f}`, import.meta.url), 'utf8')).map(
      (d) => d.toJS() as Record<string, unknown>,
    ),
  );
  return docs.filter((d) => d && d['kind'] !== 'Namespace');
}

describePortContracts("real adapters as the functions' ServiceAccount, RBAC from infra/k8s", () =>
  simHarness(FUNCTIONS_SA, {
    namespaces: [{ name: NS }, { name: 'gpu-operator' }],
    objects: rbacObjects() as Fleet['objects'],
  }),
);

/**
 * Wraps a CoreV1Api so that, before each of the first `times` calls of `method`, another client
 * writes the same object (an annotation bump): the adapter's resourceVersion is then stale and
 * the server answers 409, exactly as when two functions race.
 */
function racing(
  core: CoreV1Api,
  method: 'patchNode' | 'replaceNamespacedConfigMap',
  times: number,
  interfere: () => Promise<unknown>,
): CoreV1Api {
  let left = times;
  return new Proxy(core, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (prop !== method || typeof value !== 'function')
        return typeof value === 'function' ? value.bind(target) : value;
      return async (...args: unknown[]) => {
        if (left > 0) {
          left--;
          await interfere();
        }
        return (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
      };
    },
  });
}

describe('real adapters on the simulated cluster: concurrency, pages, refusals', () => {
  let ctx: SimContext;
  beforeEach(async () => {
    ctx = await startSim();
  });
  afterEach(async () => {
    await ctx.sim.close();
  });

  async function node(name: string): Promise<void> {
    await ctx.core.createNode({ body: { metadata: { name } } });
  }
  let bumps = 0;
  const bumpNode = (name: string) => () =>
    ctx.core.patchNode({ name, body: { metadata: { annotations: { 'test/bump': String(++bumps) } } } }, MERGE);

  it('drain: a budget-blocked pod is evicted in a later pass once its replacement runs elsewhere', async () => {
    const h = { ...kubePorts(ctx.kc, { namespace: NS }) };
    const policy = ctx.kc.makeApiClient(PolicyV1Api);
    // `spare` has room for one pod only, so a replacement cannot start until a node is added.
    const addNode = (name: string, pods: string) =>
      ctx.core.createNode({
        body: { metadata: { name }, status: { allocatable: { cpu: '64', memory: '512Gi', pods } } },
      });
    await addNode('drain-me', '110');
    await addNode('spare', '1');
    await ensureNamespace(ctx.core, 'team-a');
    await policy.createNamespacedPodDisruptionBudget({
      namespace: 'team-a',
      body: { metadata: { name: 'serve' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'serve' } } } },
    });
    const placement = { 'serve-a': 'drain-me', 'serve-b': 'drain-me', 'serve-c': 'spare' };
    for (const [name, nodeName] of Object.entries(placement)) {
      await ctx.core.createNamespacedPod({
        namespace: 'team-a',
        body: podBody({
          namespace: 'team-a',
          name,
          nodeName,
          labels: { app: 'serve' },
          ownerKind: 'ReplicaSet',
          gracePeriodSeconds: 5,
        }),
      });
    }
    const clock = manualClock(Date.UTC(2026, 0, 1), (ms) => ctx.sim.advance(ms));
    const first = await drainOnce(h, 'drain-me');
    expect(first.evicted).toEqual(['team-a/serve-a']);
    expect(first.blocked).toEqual([{ pod: 'team-a/serve-b', reason: expect.stringMatching(/disruption budget/i) }]);
    // Room appears: the ReplicaSet's replacement for serve-a runs there, so the budget allows one more.
    await addNode('fresh', '110');
    const report = await drain(h, 'drain-me', { deadlineMs: 60_000, clock, intervalMs: 10_000 });
    expect(report.done).toBe(true);
    expect(report.evicted).toEqual(['team-a/serve-b']);
    const left = await h.pods.list({ namespace: 'team-a' });
    expect(left.filter((p) => p.nodeName === 'drain-me')).toEqual([]);
    expect(left.filter((p) => !p.terminating)).toHaveLength(3);
  });

  it('a stale resourceVersion (409) is retried and the label lands', async () => {
    await node('race-1');
    const ops = new KubeNodeOps(racing(ctx.core, 'patchNode', 2, bumpNode('race-1')), { conflictAttempts: 3 });
    expect(await ops.setLabels('race-1', { 'gpu-reflex/state': 'quarantined' })).toBe(true);
    const n = await new KubeNodeOps(ctx.core).get('race-1');
    expect(n.labels['gpu-reflex/state']).toBe('quarantined');
    expect(n.annotations['test/bump']).toBe(String(bumps));
  });

  it('a taint racing another writer keeps both writes', async () => {
    await node('race-2');
    const other = new KubeNodeOps(ctx.core);
    const ops = new KubeNodeOps(
      racing(ctx.core, 'patchNode', 1, () => other.addTaint('race-2', { key: 'other', effect: 'NoSchedule' })),
    );
    expect(await ops.addTaint('race-2', { key: 'gpu-reflex/xid', value: '79', effect: 'NoSchedule' })).toBe(true);
    expect((await other.get('race-2')).taints.map((t) => t.key).sort()).toEqual(['gpu-reflex/xid', 'other']);
  });

  it('conflicts beyond the retry budget surface as ConflictError and the node is unchanged', async () => {
    await node('race-3');
    const ops = new KubeNodeOps(racing(ctx.core, 'patchNode', 3, bumpNode('race-3')), { conflictAttempts: 3 });
    const err = await ops.setAnnotations('race-3', { 'gpu-reflex/reason': 'XID 79' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).message).toMatch(/still conflicting after 3 attempts/);
    expect((await new KubeNodeOps(ctx.core).get('race-3')).annotations).not.toHaveProperty('gpu-reflex/reason');
  });

  it('the state ConfigMap re-applies the update over a concurrent write', async () => {
    const plain = new KubeStateStore(ctx.core, { namespace: NS });
    await plain.update('a', () => 1);
    let runs = 0;
    const racer = new KubeStateStore(
      racing(ctx.core, 'replaceNamespacedConfigMap', 1, () => plain.update('b', () => 'theirs')),
      { namespace: NS },
    );
    expect(await racer.update('a', (cur) => (runs++, (typeof cur === 'number' ? cur : 0) + 10))).toBe(11);
    expect(runs).toBe(2);
    expect(await plain.getAll()).toEqual({ a: 11, b: 'theirs' });
  });

  it('node and pod lists follow continue past the page limit', async () => {
    for (let i = 0; i < 7; i++) await node(`page-${i}`);
    await ensureNamespace(ctx.core, 'team-a');
    for (let i = 0; i < 5; i++)
      await ctx.core.createNamespacedPod({
        namespace: 'team-a',
        body: podBody({ namespace: 'team-a', name: `p-${i}`, nodeName: 'page-0' }),
      });
    let nodePages = 0;
    let podPages = 0;
    const counting = new Proxy(ctx.core, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (prop === 'listNode') nodePages++;
          if (prop === 'listPodForAllNamespaces') podPages++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const nodes = await new KubeNodeOps(counting, { pageSize: 3 }).list();
    expect(nodes.map((n) => n.name).sort()).toEqual([
      'page-0',
      'page-1',
      'page-2',
      'page-3',
      'page-4',
      'page-5',
      'page-6',
    ]);
    expect(nodePages).toBe(3);
    const pods = await new KubePodOps(counting, { pageSize: 2 }).listOnNode('page-0');
    expect(pods).toHaveLength(5);
    expect(podPages).toBe(3);
  });

  it('a quota applied through QuotaOps refuses an over-quota pod with a clear ForbiddenError', async () => {
    await ensureNamespace(ctx.core, 'team-q');
    await node('q-node');
    const ports = kubePorts(ctx.kc, { namespace: NS });
    await ports.quotas.applyQuota('team-q', 'gpu', { hard: { 'requests.nvidia.com/gpu': '1' } });
    const err = await ctx.core
      .createNamespacedPod({
        namespace: 'team-q',
        body: podBody({ namespace: 'team-q', name: 'big', nodeName: 'q-node', gpus: 2 }),
      })
      .catch((e: unknown) => fromKubeError(e, 'creating pod team-q/big'));
    expect(err).toBeInstanceOf(ForbiddenError);
    expect((err as ForbiddenError).message).toMatch(/^creating pod team-q\/big: .*exceeded quota/);
    expect((err as ForbiddenError).status).toBe(403);
  });

  it('exactly one of two contenders takes an expired lease', async () => {
    const clock = manualClock();
    const { coordination } = makeKubeApis(ctx.kc);
    const [a, b, c] = [0, 1, 2].map(() => new KubeLeaseOps(coordination, NS));
    await a!.tryAcquire('pool-x', 'fn-a', 15, clock);
    await clock.advance(16_000);
    const results = await Promise.all([
      b!.tryAcquire('pool-x', 'fn-b', 15, clock),
      c!.tryAcquire('pool-x', 'fn-c', 15, clock),
    ]);
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    const winner = results.find((r) => r.acquired)?.lease.holder;
    expect(results.find((r) => !r.acquired)?.lease.holder).toBe(winner);
    expect((await a!.get('pool-x'))?.holder).toBe(winner);
  });

  it('exactly one of two contenders creates a new lease', async () => {
    const clock = manualClock();
    const { coordination } = makeKubeApis(ctx.kc);
    const results = await Promise.all(
      ['fn-b', 'fn-c'].map((h) => new KubeLeaseOps(coordination, NS).tryAcquire('pool-y', h, 15, clock)),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
  });

  it('takes a free lease in one request and frees it in one, leaving no Lease behind', async () => {
    const clock = manualClock();
    const { coordination } = makeKubeApis(ctx.kc);
    const leases = new KubeLeaseOps(coordination, NS);
    const seen: string[] = [];
    const count = (req: { method?: string; url?: string }) =>
      seen.push(`${req.method} ${(req.url ?? '').split('?')[0]}`);
    ctx.sim.server.on('request', count);
    expect((await leases.tryAcquire('remediate-n2', 'fn-a', 15, clock)).acquired).toBe(true);
    expect(await leases.release('remediate-n2', 'fn-a')).toBe(true);
    ctx.sim.server.off('request', count);
    expect(seen).toEqual([
      `POST /apis/coordination.k8s.io/v1/namespaces/${NS}/leases`,
      `DELETE /apis/coordination.k8s.io/v1/namespaces/${NS}/leases/remediate-n2`,
    ]);
    expect(await leases.get('remediate-n2')).toBeUndefined();
  });

  it("a holder whose lease expired and was taken over releases nothing of the new holder's", async () => {
    const clock = manualClock();
    const { coordination } = makeKubeApis(ctx.kc);
    const [a, b] = [0, 1].map(() => new KubeLeaseOps(coordination, NS));
    await a!.tryAcquire('remediate-n3', 'fn-a', 15, clock);
    await clock.advance(16_000);
    expect((await b!.tryAcquire('remediate-n3', 'fn-b', 15, clock)).acquired).toBe(true);
    expect(await a!.release('remediate-n3', 'fn-a')).toBe(false);
    expect((await b!.get('remediate-n3'))?.holder).toBe('fn-b');
    expect(await b!.release('remediate-n3', 'fn-b')).toBe(true);
    expect(await b!.get('remediate-n3')).toBeUndefined();
  });

  it('where the Role does not grant delete yet, release frees the lease as before (a rolling upgrade leaves none held)', async () => {
    const clock = manualClock();
    const { coordination } = makeKubeApis(ctx.kc);
    const [a, b] = [0, 1].map(() => new KubeLeaseOps(coordination, NS));
    await a!.tryAcquire('remediate-n4', 'fn-a', 15, clock);
    ctx.sim.faults.inject({ method: 'DELETE', path: '/leases/remediate-n4', code: 403 });
    expect(await a!.release('remediate-n4', 'fn-a')).toBe(true);
    expect(await a!.get('remediate-n4')).toMatchObject({ holder: undefined });
    expect((await b!.tryAcquire('remediate-n4', 'fn-b', 15, clock)).acquired).toBe(true);
  });

  it('a missing namespace is a configuration error naming it, not an "already done" not-found', async () => {
    const { coordination } = makeKubeApis(ctx.kc);
    const attempt = new KubeLeaseOps(coordination, 'no-such-namespace').tryAcquire(
      'remediate-n1',
      'fn-a',
      15,
      manualClock(),
    );
    await expect(attempt).rejects.toBeInstanceOf(ConfigurationError);
    await expect(attempt).rejects.toThrow(/namespace "no-such-namespace" does not exist/);
  });

  it('writes lease times as microsecond RFC 3339 (MicroTime) on the wire', async () => {
    const clock = manualClock(Date.UTC(2026, 0, 1, 12, 0, 0, 123));
    const { coordination } = makeKubeApis(ctx.kc);
    await new KubeLeaseOps(coordination, NS).tryAcquire('pool-z', 'fn-a', 15, clock);
    const res = await fetch(`${ctx.sim.url}/apis/coordination.k8s.io/v1/namespaces/${NS}/leases/pool-z`);
    const lease = (await res.json()) as {
      spec: { renewTime: string; acquireTime: string; leaseDurationSeconds: number };
    };
    expect(lease.spec).toMatchObject({
      renewTime: '2026-01-01T12:00:00.123000Z',
      acquireTime: '2026-01-01T12:00:00.123000Z',
      leaseDurationSeconds: 15,
    });
  });
});
