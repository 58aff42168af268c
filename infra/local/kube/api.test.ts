import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';
import { clients, failure, k8s } from './test-helpers.ts';

const fleet: Fleet = {
  nodes: [
    {
      name: 'gpu',
      count: 2,
      labels: { 'gpu-reflex.io/gpu': 'true' },
      allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 },
    },
    { name: 'cpu', allocatable: { cpu: '8', memory: '32Gi' } },
  ],
  namespaces: [{ name: 'gpu-reflex' }, { name: 'apps' }],
  daemonSets: [
    {
      name: 'agent',
      namespace: 'gpu-reflex',
      nodeSelector: { 'gpu-reflex.io/gpu': 'true' },
      tolerations: [{ operator: 'Exists' as const }],
    },
  ],
};

describe('API surface: watch, leases, configmaps, events, daemonsets, discovery', () => {
  let sim: KubeSim;
  let c: ReturnType<typeof clients>;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    c = clients(sim);
  });
  afterAll(() => sim.close());

  it("answers a metadata-only list (as=PartialObjectMetadataList) with each item's metadata and nothing else", async () => {
    const res = await fetch(`${sim.url}/api/v1/nodes?labelSelector=gpu-reflex.io%2Fgpu%3Dtrue&limit=1`, {
      headers: { accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' },
    });
    const body = (await res.json()) as {
      kind: string;
      apiVersion: string;
      metadata: { continue?: string };
      items: Record<string, unknown>[];
    };
    expect(body).toMatchObject({ kind: 'PartialObjectMetadataList', apiVersion: 'meta.k8s.io/v1' });
    expect(body.metadata.continue).toBeDefined();
    expect(body.items).toHaveLength(1);
    expect(Object.keys(body.items[0]!).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
    expect(body.items[0]).toMatchObject({
      kind: 'PartialObjectMetadata',
      metadata: { name: 'gpu-0', labels: { 'gpu-reflex.io/gpu': 'true' } },
    });
  });

  it('gives every node its kubelet Lease in kube-node-lease, created and removed with the node', async () => {
    expect(
      (await c.coordination.readNamespacedLease({ name: 'gpu-0', namespace: 'kube-node-lease' })).spec,
    ).toMatchObject({ holderIdentity: 'gpu-0', leaseDurationSeconds: 40 });
    await c.core.createNode({ body: { metadata: { name: 'joined' }, status: { allocatable: { cpu: '4' } } } });
    const lease = await c.coordination.readNamespacedLease({ name: 'joined', namespace: 'kube-node-lease' });
    expect(lease.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'Node',
      name: 'joined',
      uid: sim.store.node('joined')?.metadata.uid,
    });
    await c.core.deleteNode({ name: 'joined' });
    expect(sim.store.get('leases.coordination.k8s.io', 'kube-node-lease', 'joined')).toBeUndefined();
  });

  it('streams node changes to a client-node Watch, starting with the current objects', async () => {
    const events: string[] = [];
    const watch = new k8s.Watch(c.kc);
    let sawCordon!: () => void;
    const cordoned = new Promise<void>((resolve) => (sawCordon = resolve));
    const req = await watch.watch(
      '/api/v1/nodes',
      {},
      (type: string, obj: k8s.V1Node) => {
        events.push(`${type} ${obj.metadata?.name}${obj.spec?.unschedulable ? ' cordoned' : ''}`);
        if (obj.spec?.unschedulable) sawCordon();
      },
      () => undefined,
    );
    await c.core.patchNode({ name: 'gpu-1', body: [{ op: 'add', path: '/spec/unschedulable', value: true }] });
    await cordoned;
    req.abort();
    expect(events).toEqual(['ADDED cpu', 'ADDED gpu-0', 'ADDED gpu-1', 'MODIFIED gpu-1 cordoned']);
  });

  it('feeds a client-node informer: list, then watch from the list resourceVersion', async () => {
    const informer = k8s.makeInformer(c.kc, '/api/v1/nodes', () => c.core.listNode());
    const seen: string[] = [];
    let sawUpdate!: () => void;
    const updated = new Promise<void>((resolve) => (sawUpdate = resolve));
    informer.on('add', (n: k8s.V1Node) => seen.push(`add ${n.metadata?.name}`));
    informer.on('update', (n: k8s.V1Node) => {
      seen.push(`update ${n.metadata?.name} ${n.metadata?.labels?.informed}`);
      sawUpdate();
    });
    await informer.start();
    await c.core.patchNode({
      name: 'cpu',
      body: [{ op: 'add', path: '/metadata/labels', value: { informed: 'yes' } }],
    });
    await updated;
    await informer.stop();
    expect(seen).toEqual(['add cpu', 'add gpu-0', 'add gpu-1', 'update cpu yes']);
  });

  it('resumes a watch from a resourceVersion and filters by field selector', async () => {
    const rv = String(sim.store.resourceVersion);
    await c.core.createNamespacedConfigMap({
      namespace: 'apps',
      body: { metadata: { name: 'one' }, data: { a: '1' } },
    });
    await c.core.createNamespacedConfigMap({
      namespace: 'apps',
      body: { metadata: { name: 'two' }, data: { a: '2' } },
    });
    const res = await fetch(
      `${sim.url}/api/v1/namespaces/apps/configmaps?watch=1&resourceVersion=${rv}&fieldSelector=metadata.name%3Dtwo`,
    );
    const reader = res.body!.getReader();
    const { value } = await reader.read();
    await reader.cancel();
    const line = JSON.parse(new TextDecoder().decode(value).split('\n')[0]!) as {
      type: string;
      object: { metadata: { name: string } };
    };
    expect(line.type).toBe('ADDED');
    expect(line.object.metadata.name).toBe('two');
  });

  it('reports objects entering and leaving a watched label selector as ADDED and DELETED', async () => {
    const rv = String(sim.store.resourceVersion);
    await c.core.patchNode({
      name: 'gpu-0',
      body: [{ op: 'add', path: '/metadata/labels/quarantine', value: 'true' }],
    });
    await c.core.patchNode({ name: 'gpu-0', body: [{ op: 'remove', path: '/metadata/labels/quarantine' }] });
    const res = await fetch(`${sim.url}/api/v1/nodes?watch=1&resourceVersion=${rv}&labelSelector=quarantine%3Dtrue`);
    const reader = res.body!.getReader();
    let text = '';
    while (text.split('\n').length < 3) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    const events = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; object: { metadata: { name: string } } });
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED gpu-0', 'DELETED gpu-0']);
  });

  it('deletes a collection by label selector', async () => {
    for (const name of ['a', 'b', 'c']) {
      await c.core.createNamespacedConfigMap({
        namespace: 'gpu-reflex',
        body: { metadata: { name: `cooldown-${name}`, labels: { kind: name === 'c' ? 'keep' : 'cooldown' } } },
      });
    }
    await c.core.deleteCollectionNamespacedConfigMap({ namespace: 'gpu-reflex', labelSelector: 'kind=cooldown' });
    expect(sim.store.list('configmaps', 'gpu-reflex').map((o) => o.metadata.name)).toEqual(['cooldown-c']);
  });

  it('answers a watch from a resourceVersion older than the history with a 410 ERROR event', async () => {
    const res = await fetch(`${sim.url}/api/v1/nodes?watch=true&resourceVersion=-5`);
    const text = await res.text();
    expect(JSON.parse(text.trim())).toMatchObject({ type: 'ERROR', object: { code: 410, reason: 'Expired' } });
  });

  it('gives Leases create-or-conflict semantics for leader election', async () => {
    const lease = await c.coordination.createNamespacedLease({
      namespace: 'gpu-reflex',
      body: { metadata: { name: 'remediate' }, spec: { holderIdentity: 'fn-a', leaseDurationSeconds: 30 } },
    });
    const dup = await failure(() =>
      c.coordination.createNamespacedLease({
        namespace: 'gpu-reflex',
        body: { metadata: { name: 'remediate' }, spec: { holderIdentity: 'fn-b' } },
      }),
    );
    expect(dup.code).toBe(409);
    expect(dup.status.reason).toBe('AlreadyExists');
    expect(dup.status.message).toBe('leases.coordination.k8s.io "remediate" already exists');
    const taken = await c.coordination.replaceNamespacedLease({
      name: 'remediate',
      namespace: 'gpu-reflex',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'fn-a', leaseTransitions: 1 } },
    });
    expect(taken.spec?.holderIdentity).toBe('fn-a');
    const lost = await failure(() =>
      c.coordination.replaceNamespacedLease({
        name: 'remediate',
        namespace: 'gpu-reflex',
        body: { ...lease, spec: { ...lease.spec, holderIdentity: 'fn-b' } },
      }),
    );
    expect(lost.code).toBe(409);
    expect(lost.status.reason).toBe('Conflict');
  });

  it('stores events and lists them by involved object', async () => {
    await c.core.createNamespacedEvent({
      namespace: 'apps',
      body: {
        metadata: { generateName: 'gpu-0.' },
        involvedObject: { kind: 'Node', name: 'gpu-0' },
        reason: 'Cordoned',
        message: 'XID 79',
        type: 'Warning',
      },
    });
    const list = await c.core.listNamespacedEvent({ namespace: 'apps', fieldSelector: 'involvedObject.name=gpu-0' });
    expect(list.items).toHaveLength(1);
    expect(list.items[0]!.metadata?.name).toMatch(/^gpu-0\.[a-z0-9]{5}$/);
  });

  it('runs one DaemonSet pod per matching node, owned by the DaemonSet', async () => {
    const ds = await c.apps.readNamespacedDaemonSet({ name: 'agent', namespace: 'gpu-reflex' });
    expect(ds.status).toMatchObject({ currentNumberScheduled: 2, numberReady: 2 });
    const pods = await c.core.listNamespacedPod({ namespace: 'gpu-reflex' });
    expect(pods.items.map((p) => p.spec?.nodeName).sort()).toEqual(['gpu-0', 'gpu-1']);
    expect(pods.items[0]!.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'DaemonSet',
      name: 'agent',
      uid: ds.metadata?.uid,
      controller: true,
    });
  });

  it('starts a DaemonSet pod on a node that joins later', async () => {
    await c.core.createNode({
      body: {
        metadata: { name: 'gpu-new', labels: { 'gpu-reflex.io/gpu': 'true' } },
        status: { allocatable: { cpu: '8', memory: '16Gi' } },
      },
    });
    expect(sim.store.podsOnNode('gpu-new').map((p) => p.metadata.ownerReferences?.[0]?.name)).toEqual(['agent']);
  });

  it("takes a DaemonSet's pod off a node whose labels no longer match, gracefully, and brings it back when they do", async () => {
    const label = async (v: string) =>
      sim.store.put('nodes', {
        ...sim.store.node('gpu-1')!,
        metadata: { ...sim.store.node('gpu-1')!.metadata, labels: { 'gpu-reflex.io/gpu': v } },
      });
    const agents = () => sim.store.podsOnNode('gpu-1').filter((p) => p.metadata.ownerReferences?.[0]?.name === 'agent');
    await label('false');
    sim.tick();
    // Terminating first (its grace period), then gone; never replaced while the selector does not match.
    expect(agents().every((p) => p.metadata.deletionTimestamp !== undefined)).toBe(true);
    sim.advance(60_000);
    expect(agents()).toEqual([]);
    await label('true');
    sim.tick();
    expect(agents().map((p) => p.metadata.deletionTimestamp)).toEqual([undefined]);
  });

  it('lists pods across namespaces by node through the field selector', async () => {
    const list = await c.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=gpu-0' });
    expect(list.items.map((p) => `${p.metadata?.namespace}/${p.spec?.nodeName}`)).toEqual(['gpu-reflex/gpu-0']);
    const none = await c.core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=gpu-0,status.phase!=Running' });
    expect(none.items).toHaveLength(0);
  });

  it('does not persist a dry-run patch', async () => {
    const out = await c.core.patchNode({
      name: 'gpu-0',
      dryRun: 'All',
      body: [{ op: 'add', path: '/metadata/labels/dry', value: 'run' }],
    });
    expect(out.metadata?.labels?.dry).toBe('run');
    expect(sim.store.node('gpu-0')!.metadata.labels?.dry).toBeUndefined();
  });

  it('refuses an unknown patch content type with 415', async () => {
    const res = await fetch(`${sim.url}/api/v1/nodes/gpu-0`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/xml' },
      body: '{}',
    });
    expect(res.status).toBe(415);
    expect(((await res.json()) as { reason: string }).reason).toBe('UnsupportedMediaType');
  });

  it.each([
    ['/version', (b: Record<string, unknown>) => expect(b.gitVersion).toMatch(/^v1\.\d+/)],
    ['/api', (b: Record<string, unknown>) => expect(b).toMatchObject({ kind: 'APIVersions', versions: ['v1'] })],
    [
      '/apis',
      (b: Record<string, unknown>) =>
        expect((b.groups as { name: string }[]).map((g) => g.name).sort()).toEqual([
          'apps',
          'authorization.k8s.io',
          'coordination.k8s.io',
          'events.k8s.io',
          'nvidia.com',
          'policy',
          'rbac.authorization.k8s.io',
          'resource.k8s.io',
          'scheduling.k8s.io',
          'scheduling.volcano.sh',
        ]),
    ],
    [
      '/api/v1',
      (b: Record<string, unknown>) =>
        expect(
          (b.resources as { name: string; group?: string }[]).find((r) => r.name === 'pods/eviction'),
        ).toMatchObject({ group: 'policy', version: 'v1', kind: 'Eviction' }),
    ],
    [
      '/apis/policy/v1',
      (b: Record<string, unknown>) =>
        expect((b.resources as { name: string }[]).map((r) => r.name)).toEqual([
          'poddisruptionbudgets',
          'poddisruptionbudgets/status',
        ]),
    ],
  ])('serves discovery at %s', async (path, check) => {
    const res = await fetch(sim.url + path, {
      headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    check((await res.json()) as Record<string, unknown>);
  });

  it.each([
    [
      '/api/v1/nodes',
      [
        'Name',
        'Status',
        'Roles',
        'Age',
        'Version',
        'Internal-IP',
        'External-IP',
        'OS-Image',
        'Kernel-Version',
        'Container-Runtime',
      ],
      ['cpu', 'Ready'],
    ],
    [
      '/apis/apps/v1/namespaces/gpu-reflex/daemonsets',
      ['Name', 'Desired', 'Current', 'Ready', 'Age'],
      ['agent', 3, 3, 3],
    ],
  ])('answers %s as a Table when kubectl asks for one', async (path, columns, firstCells) => {
    const res = await fetch(sim.url + path, {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' },
    });
    const table = (await res.json()) as {
      kind: string;
      columnDefinitions: { name: string }[];
      rows: { cells: unknown[] }[];
    };
    expect(table.kind).toBe('Table');
    expect(table.columnDefinitions.map((c) => c.name)).toEqual(columns);
    expect(table.rows[0]!.cells.slice(0, firstCells.length)).toEqual(firstCells);
  });

  it('serves OpenAPI v3 per group/version and v2 whole, with the kinds it models and the merge keys kubectl apply reads', async () => {
    const root = (await (await fetch(`${sim.url}/openapi/v3`)).json()) as { paths: Record<string, unknown> };
    expect(Object.keys(root.paths)).toEqual(
      expect.arrayContaining(['api/v1', 'apis/policy/v1', 'apis/rbac.authorization.k8s.io/v1']),
    );
    const v3 = (await (await fetch(`${sim.url}/openapi/v3/api/v1`)).json()) as {
      components: {
        schemas: Record<string, { properties?: Record<string, Record<string, unknown>> } & Record<string, unknown>>;
      };
    };
    const schemas = v3.components.schemas;
    expect(schemas['io.k8s.api.core.v1.Node']).toMatchObject({
      'x-kubernetes-group-version-kind': [{ group: '', kind: 'Node', version: 'v1' }],
      properties: { spec: { allOf: [{ $ref: '#/components/schemas/io.k8s.api.core.v1.NodeSpec' }] } },
    });
    expect(schemas['io.k8s.api.core.v1.NodeSpec']!.properties!['taints']).toEqual({
      type: 'array',
      items: { allOf: [{ $ref: '#/components/schemas/io.k8s.api.core.v1.Taint' }], default: {} },
    });
    expect(schemas['io.k8s.api.core.v1.Taint']).toMatchObject({ required: ['effect', 'key'] });
    expect(schemas['io.k8s.api.core.v1.PodSpec']!.properties!['containers']).toMatchObject({
      'x-kubernetes-patch-merge-key': 'name',
      'x-kubernetes-patch-strategy': 'merge',
    });
    const v2 = (await (await fetch(`${sim.url}/openapi/v2`)).json()) as {
      swagger: string;
      definitions: Record<string, unknown>;
    };
    expect(v2.swagger).toBe('2.0');
    expect(v2.definitions['io.k8s.api.policy.v1.PodDisruptionBudget']).toMatchObject({
      properties: { spec: { $ref: '#/definitions/io.k8s.api.policy.v1.PodDisruptionBudgetSpec' } },
    });
  });

  it('answers unknown paths with a 404 Status', async () => {
    for (const path of ['/openapi/v3/apis/batch/v1', '/apis/batch/v1/jobs', '/api/v1/widgets']) {
      const res = await fetch(sim.url + path);
      expect(res.status).toBe(404);
      expect(((await res.json()) as { kind: string }).kind).toBe('Status');
    }
  });

  it('deletes a namespace with everything in it', async () => {
    await c.core.createNamespacedPod({
      namespace: 'apps',
      body: { metadata: { name: 'web' }, spec: { containers: [{ name: 'w', image: 'x' }] } },
    });
    await c.core.deleteNamespace({ name: 'apps' });
    expect(sim.store.pods('apps')).toEqual([]);
    expect(sim.store.list('configmaps', 'apps')).toEqual([]);
    expect((await failure(() => c.core.readNamespace({ name: 'apps' }))).code).toBe(404);
  });
});
