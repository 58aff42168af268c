import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients, failure, k8s, patchWith } from './test-helpers.ts';

const fleet: Fleet = {
  nodes: [
    {
      name: 'a100',
      count: 3,
      labels: { accelerator: 'nvidia-a100', pool: 'train' },
      allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 },
    },
    {
      name: 't4',
      count: 2,
      labels: { accelerator: 'nvidia-tesla-t4', pool: 'infer' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 2 },
    },
  ],
};

describe('nodes through @kubernetes/client-node', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  it('lists and gets nodes with allocatable and a Ready condition', async () => {
    const list = await c.core.listNode();
    expect(list.items.map((n) => n.metadata?.name)).toEqual(['a100-0', 'a100-1', 'a100-2', 't4-0', 't4-1']);
    const node = await c.core.readNode({ name: 't4-1' });
    expect(node.status?.allocatable?.['nvidia.com/gpu']).toBe('2');
    expect(node.status?.conditions?.find((x) => x.type === 'Ready')?.status).toBe('True');
  });

  it('answers a missing node with the real NotFound Status', async () => {
    const f = await failure(() => c.core.readNode({ name: 'nope' }));
    expect(f.code).toBe(404);
    expect(f.status).toMatchObject({
      reason: 'NotFound',
      message: 'nodes "nope" not found',
      details: { name: 'nope', kind: 'nodes' },
    });
  });

  it.each([
    ['json patch (the client default)', undefined, [{ op: 'add', path: '/spec/unschedulable', value: true }]],
    ['merge patch', k8s.PatchStrategy.MergePatch, { spec: { unschedulable: true } }],
    ['strategic merge patch', k8s.PatchStrategy.StrategicMergePatch, { spec: { unschedulable: true } }],
  ])('cordons with a %s and bumps the resourceVersion', async (_what, strategy, body) => {
    await c.core.patchNode(
      { name: 'a100-0', body: { spec: { unschedulable: null } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    const before = sim.store.node('a100-0')!.metadata.resourceVersion;
    const out = await c.core.patchNode({ name: 'a100-0', body }, strategy ? patchWith(strategy) : undefined);
    expect(out.spec?.unschedulable).toBe(true);
    expect(Number(out.metadata?.resourceVersion)).toBeGreaterThan(Number(before));
    expect(sim.store.node('a100-0')!.spec?.unschedulable).toBe(true);
  });

  it('applies labels, annotations and a taint list with a strategic merge patch', async () => {
    await c.core.patchNode(
      {
        name: 'a100-1',
        body: {
          metadata: { labels: { 'gpu-reflex.io/quarantine': 'true', pool: null }, annotations: { why: 'xid-79' } },
          spec: { taints: [{ key: 'gpu-reflex.io/faulty', value: 'xid-79', effect: 'NoSchedule' }] },
        },
      },
      patchWith(k8s.PatchStrategy.StrategicMergePatch),
    );
    const n = sim.store.node('a100-1')!;
    expect(n.metadata.labels).toMatchObject({ 'gpu-reflex.io/quarantine': 'true', accelerator: 'nvidia-a100' });
    expect(n.metadata.labels?.pool).toBeUndefined();
    expect(n.metadata.annotations?.why).toBe('xid-79');
    expect(n.spec?.taints).toEqual([{ key: 'gpu-reflex.io/faulty', value: 'xid-79', effect: 'NoSchedule' }]);
  });

  it.each([
    [[{ key: 'gpu', value: 'bad', effect: 'Sometimes' }], 'spec.taints[0].effect: Unsupported value: "Sometimes"'],
    [[{ value: 'x', effect: 'NoSchedule' }], 'spec.taints[0].key: Required value'],
    [
      [
        { key: 'gpu', effect: 'NoSchedule' },
        { key: 'gpu', value: 'other', effect: 'NoSchedule' },
      ],
      'spec.taints[1]: Duplicate value',
    ],
  ])('refuses an invalid taint list %j with 422 naming the field', async (taints, message) => {
    const f = await failure(() =>
      c.core.patchNode({ name: 't4-1', body: { spec: { taints } } }, patchWith(k8s.PatchStrategy.MergePatch)),
    );
    expect(f.code).toBe(422);
    expect(f.status.reason).toBe('Invalid');
    expect(f.status.message).toContain(`Node "t4-1" is invalid: ${message}`);
    expect(sim.store.node('t4-1')!.spec?.taints).toBeUndefined();
  });

  it('refuses a write carrying a stale resourceVersion with 409 Conflict', async () => {
    const node = await c.core.readNode({ name: 't4-0' });
    const stale = node.metadata!.resourceVersion!;
    await c.core.patchNode(
      { name: 't4-0', body: { metadata: { labels: { touched: '1' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    const viaPatch = await failure(() =>
      c.core.patchNode(
        { name: 't4-0', body: { metadata: { resourceVersion: stale, labels: { touched: '2' } } } },
        patchWith(k8s.PatchStrategy.MergePatch),
      ),
    );
    expect(viaPatch.code).toBe(409);
    expect(viaPatch.status.reason).toBe('Conflict');
    expect(viaPatch.status.message).toContain('the object has been modified');
    const viaPut = await failure(() => c.core.replaceNode({ name: 't4-0', body: node }));
    expect(viaPut.code).toBe(409);
    expect(sim.store.node('t4-0')!.metadata.labels?.touched).toBe('1');
  });

  it('accepts a json patch test op on the resourceVersion as an optimistic lock', async () => {
    const rv = sim.store.node('t4-1')!.metadata.resourceVersion;
    await c.core.patchNode({
      name: 't4-1',
      body: [
        { op: 'test', path: '/metadata/resourceVersion', value: rv },
        { op: 'add', path: '/metadata/labels/locked', value: 'yes' },
      ],
    });
    expect(sim.store.node('t4-1')!.metadata.labels?.locked).toBe('yes');
    const f = await failure(() =>
      c.core.patchNode({
        name: 't4-1',
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: rv },
          { op: 'add', path: '/metadata/labels/locked', value: 'no' },
        ],
      }),
    );
    expect(f.code).toBe(422);
    expect(sim.store.node('t4-1')!.metadata.labels?.locked).toBe('yes');
  });

  it('does not bump the resourceVersion for a patch that changes nothing', async () => {
    const rv = sim.store.node('t4-1')!.metadata.resourceVersion;
    await c.core.patchNode(
      { name: 't4-1', body: { metadata: { labels: { locked: 'yes' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    expect(sim.store.node('t4-1')!.metadata.resourceVersion).toBe(rv);
  });

  it.each([
    ['accelerator=nvidia-tesla-t4', ['t4-0', 't4-1']],
    ['accelerator==nvidia-a100,pool!=train', ['a100-1']],
    ['accelerator in (nvidia-a100, nvidia-h100)', ['a100-0', 'a100-1', 'a100-2']],
    ['accelerator notin (nvidia-a100)', ['t4-0', 't4-1']],
    ['gpu-reflex.io/quarantine', ['a100-1']],
    ['!pool', ['a100-1']],
  ])('selects nodes by label selector %s', async (labelSelector, names) => {
    const list = await c.core.listNode({ labelSelector });
    expect(list.items.map((n) => n.metadata?.name)).toEqual(names);
  });

  it('selects by field selector metadata.name and rejects unknown fields with 400', async () => {
    const list = await c.core.listNode({ fieldSelector: 'metadata.name=t4-1' });
    expect(list.items.map((n) => n.metadata?.name)).toEqual(['t4-1']);
    const f = await failure(() => c.core.listNode({ fieldSelector: 'spec.bogus=1' }));
    expect(f.code).toBe(400);
  });

  it('pages a list with limit and continue, reporting remainingItemCount', async () => {
    const names: string[] = [];
    let cont: string | undefined;
    const remaining: (number | undefined)[] = [];
    do {
      const page = await c.core.listNode({ limit: 2, ...(cont ? { _continue: cont } : {}) });
      names.push(...page.items.map((n) => n.metadata!.name!));
      remaining.push(page.metadata?.remainingItemCount);
      cont = page.metadata?._continue;
    } while (cont);
    expect(names).toEqual(['a100-0', 'a100-1', 'a100-2', 't4-0', 't4-1']);
    expect(remaining).toEqual([3, 1, undefined]);
  });

  it('fails the requests a test injects a fault for, once, then serves normally', async () => {
    sim.faults.inject({ method: 'PATCH', path: '/api/v1/nodes/t4-0', code: 409 });
    sim.faults.inject({ path: /\/nodes\/a100-2$/, code: 500, times: 2 });
    const conflict = await failure(() =>
      c.core.patchNode(
        { name: 't4-0', body: { metadata: { labels: { f: '1' } } } },
        patchWith(k8s.PatchStrategy.MergePatch),
      ),
    );
    expect(conflict.code).toBe(409);
    expect(conflict.status).toMatchObject({ kind: 'Status', reason: 'Conflict', code: 409 });
    expect(sim.store.node('t4-0')!.metadata.labels?.f).toBeUndefined();
    await c.core.patchNode(
      { name: 't4-0', body: { metadata: { labels: { f: '1' } } } },
      patchWith(k8s.PatchStrategy.MergePatch),
    );
    expect(sim.store.node('t4-0')!.metadata.labels?.f).toBe('1');
    expect((await failure(() => c.core.readNode({ name: 'a100-2' }))).code).toBe(500);
    expect((await failure(() => c.core.readNode({ name: 'a100-2' }))).code).toBe(500);
    await expect(c.core.readNode({ name: 'a100-2' })).resolves.toBeDefined();
    expect(sim.faults.fired).toEqual([
      'PATCH /api/v1/nodes/t4-0 → 409',
      'GET /api/v1/nodes/a100-2 → 500',
      'GET /api/v1/nodes/a100-2 → 500',
    ]);
  });

  it('updates node status only through the status subresource', async () => {
    const node = await c.core.readNode({ name: 'a100-2' });
    node.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }];
    await c.core.replaceNode({ name: 'a100-2', body: node });
    const ready = () => sim.store.node('a100-2')!.status?.conditions?.find((c) => c.type === 'Ready')?.status;
    expect(ready()).toBe('True');
    const fresh = await c.core.readNode({ name: 'a100-2' });
    fresh.status!.conditions = [{ type: 'Ready', status: 'False', reason: 'KubeletNotReady' }];
    await c.core.replaceNodeStatus({ name: 'a100-2', body: fresh });
    expect(ready()).toBe('False');
  });
});
