import { describe, expect, it } from 'vitest';
import type { Node, Pod } from './kube/types.ts';
import { checkExpectations, EventTally, summarize, tallyOf } from './report.ts';

const meta = (name: string, extra: object = {}) => ({
  name,
  uid: `uid-${name}`,
  resourceVersion: '1',
  creationTimestamp: '2026-01-01T00:00:00Z',
  ...extra,
});
const node = (name: string, spec: Node['spec'] = {}, labels: Record<string, string> = {}): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: meta(name, { labels }),
  spec,
});
const pod = (name: string, requests: Record<string, string>, nodeName?: string): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: meta(name, { namespace: 'ml' }),
  spec: { ...(nodeName ? { nodeName } : {}), containers: [{ name: 'c', resources: { requests } }] },
});
const remediation = (steps: { kind: string; result: string }[]) => ({
  detailType: 'Remediation',
  source: 'gpu-reflex.functions',
  detail: { action: 'drain-node', phase: 'acted', steps },
});

const nodes = [
  node(
    'a',
    { unschedulable: true, taints: [{ key: 'gpu-reflex.io/unhealthy', effect: 'NoSchedule' }] },
    { 'gpu-reflex.io/state': 'draining' },
  ),
  node('b'),
  node('c', {}, { 'gpu-reflex.io/state': 'quarantined' }),
];
const pods = [
  pod('p1', { 'nvidia.com/gpu': '1' }),
  pod('p2', { 'nvidia.com/mig-1g.10gb': '1' }),
  pod('p3', { 'nvidia.com/gpu': '1' }, 'b'),
  pod('p4', { cpu: '1' }),
];

describe('summary', () => {
  it('counts events, actions, node states, pending GPU pods and failures', () => {
    const s = summarize({
      tally: tallyOf(
        [{ detailType: 'GPU XID Error', detail: {} }, remediation([{ kind: 'evict', result: 'done' }])],
        [
          { atMs: 1, rule: 'r', function: 'remediate', attempt: 1, ok: false },
          { atMs: 2, rule: 'r', function: 'remediate', attempt: 2, ok: true },
        ],
      ),
      deadLetters: 0,
      counters: { evicted: ['ml/x', 'ml/y'], rescheduled: [{ pod: 'ml/z', node: 'b', replaces: 'ml/x' }] },
      observed: true,
      nodes,
      pods,
    });
    expect(s).toMatchObject({
      eventsByDetailType: { 'GPU XID Error': 1, Remediation: 1 },
      actionsByKind: { 'drain-node acted': 1 },
      nodesCordoned: ['a'],
      nodesTainted: ['a'],
      nodesQuarantined: ['c'],
      podsEvicted: 2,
      podsRescheduled: 1,
      podsPending: { 'nvidia.com/gpu': 1, 'nvidia.com/mig-1g.10gb': 1 },
      deliveryFailures: { remediate: 1 },
    });
  });

  it('takes evictions from the Remediation steps when the cluster was not observed', () => {
    const s = summarize({
      tally: tallyOf([
        remediation([
          { kind: 'evict', result: 'done' },
          { kind: 'evict', result: 'blocked' },
          { kind: 'cordon', result: 'done' },
        ]),
      ]),
      deadLetters: 0,
      counters: { evicted: [], rescheduled: [] },
      observed: false,
      nodes,
      pods,
    });
    expect(s.podsEvicted).toBe(1);
  });
});

describe('expect checks', () => {
  const events = tallyOf([{ detailType: 'GPU XID Error', detail: { node: 'a' } }]);
  it.each([
    [
      { node: 'a', cordoned: true, tainted: 'gpu-reflex.io/unhealthy', label: { 'gpu-reflex.io/state': 'draining' } },
      true,
    ],
    [{ node: 'b', cordoned: true }, false],
    [{ node: 'zz', cordoned: false }, false],
    [{ pendingPods: { resource: 'nvidia.com/gpu', atLeast: 1 } }, true],
    [{ pendingPods: { resource: 'nvidia.com/gpu', atLeast: 2 } }, false],
    [{ pendingPods: { resource: 'nvidia.com/gpu', atMost: 1 } }, true],
    [{ pendingPods: { resource: 'nvidia.com/gpu', atMost: 0 } }, false],
    [{ pendingPods: { resource: 'nvidia.com/mig-1g.10gb', atLeast: 1, atMost: 1 } }, true],
    [{ nodes: { selector: { pool: 't4' }, atLeast: 2 } }, true],
    [{ nodes: { selector: { pool: 't4' }, atLeast: 3 } }, false],
    [{ nodes: { selector: { pool: 't4' }, atMost: 1 } }, false],
    [{ nodes: { selector: { pool: 'none' }, atMost: 0 } }, true],
    [{ event: 'GPU XID Error', node: 'a', atLeast: 1 }, true],
    [{ event: 'GPU XID Error', node: 'b', atLeast: 1 }, false],
  ])('%j passes: %s', (check, ok) => {
    // Node checks count Ready nodes: t4-0 and t4-1 are, t4-down is not.
    const ready = (n: Node, status: string): Node =>
      ({ ...n, status: { conditions: [{ type: 'Ready', status }] } }) as Node;
    const pool = [
      ready(node('t4-0', {}, { pool: 't4' }), 'True'),
      ready(node('t4-1', {}, { pool: 't4' }), 'True'),
      ready(node('t4-down', {}, { pool: 't4' }), 'Unknown'),
    ];
    expect(checkExpectations([check], [...nodes, ...pool], pods, events)[0]!.ok).toBe(ok);
  });
});

describe('event checks on what events say', () => {
  const said = () => {
    const t = new EventTally();
    t.watch(['no reset tried', '"action":"reset"']);
    t.addEvent({ detailType: 'Remediation', detail: { reason: 'A100 on nvswitch: no reset tried' } });
    t.addEvent({ detailType: 'Remediation', detail: { reason: 'escalating' } });
    t.addEvent({ detailType: 'GPU Action Result', detail: { node: 'a', action: 'fence' } });
    return t;
  };
  it.each([
    [{ event: 'Remediation', says: 'no reset tried' }, true],
    [{ event: 'Remediation', says: 'no reset tried', atLeast: 2 }, false],
    [{ event: 'Remediation', atLeast: 2 }, true],
    [{ event: 'Remediation', atMost: 1 }, false],
    [{ event: 'GPU Action Result', node: 'a', says: '"action":"reset"', atMost: 0 }, true],
    [{ event: 'GPU Action Result', node: 'a', atMost: 0 }, false],
  ])('%j passes: %s', (check, ok) => {
    expect(checkExpectations([check], [], [], said())[0]!.ok).toBe(ok);
  });
});

describe('allocatable checks', () => {
  const fenced: Node = { ...node('f'), status: { allocatable: { cpu: '32', memory: '256Gi', 'nvidia.com/gpu': '7' } } };
  const none = tallyOf([]);
  it.each([
    [{ 'nvidia.com/gpu': 7 }, true, 'as expected'],
    [{ 'nvidia.com/gpu': '7', memory: '262144Mi' }, true, 'as expected'],
    [{ 'nvidia.com/gpu': 8 }, false, 'allocatable nvidia.com/gpu is 7, not 8'],
    [{ 'nvidia.com/mig-1g.10gb': 1 }, false, 'allocatable nvidia.com/mig-1g.10gb is absent, not 1'],
  ])('%j passes: %s', (allocatable, ok, detail) => {
    const [c] = checkExpectations([{ node: 'f', allocatable }], [fenced], [], none);
    expect(c).toMatchObject({ ok, detail });
  });
});

describe('running pod checks', () => {
  const pod = (name: string, labels: Record<string, string>, status: Pod['status'], extra: object = {}): Pod => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: meta(name, { namespace: 'ml', labels, ...extra }),
    spec: { nodeName: 'n', containers: [{ name: 'main' }] },
    status,
  });
  const pods = [
    pod('a', { app: 't' }, { phase: 'Running' }),
    pod('b', { app: 't' }, { phase: 'Running' }, { deletionTimestamp: '2026-01-01T00:01:00Z' }),
    pod('c', { app: 't' }, { phase: 'Pending' }),
    pod('d', { app: 'u' }, { phase: 'Running' }),
  ];
  it.each([
    [{ atLeast: 1, atMost: 1 }, true],
    [{ atLeast: 2 }, false],
    [{ atMost: 0 }, false],
  ])('counts Running pods with the labels, not terminating or pending ones: %j → %s', (bounds, ok) => {
    const [c] = checkExpectations([{ runningPods: { selector: { app: 't' }, ...bounds } }], [], pods, tallyOf([]));
    expect(c).toMatchObject({ ok, detail: '1 running' });
  });
});
