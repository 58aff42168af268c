import { describe, expect, it } from 'vitest';
import { FakeCluster } from '../adapters/kube/fake-cluster.ts';
import { FakeNodeOps, FakePodOps } from '../adapters/kube/fake-node-pod-ops.ts';
import { DEFAULT_POLICY } from './core/policy.ts';
import { HISTORY_ANNOTATION, STATE_LABEL } from './core/state.ts';
import { draFacts, fetchPoolFacts, podsOf } from './facts.ts';
import { ForbiddenError, NotFoundError } from '../adapters/errors.ts';
import type { DeviceTaintOps } from '../adapters/kube/fence-ports.ts';
import type { NodeInfo } from '../adapters/kube/model.ts';

describe('podsOf: the pods a remediation moves or waits for', () => {
  it('leaves out finished pods (they hold no GPU) and pods already terminating', async () => {
    const cluster = new FakeCluster();
    cluster.addNode({ name: 'n1' });
    cluster.addPod({ name: 'running', nodeName: 'n1', uid: 'u1' });
    cluster.addPod({ name: 'pending', nodeName: 'n1', uid: 'u2', phase: 'Pending' });
    cluster.addPod({ name: 'done', nodeName: 'n1', uid: 'u3', phase: 'Succeeded' });
    cluster.addPod({ name: 'crashed', nodeName: 'n1', uid: 'u4', phase: 'Failed' });
    cluster.addPod({ name: 'leaving', nodeName: 'n1', uid: 'u5', terminating: true });
    cluster.addPod({ name: 'elsewhere', nodeName: 'n2', uid: 'u6' });
    expect((await podsOf(new FakePodOps(cluster), 'n1')).map((p) => p.name).sort()).toEqual(['pending', 'running']);
  });
});

describe('fetchPoolFacts: who in the pool counts against its blast radius', () => {
  const now = new Date('2026-11-26T03:00:00Z');
  const pool = { 'gpu-reflex.io/pool': 'p' };
  const closedAt = (iso: string) =>
    JSON.stringify({
      v: 1,
      incidents: [
        {
          key: 'k',
          trigger: 'xid-79',
          scope: 'node',
          action: 'drain-node',
          ladder: ['drain-node'],
          level: 0,
          phase: 'closed',
          firstAt: iso,
          lastAt: iso,
          count: 1,
          workloads: [],
          pods: [],
          since: iso,
          eventId: 'e',
          outAt: iso,
          closedAt: iso,
        },
      ],
      recent: [],
      handled: [],
      cordoned: false,
    });

  it('counts members out by their label (history unread) and members back within the window by their history', async () => {
    const cluster = new FakeCluster();
    cluster.addNode({ name: 'self', labels: pool });
    // Out by its label: counted even though its history is unreadable.
    cluster.addNode({
      name: 'draining',
      labels: { ...pool, [STATE_LABEL]: 'draining' },
      annotations: { [HISTORY_ANNOTATION]: '{corrupt' },
    });
    cluster.addNode({
      name: 'back-recently',
      labels: { ...pool, [STATE_LABEL]: 'healthy' },
      annotations: { [HISTORY_ANNOTATION]: closedAt('2026-11-26T02:30:00Z') },
    });
    cluster.addNode({
      name: 'back-long-ago',
      labels: { ...pool, [STATE_LABEL]: 'healthy' },
      annotations: { [HISTORY_ANNOTATION]: closedAt('2026-11-25T02:30:00Z') },
    });
    cluster.addNode({
      name: 'garbled',
      labels: { ...pool, [STATE_LABEL]: 'healthy' },
      annotations: { [HISTORY_ANNOTATION]: '{corrupt' },
    });
    const nodes = new FakeNodeOps(cluster);
    const facts = await fetchPoolFacts(nodes, DEFAULT_POLICY, await nodes.get('self'), now);
    expect(facts).toEqual({
      name: 'p',
      nodes: 5,
      quarantinedInWindow: 2,
      quarantinedNodes: ['back-recently', 'draining'],
    });
  });
});

describe('draFacts: an API the cluster does not serve is told apart from one it will not let us read', () => {
  const policy = { ...DEFAULT_POLICY, pools: { a100: { fenceBackend: 'dra' as const } } };
  const info = { name: 'n1', labels: { 'gpu-reflex.io/pool': 'a100' } } as unknown as NodeInfo;
  const failing = (err: Error): DeviceTaintOps =>
    ({ devices: () => Promise.reject(err), rules: () => Promise.reject(err) }) as unknown as DeviceTaintOps;
  const warns: string[] = [];
  const warn = (m: string) => void warns.push(m);

  it('404 (no resource.k8s.io version serves them): unserved, so the fence falls back at once', async () => {
    expect(
      await draFacts(
        failing(new NotFoundError('the server could not find the requested resource')),
        policy,
        info,
        warn,
      ),
    ).toBe('unserved');
  });

  it('403 (not allowed): no reading, the fence waits fence.verifyMinutes as before', async () => {
    expect(await draFacts(failing(new ForbiddenError('forbidden')), policy, info, warn)).toBeUndefined();
  });

  it('says so once, not for every node every minute; again when the answer changes or after a read succeeded', async () => {
    let answer: Error | undefined = new ForbiddenError('forbidden');
    const ops = {
      devices: () => (answer ? Promise.reject(answer) : Promise.resolve([])),
      rules: () => (answer ? Promise.reject(answer) : Promise.resolve([])),
    } as unknown as DeviceTaintOps;
    const said: string[] = [];
    const say = (m: string) => void said.push(m);
    for (const name of ['n1', 'n2', 'n1']) await draFacts(ops, policy, { ...info, name }, say);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/DRA not readable/);
    answer = new NotFoundError('the server could not find the requested resource');
    await draFacts(ops, policy, info, say);
    expect(said).toHaveLength(2);
    answer = undefined;
    await draFacts(ops, policy, info, say);
    answer = new NotFoundError('the server could not find the requested resource');
    await draFacts(ops, policy, info, say);
    expect(said).toHaveLength(3);
  });
});
