import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from './index.ts';

/**
 * Requests as the real API server judges them: query parameters decoded by its rules, writes of
 * the wrong type or shape refused with the field path, Eviction bodies checked, over-deep bodies
 * refused fast. Raw HTTP, so the sim sees exactly what a hostile or foreign client sends.
 */
const fleet: Fleet = {
  nodes: [{ name: 'gpu', count: 2, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 4 } }],
  namespaces: [{ name: 'apps' }],
  pods: [{ name: 'web', namespace: 'apps', count: 2, node: 'gpu-0' }],
};

interface StatusBody {
  kind: string;
  code: number;
  reason: string;
  message: string;
  details?: { causes?: { field?: string; message: string; reason?: string }[] };
}

describe('the simulated API server judges requests as the real one does', () => {
  let sim: KubeSim;
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
  });
  afterAll(() => sim.close());

  async function call(method: string, path: string, body?: unknown, contentType = 'application/merge-patch+json') {
    const res = await fetch(`${sim.url}${path}`, {
      method,
      headers: { 'content-type': contentType },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    });
    return { code: res.status, body: (await res.json()) as StatusBody & Record<string, unknown> };
  }

  /** The first line of a watch stream, or the whole body when the answer is not a stream. */
  async function firstChunk(path: string): Promise<{ chunked: boolean; text: string }> {
    const ac = new AbortController();
    const res = await fetch(`${sim.url}${path}`, { signal: ac.signal });
    const chunked = res.headers.get('transfer-encoding') === 'chunked';
    const reader = res.body!.getReader();
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += Buffer.from(value).toString('utf8');
      if (chunked && text.includes('\n')) break;
    }
    ac.abort();
    return { chunked, text: chunked ? text.slice(0, text.indexOf('\n')) : text };
  }

  it.each(['true', 'True', 'TRUE', '1', 't', 'yes', ''])(
    'watch=%j streams watch events (anything but 0/false is true)',
    async (v) => {
      const { chunked, text } = await firstChunk(`/api/v1/nodes?watch=${v}&timeoutSeconds=5`);
      expect(chunked).toBe(true);
      expect(JSON.parse(text)).toMatchObject({ type: 'ADDED', object: { kind: 'Node', metadata: { name: 'gpu-0' } } });
    },
  );

  it.each(['false', 'False', 'FALSE', '0'])('watch=%j answers a list', async (v) => {
    const { text } = await firstChunk(`/api/v1/nodes?watch=${v}`);
    expect(JSON.parse(text)).toMatchObject({
      kind: 'NodeList',
      items: [{ metadata: { name: 'gpu-0' } }, { metadata: { name: 'gpu-1' } }],
    });
  });

  it.each([
    ['GET', '/api/v1/nodes?limit=abc', 'strconv.ParseInt: parsing "abc": invalid syntax'],
    ['GET', '/api/v1/nodes?limit=1.5', 'strconv.ParseInt: parsing "1.5": invalid syntax'],
    [
      'GET',
      '/api/v1/nodes?limit=99999999999999999999',
      'strconv.ParseInt: parsing "99999999999999999999": value out of range',
    ],
    ['GET', '/api/v1/nodes?watch=1&timeoutSeconds=soon', 'strconv.ParseInt: parsing "soon": invalid syntax'],
    [
      'DELETE',
      '/api/v1/namespaces/apps/pods/web-0?gracePeriodSeconds=x',
      'strconv.ParseInt: parsing "x": invalid syntax',
    ],
    [
      'PATCH',
      '/api/v1/nodes/gpu-0?fieldValidation=Loose',
      'invalid fieldValidation directive: Loose, must be one of: Ignore, Warn, Strict',
    ],
  ])('%s %s is a 400 naming the bad value', async (method, path, message) => {
    const { code, body } = await call(method, path, method === 'PATCH' ? {} : undefined);
    expect(code).toBe(400);
    expect(body).toMatchObject({ kind: 'Status', code: 400, reason: 'BadRequest', message });
    expect(sim.store.pod('apps', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
  });

  it.each([
    [
      'PATCH',
      '/api/v1/nodes/gpu-0?dryRun=Some',
      'PatchOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: []string{"Some"}: supported values: "All"',
    ],
    [
      'DELETE',
      '/api/v1/namespaces/apps/pods/web-0?propagationPolicy=Later',
      'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Later": supported values: "Foreground", "Background", "Orphan"',
    ],
    [
      'GET',
      '/api/v1/nodes?resourceVersionMatch=Newest',
      'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Unsupported value: "Newest": supported values: "Exact", "NotOlderThan"',
    ],
  ])('%s %s is a 422 naming the option', async (method, path, message) => {
    const { code, body } = await call(method, path, method === 'PATCH' ? { spec: { unschedulable: true } } : undefined);
    expect(code).toBe(422);
    expect(body).toMatchObject({ reason: 'Invalid', message });
    expect(sim.store.node('gpu-0')?.spec?.unschedulable).toBeUndefined();
    expect(sim.store.pod('apps', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('a limit of zero or below means no limit, as in the real server', async () => {
    const { body } = await call('GET', '/api/v1/nodes?limit=-1');
    expect((body.items as unknown[]).length).toBe(2);
  });

  it.each([
    [
      'spec.unschedulable as a string',
      { spec: { unschedulable: 'yes' } },
      'spec.unschedulable',
      'json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool',
    ],
    [
      'an object as a label value',
      { metadata: { labels: { team: { name: 'a' } } } },
      'metadata.labels[team]',
      'json: cannot unmarshal object into Go struct field ObjectMeta.metadata.labels of type string',
    ],
    [
      'a number as a taint key',
      { spec: { taints: [{ key: 7, effect: 'NoSchedule' }] } },
      'spec.taints[0].key',
      'json: cannot unmarshal number into Go struct field Taint.spec.taints.key of type string',
    ],
    [
      'a list as the spec',
      { spec: [] },
      'spec',
      'json: cannot unmarshal array into Go struct field Node.spec of type v1.NodeSpec',
    ],
  ])(
    'a patch with %s is 422 Invalid naming the field, and the node is unchanged',
    async (_what, patch, field, goError) => {
      const before = sim.store.node('gpu-1');
      const { code, body } = await call('PATCH', '/api/v1/nodes/gpu-1', patch);
      expect(code).toBe(422);
      expect(body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
      expect(body.message).toContain(`Node "gpu-1" is invalid: ${field}: Invalid value: `);
      expect(body.message).toContain(goError);
      expect(body.details?.causes).toEqual([expect.objectContaining({ field, reason: 'FieldValueInvalid' })]);
      expect(sim.store.node('gpu-1')).toBe(before);
    },
  );

  it.each([
    [
      '/api/v1/namespaces/apps/events',
      { metadata: { name: 'e1' }, involvedObject: { kind: 'Node', name: 'gpu-0' }, lastTimestamp: 'yesterday' },
      'lastTimestamp',
    ],
    [
      '/apis/coordination.k8s.io/v1/namespaces/apps/leases',
      { metadata: { name: 'l1' }, spec: { renewTime: '2026-13-01 00:00' } },
      'spec.renewTime',
    ],
  ])(
    'a timestamp Go cannot parse (POST %s) is refused, as it would break every client reading it back',
    async (path, body, field) => {
      const { code, body: status } = await call('POST', path, body, 'application/json');
      expect(code).toBe(400);
      expect(status.message).toContain('parsing time');
      expect(status.details?.causes?.[0]?.field).toBe(field);
    },
  );

  it.each([
    [
      'POST',
      '/api/v1/namespaces/apps/configmaps',
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' } },
      'the kind in the data (Secret) does not match the expected kind (ConfigMap)',
    ],
    [
      'PUT',
      '/api/v1/nodes/gpu-1',
      { apiVersion: 'apps/v1', kind: 'Node', metadata: { name: 'gpu-1' } },
      'the API version in the data (apps/v1) does not match the expected API version (v1)',
    ],
  ])('%s of another kind or version than the endpoint is a 400', async (method, path, body, message) => {
    const before = sim.store.node('gpu-1');
    const { code, body: status } = await call(method, path, body, 'application/json');
    expect(code).toBe(400);
    expect(status.message).toBe(message);
    expect(sim.store.node('gpu-1')).toBe(before);
    expect(sim.store.get('configmaps', 'apps', 's')).toBeUndefined();
  });

  it('a create of the wrong type is 400 "cannot be handled as", as the real decoder answers', async () => {
    const { code, body } = await call(
      'POST',
      '/api/v1/nodes',
      { metadata: { name: 'typo' }, spec: { unschedulable: 'yes' } },
      'application/json',
    );
    expect(code).toBe(400);
    expect(body.message).toBe(
      'Node in version "v1" cannot be handled as a Node: json: cannot unmarshal string into Go struct field NodeSpec.spec.unschedulable of type bool',
    );
    expect(body.details?.causes?.[0]?.field).toBe('spec.unschedulable');
    expect(sim.store.node('typo')).toBeUndefined();
  });

  it.each([
    [
      { labels: { 'bad key!': 'x' } },
      'metadata.labels',
      'Invalid value: "bad key!": name part must consist of alphanumeric characters',
    ],
    [
      { labels: { 'example.com/a/b': 'x' } },
      'metadata.labels',
      "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
    ],
    [
      { labels: { 'Bad_Prefix/a': 'x' } },
      'metadata.labels',
      'Invalid value: "Bad_Prefix/a": prefix part a lowercase RFC 1123 subdomain',
    ],
    [
      { labels: { team: 'has space' } },
      'metadata.labels',
      'Invalid value: "has space": a valid label must be an empty string or consist of alphanumeric characters',
    ],
    [{ labels: { team: 'x'.repeat(64) } }, 'metadata.labels', 'must be no more than 63 characters'],
    [
      { annotations: { 'bad key!': 'x' } },
      'metadata.annotations',
      'Invalid value: "bad key!": name part must consist of',
    ],
    [
      { annotations: { big: 'x'.repeat(2 * 1024 * 1024) } },
      'metadata.annotations',
      'Too long: must have at most 262144 bytes',
    ],
  ])('metadata %# is 422 Invalid in the real wording', async (metadata, field, message) => {
    const before = sim.store.node('gpu-1');
    const { code, body } = await call('PATCH', '/api/v1/nodes/gpu-1', { metadata });
    expect(code).toBe(422);
    expect(body.details?.causes?.[0]?.field).toBe(field);
    expect(body.details?.causes?.[0]?.message).toContain(message);
    expect(sim.store.node('gpu-1')).toBe(before);
  });

  it('annotations up to 256 KiB in total are stored', async () => {
    const { code } = await call('PATCH', '/api/v1/nodes/gpu-1', {
      metadata: { annotations: { big: 'x'.repeat(256 * 1024 - 3 - 100) } },
    });
    expect(code).toBe(200);
    await call('PATCH', '/api/v1/nodes/gpu-1', { metadata: { annotations: { big: null } } });
  });

  it('a create with a name that is not an RFC 1123 subdomain is 422', async () => {
    const { code, body } = await call(
      'POST',
      '/api/v1/namespaces/apps/configmaps',
      { metadata: { name: 'Not_OK' } },
      'application/json',
    );
    expect(code).toBe(422);
    expect(body.message).toMatch(
      /^ConfigMap "Not_OK" is invalid: metadata.name: Invalid value: "Not_OK": a lowercase RFC 1123 subdomain/,
    );
  });

  it.each([
    ['?gracePeriodSeconds=9223372036854775807', undefined],
    ['', { gracePeriodSeconds: 9e18 }],
  ])(
    'a delete with the largest int64 grace period (%s) is accepted and ends in year 9999, not a 500',
    async (query, body) => {
      await call(
        'POST',
        '/api/v1/namespaces/apps/pods',
        { metadata: { name: 'forever' }, spec: { nodeName: 'gpu-1', containers: [{ name: 'm', image: 'x' }] } },
        'application/json',
      );
      const { code } = await call('DELETE', `/api/v1/namespaces/apps/pods/forever${query}`, body, 'application/json');
      expect(code).toBe(200);
      expect(sim.store.pod('apps', 'forever')?.metadata.deletionTimestamp).toBe('9999-12-31T23:59:59Z');
      await call('DELETE', '/api/v1/namespaces/apps/pods/forever?gracePeriodSeconds=0');
    },
  );

  it('a grace period Go could not decode into an int64 (1e300) is a 400', async () => {
    const { code, body } = await call(
      'DELETE',
      '/api/v1/namespaces/apps/pods/web-1',
      { gracePeriodSeconds: 1e300 },
      'application/json',
    );
    expect(code).toBe(400);
    expect(body.message).toContain('DeleteOptions.gracePeriodSeconds of type int64');
    expect(sim.store.pod('apps', 'web-1')?.metadata.deletionTimestamp).toBeUndefined();
  });

  it('a PUT whose metadata is null is a 400, not a crash', async () => {
    const { code } = await call('PUT', '/api/v1/nodes/gpu-1', { metadata: null }, 'application/json');
    expect(code).toBe(400);
  });

  it.each([
    [
      'app%3Db%24',
      'unable to parse requirement: values[0][app]: Invalid value: "b$": a valid label must be an empty string',
    ],
    [
      'Bad_Prefix%2Fa%3Dx',
      'unable to parse requirement: key: Invalid value: "Bad_Prefix/a": prefix part a lowercase RFC 1123 subdomain',
    ],
    [
      'gpus%3Emany',
      "unable to parse requirement: values[0]: Invalid value: \"many\": for 'Gt', 'Lt' operators, the value must be an integer",
    ],
  ])(
    "a label selector with an invalid key or value (%s) is a 400 in labels.NewRequirement's words",
    async (selector, message) => {
      const { code, body } = await call('GET', `/api/v1/nodes?labelSelector=${selector}`);
      expect(code).toBe(400);
      expect(body.message).toContain(message);
    },
  );

  it('a field selector on an inherited property name (constructor) is refused as unsupported', async () => {
    const { code, body } = await call('GET', '/api/v1/pods?fieldSelector=constructor%3Dx');
    expect(code).toBe(400);
    expect(body.message).toBe('field label not supported: constructor');
  });

  describe('Eviction bodies', () => {
    const evict = (pod: string, body: unknown) =>
      call('POST', `/api/v1/namespaces/apps/pods/${pod}/eviction`, body, 'application/json');

    it.each([
      [
        "another pod's name",
        { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-1' } },
        'name in URL does not match name in Eviction object',
      ],
      ['no name', { apiVersion: 'policy/v1', kind: 'Eviction' }, 'name in URL does not match name in Eviction object'],
      [
        'kind Pod',
        { apiVersion: 'policy/v1', kind: 'Pod', metadata: { name: 'web-0' } },
        'the kind in the data (Pod) does not match the expected kind (Eviction)',
      ],
      [
        'apiVersion v1',
        { apiVersion: 'v1', kind: 'Eviction', metadata: { name: 'web-0' } },
        'the API version in the data (v1) does not match the expected API version (policy/v1)',
      ],
      [
        'another namespace',
        { metadata: { name: 'web-0', namespace: 'other' } },
        'the namespace of the provided object does not match the namespace sent on the request',
      ],
      [
        'a string grace period',
        { metadata: { name: 'web-0' }, deleteOptions: { gracePeriodSeconds: 'soon' } },
        'json: cannot unmarshal string into Go struct field DeleteOptions.gracePeriodSeconds of type int64',
      ],
      [
        'a bad dryRun',
        { metadata: { name: 'web-0' }, deleteOptions: { dryRun: ['Maybe'] } },
        'dryRun: Unsupported value',
      ],
    ])('with %s is refused and the pod stays', async (_what, body, message) => {
      const { code, body: status } = await evict('web-0', body);
      expect([400, 422]).toContain(code);
      expect(status.message).toContain(message);
      expect(sim.store.pod('apps', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
    });

    it.each([
      ['policy/v1', { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'web-0', namespace: 'apps' } }],
      ['policy/v1beta1', { apiVersion: 'policy/v1beta1', kind: 'Eviction', metadata: { name: 'web-0' } }],
      ['no kind or apiVersion (the endpoint implies them)', { metadata: { name: 'web-0' } }],
    ])('as %s is accepted', async (_what, body) => {
      const { code } = await call(
        'POST',
        '/api/v1/namespaces/apps/pods/web-0/eviction?dryRun=All',
        body,
        'application/json',
      );
      expect(code).toBe(201);
      expect(sim.store.pod('apps', 'web-0')?.metadata.deletionTimestamp).toBeUndefined();
    });
  });

  describe('over-deep and oversized bodies', () => {
    const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    const deepList = (n: number) => '['.repeat(n) + ']'.repeat(n);

    it.each([
      ['merge patch', 'application/merge-patch+json', `{"metadata":{"annotations":${deepObject(100_000)}}}`],
      ['strategic merge patch', 'application/strategic-merge-patch+json', `{"spec":${deepObject(100_000)}}`],
      ['JSON patch', 'application/json-patch+json', `[{"op":"add","path":"/spec/x","value":${deepList(100_000)}}]`],
      ['apply patch (YAML parser)', 'application/apply-patch+yaml', deepList(100_000)],
      [
        'apply patch in YAML flow style just past the limit',
        'application/apply-patch+yaml',
        `{spec: ${'{a: '.repeat(600)}1${'}'.repeat(600)}}`,
      ],
    ])('a 100,000-deep %s is a fast 400 and the server keeps answering', async (_what, type, text) => {
      const started = performance.now();
      const res = await fetch(`${sim.url}/api/v1/nodes/gpu-0?fieldManager=fuzz`, {
        method: 'PATCH',
        headers: { 'content-type': type },
        body: text,
        signal: AbortSignal.timeout(10_000),
      });
      const ms = performance.now() - started;
      const body = (await res.json()) as StatusBody;
      expect(res.status).toBe(400);
      expect(body.message).toBe('the request body is nested more than 512 levels deep');
      expect(ms).toBeLessThan(1000);
      expect((await call('GET', '/api/v1/nodes/gpu-0')).code).toBe(200);
    });

    it.each(['application/merge-patch+json', 'application/strategic-merge-patch+json'])(
      'a %s 500 levels into a 3 MB object answers within a second (one copy, merged in place)',
      async (type) => {
        const deep = (d: number, leaf: unknown) => {
          let v: unknown = leaf;
          for (let i = 0; i < d; i++) v = { a: v, ...(i === 0 ? { big: 'x'.repeat(3_000_000) } : {}) };
          return v;
        };
        expect((await call('PATCH', '/api/v1/nodes/gpu-1', { spec: { deep: deep(500, 1) } })).code).toBe(200);
        const started = performance.now();
        const { code } = await call('PATCH', '/api/v1/nodes/gpu-1', { spec: { deep: deep(500, 2) } }, type);
        expect(code).toBe(200);
        expect(performance.now() - started).toBeLessThan(1000);
        await call('PATCH', '/api/v1/nodes/gpu-1', { spec: { deep: null } });
      },
    );

    it('a body over 3 MiB is a 413 RequestEntityTooLarge, as kube-apiserver answers (MaxRequestBodyBytes)', async () => {
      const big = { metadata: { name: 'big' }, data: { blob: 'x'.repeat(3 * 1024 * 1024) } };
      const { code, body } = await call('POST', '/api/v1/namespaces/default/configmaps', big);
      expect(code).toBe(413);
      expect(body).toMatchObject({
        reason: 'RequestEntityTooLarge',
        message: 'Request entity too large: limit is 3145728',
      });
    });

    it('a JSON patch of more than 10,000 operations is a 413, as the real server answers', async () => {
      const ops = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/metadata/name', value: 'gpu-1' }));
      const { code, body } = await call('PATCH', '/api/v1/nodes/gpu-1', ops, 'application/json-patch+json');
      expect(code).toBe(413);
      expect(body).toMatchObject({
        reason: 'RequestEntityTooLarge',
        message: 'The allowed maximum operations in a JSON patch is 10000, got 10001',
      });
    });

    it('JSON patch copies that would double the object without end are refused fast', async () => {
      const ops = [
        { op: 'add', path: '/spec/blob', value: 'x'.repeat(100_000) },
        ...Array.from({ length: 60 }, (_, i) => ({ op: 'copy', from: '/spec', path: `/spec/c${i}` })),
      ];
      const started = performance.now();
      const { code, body } = await call('PATCH', '/api/v1/nodes/gpu-1', ops, 'application/json-patch+json');
      expect(code).toBe(422);
      expect(body.message).toContain('accumulated copy size limit');
      expect(performance.now() - started).toBeLessThan(1000);
      expect(sim.store.node('gpu-1')?.spec?.blob).toBeUndefined();
    });

    it('a body nested within the limit is read', async () => {
      const { code } = await call('PATCH', '/api/v1/nodes/gpu-0', `{"spec":{"x":${deepObject(400)}}}`);
      expect(code).toBe(200);
    });
  });
});
