import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { backoffMs, CreateRetries } from './create-retries.ts';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients, k8s, patchWith } from './test-helpers.ts';
import type { KubeObject } from './types.ts';

describe("a controller's retries of a refused replica", () => {
  it('back off as the default controller rate limiter does: 5 ms doubling, at most 1000 s', () => {
    expect([1, 2, 3, 4, 10].map(backoffMs)).toEqual([5, 10, 20, 40, 2560]);
    expect(backoffMs(30)).toBe(1_000_000);
  });

  it('counts the tries a controller would have made between two settles, so its backoff grows as a real one does', () => {
    const r = new CreateRetries();
    expect(r.refused('ReplicaSet a/rs', { metadata: { name: 'p' } } as KubeObject, 0)).toBe(5);
    // Tries at 5, 15, 35, 75, 155, 315, 635 ms would all have failed; the next is 635 + 640.
    expect(
      r.retryDue(1_000, () => {
        throw new Error('exceeded quota');
      }),
    ).toBe(1_275);
    expect(r.retryDue(1_275, () => {})).toBe(Number.POSITIVE_INFINITY);
    expect(r.waiting().size).toBe(0);
  });
});

/** Three serving replicas fill a quota of three GPUs; a deleted one's replacement is refused while it terminates. */
describe('a ReplicaSet whose replacement a ResourceQuota refused', () => {
  const fleet: Fleet = {
    nodes: [{ name: 't4', count: 4, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 1 } }],
    namespaces: [{ name: 'serve', quotas: [{ name: 'gpu', hard: { 'requests.nvidia.com/gpu': 3 } }] }],
    pods: [
      {
        name: 'llm',
        namespace: 'serve',
        count: 3,
        owner: { kind: 'ReplicaSet' as const, name: 'llm-6f7' },
        labels: { app: 'llm' },
        requests: { 'nvidia.com/gpu': 1 },
        terminationGracePeriodSeconds: 30,
      },
    ],
  };
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeEach(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterEach(() => sim.close());

  const live = () => sim.store.pods('serve').filter((p) => !p.metadata.deletionTimestamp).length;

  it('is created once the terminating pod no longer counts against the quota', async () => {
    await c.core.deleteNamespacedPod({ name: 'llm-0', namespace: 'serve' });
    // The terminating pod still counts (quota's QuotaV1Pod: until its grace period ends): refused.
    expect(live()).toBe(2);
    expect(sim.cluster.lifecycle.failures.at(-1)).toMatch(/^ReplicaSet serve\/llm-6f7: .*exceeded quota: gpu/);
    sim.advance(29_000);
    expect(live()).toBe(2);
    sim.advance(1_000);
    expect(live()).toBe(3);
    expect(sim.store.pods('serve').map((p) => p.status?.phase)).toEqual(['Running', 'Running', 'Running']);
  });

  it('keeps trying while the quota stays full, and creates it within the backoff cap once quota is raised', async () => {
    const hard = (gpus: string) =>
      c.core.patchNamespacedResourceQuota(
        { name: 'gpu', namespace: 'serve', body: { spec: { hard: { 'requests.nvidia.com/gpu': gpus } } } },
        patchWith(k8s.PatchStrategy.MergePatch),
      );
    await hard('2');
    await c.core.deleteNamespacedPod({ name: 'llm-0', namespace: 'serve', gracePeriodSeconds: 0 });
    for (let i = 0; i < 6; i++) sim.advance(600_000); // an hour of refusals: the backoff reaches its cap
    expect(live()).toBe(2);
    const failures = sim.cluster.lifecycle.failures;
    expect(failures.length).toBeLessThan(10); // one try per settle, not one per missed retry
    // Each try is a new create with generateName, so each refusal names another pod.
    const names = failures.map((f) => /pods "([^"]+)" is forbidden/.exec(f)?.[1]);
    expect(new Set(names).size).toBe(failures.length);
    await hard('3');
    sim.advance(1_000_000);
    expect(live()).toBe(3);
    expect(sim.store.pods('serve').filter((p) => p.metadata.name.startsWith('llm-6f7-'))).toHaveLength(1);
  });

  it("tries again at once when one of the owner's pods changes, as its informer enqueues it", async () => {
    const hard = (gpus: string) =>
      c.core.patchNamespacedResourceQuota(
        { name: 'gpu', namespace: 'serve', body: { spec: { hard: { 'requests.nvidia.com/gpu': gpus } } } },
        patchWith(k8s.PatchStrategy.MergePatch),
      );
    await hard('2');
    await c.core.deleteNamespacedPod({ name: 'llm-0', namespace: 'serve', gracePeriodSeconds: 0 });
    sim.advance(3_600_000);
    await hard('3'); // quotas are not the ReplicaSet controller's to watch: nothing yet
    expect(live()).toBe(2);
    await c.core.patchNamespacedPod(
      { name: 'llm-1', namespace: 'serve', body: { metadata: { labels: { app: 'llm', touched: 'yes' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    expect(live()).toBe(3);
  });
});
