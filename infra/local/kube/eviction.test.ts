import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim, type ManualClock } from './index.ts';
import { clients, failure } from './test-helpers.ts';

/** Two T4 nodes; the serving ReplicaSet has 2 pods on t4-0 under a PDB of minAvailable 2. */
const fleet: Fleet = {
  nodes: [
    {
      name: 't4',
      count: 2,
      labels: { accelerator: 'nvidia-tesla-t4' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 2 },
    },
  ],
  namespaces: [{ name: 'serve' }],
  podDisruptionBudgets: [
    { name: 'llm', namespace: 'serve', minAvailable: 2, selector: { matchLabels: { app: 'llm' } } },
  ],
  pods: [
    {
      name: 'llm',
      namespace: 'serve',
      count: 2,
      node: 't4-0',
      owner: { kind: 'ReplicaSet' as const, name: 'llm-6f7' },
      labels: { app: 'llm' },
      requests: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: 30,
    },
  ],
};

describe('eviction against PodDisruptionBudgets', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterEach(() => sim.close());

  const evict = (name: string) =>
    c.core.createNamespacedPodEviction({
      name,
      namespace: 'serve',
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: 'serve' } },
    });

  it('computes the budget status from the pods it selects', async () => {
    const pdb = await c.policy.readNamespacedPodDisruptionBudget({ name: 'llm', namespace: 'serve' });
    expect(pdb.status).toMatchObject({ currentHealthy: 2, desiredHealthy: 2, disruptionsAllowed: 0, expectedPods: 2 });
  });

  it('refuses an eviction that would break the budget with 429 TooManyRequests', async () => {
    const f = await failure(() => evict('llm-0'));
    expect(f.code).toBe(429);
    expect(f.status).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      code: 429,
    });
    expect(f.status.details?.causes?.[0]?.message).toBe(
      'The disruption budget llm needs 2 healthy pods and has 2 currently',
    );
    expect(sim.store.pod('serve', 'llm-0')!.metadata.deletionTimestamp).toBeUndefined();
  });

  it('allows the eviction once a third healthy replica runs elsewhere, then replaces the evicted pod', async () => {
    await c.core.createNamespacedPod({
      namespace: 'serve',
      body: {
        metadata: {
          name: 'llm-extra',
          labels: { app: 'llm' },
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'llm-6f7', uid: 'rs-uid', controller: true },
          ],
        },
        spec: { containers: [{ name: 'main', image: 'llm', resources: { requests: { 'nvidia.com/gpu': '1' } } }] },
      },
    });
    expect(sim.store.pod('serve', 'llm-extra')!.spec.nodeName).toBe('t4-1');
    const pdb = await c.policy.readNamespacedPodDisruptionBudget({ name: 'llm', namespace: 'serve' });
    expect(pdb.status?.disruptionsAllowed).toBe(1);

    await c.core.patchNode({ name: 't4-0', body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });
    await evict('llm-0');
    const evicted = sim.store.pod('serve', 'llm-0')!;
    expect(evicted.metadata.deletionTimestamp).toBe('2026-01-01T00:00:30Z');
    // The ReplicaSet's replacement is created at once and lands on the only node with room.
    const replacements = sim.store
      .pods('serve')
      .filter((p) => !['llm-0', 'llm-1', 'llm-extra'].includes(p.metadata.name));
    expect(replacements).toHaveLength(1);
    expect(replacements[0]!.metadata.name).toMatch(/^llm-6f7-[a-z0-9]{5}$/);
    expect(replacements[0]!.spec.nodeName).toBe('t4-1');
    expect(replacements[0]!.status?.phase).toBe('Running');
    // The terminating pod no longer counts; llm-1, llm-extra and the replacement do.
    const again = await c.policy.readNamespacedPodDisruptionBudget({ name: 'llm', namespace: 'serve' });
    expect(again.status).toMatchObject({ currentHealthy: 3, desiredHealthy: 2, disruptionsAllowed: 1 });
  });

  it('treats evicting a pod that is already terminating as done (201)', async () => {
    await c.core.deleteNamespacedPod({ name: 'llm-1', namespace: 'serve' });
    await expect(evict('llm-1')).resolves.toBeDefined();
  });

  it('answers 404 for evicting a missing pod', async () => {
    const f = await failure(() => evict('ghost'));
    expect(f.code).toBe(404);
    expect(f.status.message).toBe('pods "ghost" not found');
  });
});

describe('pod deletion and controllers on the injected clock', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeEach(async () => {
    sim = await startKubeSim({
      fleet: {
        ...fleet,
        podDisruptionBudgets: [],
        pods: [
          ...(fleet.pods ?? []),
          {
            name: 'db',
            namespace: 'serve',
            count: 1,
            node: 't4-1',
            owner: { kind: 'StatefulSet' as const, name: 'db' },
            labels: { app: 'db' },
            terminationGracePeriodSeconds: 10,
          },
          { name: 'lonely', namespace: 'serve', node: 't4-1' },
        ],
      },
    });
    c = clients(sim);
  });
  afterEach(() => sim.close());

  it('keeps a deleted pod terminating for its grace period, then removes it', async () => {
    const out = await c.core.deleteNamespacedPod({ name: 'lonely', namespace: 'serve', gracePeriodSeconds: 20 });
    expect(out.metadata?.deletionTimestamp).toBeDefined();
    expect(sim.store.pod('serve', 'lonely')!.metadata.deletionGracePeriodSeconds).toBe(20);
    sim.advance(19_999);
    expect(sim.store.pod('serve', 'lonely')).toBeDefined();
    (sim.clock as ManualClock).advance(1);
    expect(sim.store.pod('serve', 'lonely')).toBeDefined();
    sim.tick();
    expect(sim.store.pod('serve', 'lonely')).toBeUndefined();
    const f = await failure(() => c.core.readNamespacedPod({ name: 'lonely', namespace: 'serve' }));
    expect(f.code).toBe(404);
  });

  it('ends staggered grace periods each at its own time, however many requests settle in between', async () => {
    // The later deadline first: the earliest due time must still be found after it.
    await c.core.deleteNamespacedPod({ name: 'lonely', namespace: 'serve', gracePeriodSeconds: 30 });
    await c.core.deleteNamespacedPod({ name: 'db-0', namespace: 'serve', gracePeriodSeconds: 10 });
    for (let i = 0; i < 3; i++) await c.core.readNamespacedPod({ name: 'lonely', namespace: 'serve' });
    sim.advance(10_000);
    // The StatefulSet recreated db-0 under its name once the old one was gone; lonely still terminates.
    expect(sim.store.pod('serve', 'db-0')?.metadata.deletionTimestamp).toBeUndefined();
    expect(sim.store.pod('serve', 'lonely')?.metadata.deletionTimestamp).toBeDefined();
    sim.advance(19_999);
    expect(sim.store.pod('serve', 'lonely')).toBeDefined();
    sim.advance(1);
    expect(sim.store.pod('serve', 'lonely')).toBeUndefined();
  });

  it('removes a pod at once with gracePeriodSeconds 0 and does not recreate an unowned pod', async () => {
    await c.core.deleteNamespacedPod({ name: 'lonely', namespace: 'serve', gracePeriodSeconds: 0 });
    expect(
      sim.store
        .pods('serve')
        .map((p) => p.metadata.name)
        .sort(),
    ).toEqual(['db-0', 'llm-0', 'llm-1']);
  });

  it('recreates a StatefulSet pod under the same name only after the old one is gone', async () => {
    const oldUid = sim.store.pod('serve', 'db-0')!.metadata.uid;
    await c.core.deleteNamespacedPod({ name: 'db-0', namespace: 'serve' });
    expect(sim.store.pod('serve', 'db-0')!.metadata.uid).toBe(oldUid);
    sim.advance(10_000);
    const fresh = sim.store.pod('serve', 'db-0')!;
    expect(fresh.metadata.uid).not.toBe(oldUid);
    expect(fresh.metadata.deletionTimestamp).toBeUndefined();
    expect(fresh.status?.phase).toBe('Running');
  });

  it('replaces a deleted ReplicaSet pod with a new Pending-then-bound pod of a new name', async () => {
    await c.core.deleteNamespacedPod({ name: 'llm-0', namespace: 'serve', gracePeriodSeconds: 0 });
    const names = sim.store.pods('serve').map((p) => p.metadata.name);
    expect(names).not.toContain('llm-0');
    const fresh = sim.store.pods('serve').filter((p) => p.metadata.name.startsWith('llm-6f7-'));
    expect(fresh).toHaveLength(1);
    expect(fresh[0]!.metadata.ownerReferences?.[0]).toMatchObject({
      kind: 'ReplicaSet',
      name: 'llm-6f7',
      controller: true,
    });
    expect(fresh[0]!.spec.nodeName).toBeDefined();
  });
});

describe('eviction of unhealthy pods', () => {
  it.each([
    [undefined, 429],
    ['AlwaysAllow', 201],
  ])('with unhealthyPodEvictionPolicy %s answers %s for a not-ready pod below budget', async (policy, code) => {
    const sim = await startKubeSim({ fleet: { ...fleet, podDisruptionBudgets: [] } });
    const { core, policy: pol } = clients(sim);
    try {
      await pol.createNamespacedPodDisruptionBudget({
        namespace: 'serve',
        body: {
          metadata: { name: 'llm' },
          spec: {
            minAvailable: 2,
            selector: { matchLabels: { app: 'llm' } },
            ...(policy ? { unhealthyPodEvictionPolicy: policy } : {}),
          },
        },
      });
      const pod = await core.readNamespacedPod({ name: 'llm-0', namespace: 'serve' });
      pod.status!.conditions = [{ type: 'Ready', status: 'False' }];
      await core.replaceNamespacedPodStatus({ name: 'llm-0', namespace: 'serve', body: pod });
      const evict = () =>
        core.createNamespacedPodEviction({ name: 'llm-0', namespace: 'serve', body: { metadata: { name: 'llm-0' } } });
      if (code === 429) expect((await failure(evict)).code).toBe(429);
      else {
        await evict();
        expect(sim.store.pod('serve', 'llm-0')!.metadata.deletionTimestamp).toBeDefined();
      }
    } finally {
      await sim.close();
    }
  });
});

/**
 * The disruption controller counts only Ready pods, so while a replacement is starting a budget
 * has no room: kubectl drain's second and third evictions get 429 until the replacements are Ready
 * (Eviction API docs, "API-initiated eviction": 429 Too Many Requests; the client retries).
 */
describe('back-to-back evictions while replacements are not yet Ready', () => {
  const slow: Fleet = {
    nodes: [{ name: 't4', count: 4, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 1 } }],
    namespaces: [{ name: 'serve' }],
    podDisruptionBudgets: [
      { name: 'llm', namespace: 'serve', maxUnavailable: 1, selector: { matchLabels: { app: 'llm' } } },
    ],
    pods: [
      {
        name: 'llm',
        namespace: 'serve',
        count: 3,
        owner: { kind: 'ReplicaSet' as const, name: 'llm-6f7' },
        labels: { app: 'llm' },
        requests: { 'nvidia.com/gpu': 1 },
        terminationGracePeriodSeconds: 5,
        readyAfterSeconds: 40,
      },
    ],
  };
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet: slow });
    sim.advance(40_000);
    c = clients(sim);
  });
  afterEach(() => sim.close());

  const evict = (name: string) =>
    c.core.createNamespacedPodEviction({
      name,
      namespace: 'serve',
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: 'serve' } },
    });
  const budget = async () =>
    (await c.policy.readNamespacedPodDisruptionBudget({ name: 'llm', namespace: 'serve' })).status;

  it('starts the pods not Ready, then Ready once their delay has passed', async () => {
    const fresh = await startKubeSim({ fleet: slow });
    try {
      const ready = () =>
        fresh.store.pods('serve').map((p) => p.status?.conditions?.find((x) => x.type === 'Ready')?.status);
      expect(ready()).toEqual(['False', 'False', 'False']);
      fresh.advance(39_999);
      expect(ready()).toEqual(['False', 'False', 'False']);
      fresh.advance(1);
      expect(ready()).toEqual(['True', 'True', 'True']);
    } finally {
      await fresh.close();
    }
  });

  it('answers 429 to the second eviction until the first replacement is Ready, then allows it', async () => {
    expect(await budget()).toMatchObject({ currentHealthy: 3, desiredHealthy: 2, disruptionsAllowed: 1 });
    await evict('llm-0');
    const replacement = sim.store.pods('serve').find((p) => !/^llm-[0-2]$/.test(p.metadata.name))!;
    expect(replacement.status).toMatchObject({ phase: 'Running' });
    expect(replacement.status?.conditions?.find((x) => x.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
    });
    expect(await budget()).toMatchObject({ currentHealthy: 2, desiredHealthy: 2, disruptionsAllowed: 0 });

    const f = await failure(() => evict('llm-1'));
    expect(f.code).toBe(429);
    expect(f.status.details?.causes?.[0]?.message).toBe(
      'The disruption budget llm needs 2 healthy pods and has 2 currently',
    );
    sim.advance(39_000);
    expect((await failure(() => evict('llm-1'))).code).toBe(429);

    sim.advance(1_000);
    expect(await budget()).toMatchObject({ currentHealthy: 3, disruptionsAllowed: 1 });
    await evict('llm-1');
    expect(sim.store.pod('serve', 'llm-1')!.metadata.deletionTimestamp).toBeDefined();
  });
});
