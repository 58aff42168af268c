import * as k8s from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { moreImportantFirst, pickCandidate, type Candidate } from './preemption.ts';
import { clients, failure } from './test-helpers.ts';
import type { Pod } from './types.ts';

/**
 * The simulated scheduler's preemption (issue #28; rules and sources in preemption.ts): a pending pod of higher
 * priority that fits nowhere gets the lower-priority pods of one node deleted and that node nominated, binds there once
 * they are gone, and the room is not taken meanwhile by a pod of lower priority.
 */
const gpuNode = (name: string, count: number, labels: Record<string, string> = {}) => ({
  name,
  count,
  labels,
  allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 1 },
});

function fleetWith(extra: Partial<Fleet> = {}): Fleet {
  return {
    nodes: [gpuNode('gpu', 2)],
    namespaces: [{ name: 'ml' }],
    pods: [
      {
        name: 'batch-a',
        namespace: 'ml',
        count: 1,
        node: 'gpu-0',
        owner: { kind: 'ReplicaSet' as const, name: 'batch-a-1' },
        labels: { app: 'batch-a' },
        requests: { 'nvidia.com/gpu': 1 },
        terminationGracePeriodSeconds: 30,
      },
      {
        name: 'batch-b',
        namespace: 'ml',
        count: 1,
        node: 'gpu-1',
        owner: { kind: 'ReplicaSet' as const, name: 'batch-b-1' },
        labels: { app: 'batch-b' },
        requests: { 'nvidia.com/gpu': 1 },
        terminationGracePeriodSeconds: 30,
        priority: 10,
        priorityClassName: 'batch-10',
      },
      { name: 'sidecar', namespace: 'ml', count: 1, node: 'gpu-1', requests: { cpu: '1' } },
    ],
    ...extra,
  } as Fleet;
}

describe('preemption by the simulated scheduler', () => {
  let sim: KubeSim | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  async function start(fleet: Fleet) {
    sim = await startKubeSim({ fleet });
    const c = clients(sim);
    const scheduling = c.kc.makeApiClient(k8s.SchedulingV1Api);
    await scheduling.createPriorityClass({
      body: { metadata: { name: 'serving' }, value: 1000, description: 'online inference' },
    });
    await scheduling.createPriorityClass({
      body: { metadata: { name: 'serving-never' }, value: 1000, preemptionPolicy: 'Never' },
    });
    return c;
  }
  const podBody = (name: string, priorityClassName?: string): k8s.V1Pod => ({
    metadata: { name, namespace: 'ml' },
    spec: {
      ...(priorityClassName ? { priorityClassName } : {}),
      containers: [
        { name: 'main', image: 'registry.local/serve:1', resources: { requests: { 'nvidia.com/gpu': '1' } } },
      ],
    },
  });
  const read = (c: ReturnType<typeof clients>, name: string) => c.core.readNamespacedPod({ name, namespace: 'ml' });

  it('admission resolves the class: priority and policy come from it, an unknown class is refused', async () => {
    const c = await start(fleetWith());
    const created = await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('serve', 'serving') });
    expect(created.spec).toMatchObject({ priority: 1000, preemptionPolicy: 'PreemptLowerPriority' });
    const f = await failure(() => c.core.createNamespacedPod({ namespace: 'ml', body: podBody('x', 'nope') }));
    expect(f.code).toBe(403);
    expect(f.status.message).toBe('pods "x" is forbidden: no PriorityClass with name nope was found');
    const stated = { ...podBody('y', 'serving'), spec: { ...podBody('y', 'serving').spec!, priority: 5 } };
    const g = await failure(() => c.core.createNamespacedPod({ namespace: 'ml', body: stated }));
    expect(g.status.message).toContain('the integer value of priority (5) must not be provided in pod spec');
  });

  it('preempts the lowest-priority node: victim marked, deleted with grace, Event recorded, preemptor nominated', async () => {
    const c = await start(fleetWith());
    const [victim] = sim!.store.podsOnNode('gpu-0');
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('serve', 'serving') });
    const pending = await read(c, 'serve');
    // gpu-0's pod has priority 0, gpu-1's 10: the candidate whose highest victim is lowest wins.
    expect(pending.status?.nominatedNodeName).toBe('gpu-0');
    expect(pending.spec?.nodeName).toBeUndefined();
    const marked = await read(c, victim!.metadata.name);
    expect(marked.metadata?.deletionTimestamp).toBeDefined();
    expect(marked.status?.conditions?.find((x) => x.type === 'DisruptionTarget')).toMatchObject({
      status: 'True',
      reason: 'PreemptionByScheduler',
      message: 'default-scheduler: preempting to accommodate a higher priority pod',
    });
    const events = await c.core.listNamespacedEvent({ namespace: 'ml' });
    expect(events.items.filter((e) => e.reason === 'Preempted').map((e) => e.message)).toEqual([
      `Preempted by pod ${pending.metadata!.uid} on node gpu-0`,
    ]);
    // gpu-1's pod was not touched.
    expect(sim!.store.podsOnNode('gpu-1').every((p) => !p.metadata.deletionTimestamp)).toBe(true);
    // Tried again while its victim terminates (room freed elsewhere), it preempts nobody more (PodEligibleToPreemptOthers).
    await c.core.deleteNamespacedPod({ name: 'sidecar-0', namespace: 'ml', gracePeriodSeconds: 0 });
    sim!.tick();
    expect(sim!.store.podsOnNode('gpu-1').every((p) => !p.metadata.deletionTimestamp)).toBe(true);
    expect((await read(c, 'serve')).status?.nominatedNodeName).toBe('gpu-0');
    sim!.advance(31_000);
    expect((await read(c, 'serve')).spec?.nodeName).toBe('gpu-0');
  });

  it('the nominated room is not taken by the victim’s replacement while the victim terminates or after', async () => {
    const c = await start(fleetWith());
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('serve', 'serving') });
    sim!.advance(31_000);
    const onGpu0 = sim!.store.podsOnNode('gpu-0').map((p) => p.metadata.name);
    expect(onGpu0).toEqual(['serve']);
    // The ReplicaSet's replacement of the victim (priority 0) waits: no node has a GPU for it.
    const replacement = sim!.store.pods('ml').find((p) => p.metadata.name.startsWith('batch-a-') && !p.spec.nodeName);
    expect(replacement?.status?.phase).toBe('Pending');
  });

  it('a nominated node’s room stays held while its victims leave one by one: a lower-priority pod does not take it', async () => {
    const victim = (name: string, grace: number) => ({
      name,
      namespace: 'ml',
      count: 1,
      node: 'big-0',
      requests: { 'nvidia.com/gpu': 1 },
      terminationGracePeriodSeconds: grace,
    });
    const c = await start({
      nodes: [{ name: 'big', count: 1, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 2 } }],
      namespaces: [{ name: 'ml' }],
      pods: [victim('quick', 10), victim('slow', 30)],
    } as Fleet);
    const two = podBody('serve', 'serving');
    two.spec!.containers[0]!.resources = { requests: { 'nvidia.com/gpu': '2' } };
    await c.core.createNamespacedPod({ namespace: 'ml', body: two });
    expect((await read(c, 'serve')).status?.nominatedNodeName).toBe('big-0');
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('filler') });
    sim!.advance(11_000);
    // One GPU is free, held for the nominated pod (it needs both): the priority-0 pod may not take it.
    expect((await read(c, 'filler')).spec?.nodeName).toBeUndefined();
    expect((await read(c, 'serve')).spec?.nodeName).toBeUndefined();
    sim!.advance(20_000);
    expect((await read(c, 'serve')).spec?.nodeName).toBe('big-0');
    expect((await read(c, 'filler')).spec?.nodeName).toBeUndefined();
  });

  it('the queue takes the higher priority first: freed room goes to it, not to the pod that waited longer', async () => {
    const c = await start(fleetWith());
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('early') });
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('polite', 'serving-never') });
    const [running] = sim!.store.podsOnNode('gpu-0');
    await c.core.deleteNamespacedPod({ name: running!.metadata.name, namespace: 'ml', gracePeriodSeconds: 0 });
    sim!.advance(1_000);
    expect((await read(c, 'polite')).spec?.nodeName).toBe('gpu-0');
    expect((await read(c, 'early')).spec?.nodeName).toBeUndefined();
  });

  it('preemptionPolicy Never waits without preempting', async () => {
    const c = await start(fleetWith());
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('polite', 'serving-never') });
    const pod = await read(c, 'polite');
    expect(pod.status?.nominatedNodeName).toBeUndefined();
    expect(sim!.store.pods('ml').some((p) => p.metadata.deletionTimestamp)).toBe(false);
  });

  it('a node whose filters fail for other reasons (selector) is no candidate; a PDB steers to the other node', async () => {
    const fleet = fleetWith({
      podDisruptionBudgets: [
        { name: 'batch-a', namespace: 'ml', minAvailable: 1, selector: { matchLabels: { app: 'batch-a' } } },
      ],
    });
    const c = await start(fleet);
    // With the budget, gpu-0's victim would violate it: gpu-1 (priority-10 victim, no budget) is chosen instead.
    await c.core.createNamespacedPod({ namespace: 'ml', body: podBody('serve', 'serving') });
    expect((await read(c, 'serve')).status?.nominatedNodeName).toBe('gpu-1');
    const selective = {
      ...podBody('picky', 'serving'),
      spec: { ...podBody('picky', 'serving').spec!, nodeSelector: { pool: 'none' } },
    };
    await c.core.createNamespacedPod({ namespace: 'ml', body: selective });
    expect((await read(c, 'picky')).status?.nominatedNodeName).toBeUndefined();
  });
});

describe('preemption rules', () => {
  const pod = (name: string, priority: number, start: string): Pod =>
    ({
      metadata: { name, namespace: 'ml', creationTimestamp: start },
      spec: { priority, containers: [] },
      status: { startTime: start },
    }) as unknown as Pod;

  it('orders victims by priority, then by the earlier start', () => {
    const xs = [
      pod('a', 0, '2041-01-01T00:00:05Z'),
      pod('b', 5, '2041-01-01T00:00:09Z'),
      pod('c', 0, '2041-01-01T00:00:01Z'),
    ];
    expect(xs.sort(moreImportantFirst).map((p) => p.metadata.name)).toEqual(['b', 'c', 'a']);
  });

  it('picks by PDB violations, highest victim priority, sum, count, then the latest earliest start', () => {
    const t = (s: number) => `2041-01-01T00:00:0${s}Z`;
    const cand = (node: string, victims: Pod[], pdbViolations = 0): Candidate => ({ node, victims, pdbViolations });
    expect(pickCandidate([cand('a', [pod('x', 0, t(1))], 1), cand('b', [pod('y', 5, t(1))])])?.node).toBe('b');
    expect(
      pickCandidate([cand('a', [pod('x', 5, t(1))]), cand('b', [pod('y', 3, t(1)), pod('z', 3, t(1))])])?.node,
    ).toBe('b');
    expect(
      pickCandidate([cand('a', [pod('x', 3, t(1)), pod('w', 3, t(1))]), cand('b', [pod('y', 3, t(1))])])?.node,
    ).toBe('b');
    expect(pickCandidate([cand('a', [pod('x', 3, t(1))]), cand('b', [pod('y', 3, t(2))])])?.node).toBe('b');
    expect(pickCandidate([cand('a', [pod('x', 3, t(1))]), cand('b', [pod('y', 3, t(1))])])?.node).toBe('a');
  });
});
