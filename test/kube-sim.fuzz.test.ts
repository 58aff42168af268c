import fc from 'fast-check';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startKubeSim, type Fleet, type KubeSim } from '../infra/local/kube/index.ts';
import { typeMismatch } from '../infra/local/kube/body-types.ts';

/**
 * Hostile input against the running simulated API server (loopback, port 0): random patches of
 * every type, random create bodies and random query strings. Properties: no answer is a 5xx (a
 * crash, an unhandled exception), none takes more than a second, the server keeps answering, and
 * nothing it stored breaks the type rules it enforces on clients (so kubectl can still read it).
 * Seeds are fixed so a run is repeatable; each request has a generous 10 s client timeout, so a
 * slow answer is measured and reported, not cut short.
 */
// Fixed so runs repeat; KUBE_FUZZ_SEED / KUBE_FUZZ_RUNS explore further by hand.
const SEED = Number(process.env.KUBE_FUZZ_SEED ?? 20261123);
const RUNS = Number(process.env.KUBE_FUZZ_RUNS ?? 1);
const SLOW_MS = 1000;

const fleet: Fleet = {
  nodes: [{ name: 'fuzz', count: 2, allocatable: { cpu: '32', memory: '128Gi', 'nvidia.com/gpu': 8 } }],
  namespaces: [{ name: 'apps' }],
  pods: [
    {
      name: 'web',
      namespace: 'apps',
      count: 3,
      node: 'fuzz-0',
      owner: { kind: 'ReplicaSet', name: 'web-1' },
      labels: { app: 'web' },
    },
  ],
  podDisruptionBudgets: [
    { name: 'web', namespace: 'apps', minAvailable: 1, selector: { matchLabels: { app: 'web' } } },
  ],
};

interface Answer {
  status: number;
  ms: number;
  what: string;
}

/** Keys real clients send, plus a few that have broken servers before. */
const key = fc.oneof(
  fc.constantFrom(
    'metadata',
    'spec',
    'status',
    'labels',
    'annotations',
    'taints',
    'unschedulable',
    'name',
    'key',
    'effect',
    'value',
    'containers',
    'conditions',
    'finalizers',
    '$patch',
    '$retainKeys',
    '$setElementOrder/taints',
    '$deleteFromPrimitiveList/finalizers',
    '__proto__',
    'constructor',
    'resourceVersion',
    'nodeName',
  ),
  fc.string({ maxLength: 8 }),
);
const scalar = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('NoSchedule', 'NoExecute', 'replace', 'delete', 'merge', '1e999', '-1', '9223372036854775808'),
);
const json = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('array'), tie('object')),
  array: fc.array(tie('value'), { maxLength: 4 }),
  object: fc.dictionary(key, tie('value'), { maxKeys: 5 }),
})).value;

/** Bodies shaped like what clients send for a node or pod, with random holes and wrong types. */
const objectish = fc.record(
  {
    metadata: fc.oneof(
      json,
      fc.record(
        {
          name: fc.oneof(fc.string({ maxLength: 10 }), json),
          labels: json,
          annotations: json,
          resourceVersion: json,
          finalizers: json,
        },
        { requiredKeys: [] },
      ),
    ),
    spec: fc.oneof(
      json,
      fc.record(
        { unschedulable: json, taints: json, containers: json, nodeName: json, terminationGracePeriodSeconds: json },
        { requiredKeys: [] },
      ),
    ),
    status: json,
  },
  { requiredKeys: [] },
);

const pointer = fc
  .array(key, { maxLength: 4 })
  .map((parts) => '/' + parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/'));
const jsonPatch = fc.array(
  fc.record(
    {
      op: fc.oneof(fc.constantFrom('add', 'remove', 'replace', 'move', 'copy', 'test'), fc.string({ maxLength: 5 })),
      path: fc.oneof(
        pointer,
        fc.constantFrom('/spec/unschedulable', '/metadata/labels/x', '/spec/taints/-', '/spec/taints/0', '', '/'),
        json,
      ),
      from: pointer,
      value: json,
    },
    { requiredKeys: ['op'] },
  ),
  { maxLength: 4 },
);

const PATCH_TARGETS = [
  '/api/v1/nodes/fuzz-1',
  '/api/v1/nodes/fuzz-1/status',
  '/api/v1/namespaces/apps/pods/web-1',
  '/api/v1/namespaces/apps/pods/web-1/status',
  '/api/v1/namespaces/apps/configmaps/cm',
];
const TYPES = [
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/json-patch+json',
  'application/apply-patch+yaml',
];

const queryValue = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    'true',
    'True',
    '0',
    'false',
    '-1',
    '0x10',
    '1e3',
    'All',
    'abc',
    '',
    '9999999999999999999999',
    '8000000000000',
    '-8000000000000',
    'a=b',
    'spec.nodeName=fuzz-0',
    'app in (web',
    'metadata.name!=x,status.phase=Running',
    '__proto__=x',
    'constructor=x',
    'involvedObject.name=fuzz-0',
  ),
);
const queryString = fc
  .array(
    fc.tuple(
      fc.constantFrom(
        'watch',
        'limit',
        'continue',
        'labelSelector',
        'fieldSelector',
        'resourceVersion',
        'resourceVersionMatch',
        'timeoutSeconds',
        'allowWatchBookmarks',
        'dryRun',
        'gracePeriodSeconds',
        'propagationPolicy',
        'fieldManager',
        'fieldValidation',
        'pretty',
      ),
      queryValue,
    ),
    { maxLength: 5 },
  )
  .map((pairs) => new URLSearchParams(pairs).toString());
const QUERY_TARGETS: [string, string][] = [
  ['GET', '/api/v1/nodes'],
  ['GET', '/api/v1/pods'],
  ['GET', '/api/v1/namespaces/apps/pods'],
  ['GET', '/api/v1/events'],
  ['GET', '/apis/events.k8s.io/v1/events'],
  ['GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases'],
  ['GET', '/api/v1/nodes/fuzz-0'],
  ['DELETE', '/api/v1/namespaces/apps/pods/web-2'],
  ['PATCH', '/api/v1/nodes/fuzz-0'],
];

describe('the simulated API server under random input', () => {
  let sim: KubeSim;
  const slow: Answer[] = [];
  const crashed: Answer[] = [];
  beforeAll(async () => {
    sim = await startKubeSim({ fleet });
    await fetch(`${sim.url}/api/v1/namespaces/apps/configmaps`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'cm' }, data: { a: 'b' } }),
    });
  });
  afterAll(() => sim.close());
  beforeEach(() => {
    slow.length = 0;
    crashed.length = 0;
  });

  /** One request; a 200 stream (a watch) is cut once its headers arrive. */
  async function send(method: string, path: string, body?: string, contentType = 'application/json'): Promise<Answer> {
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), 10_000);
    const started = performance.now();
    try {
      const res = await fetch(sim.url + path, {
        method,
        headers: { 'content-type': contentType },
        ...(body === undefined ? {} : { body }),
        signal: ac.signal,
      });
      if (res.headers.get('transfer-encoding') === 'chunked' && res.status === 200) ac.abort();
      else await res.text();
      const answer = {
        status: res.status,
        ms: performance.now() - started,
        what: `${method} ${path} ${contentType} ${body?.slice(0, 300) ?? ''}`,
      };
      if (answer.status >= 500) crashed.push(answer);
      if (answer.ms > SLOW_MS) slow.push(answer);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  async function stillServing(): Promise<void> {
    // A `__proto__` key in a body must never have reached Object.prototype (this process runs the server).
    expect(Object.keys(Object.prototype)).toEqual([]);
    expect((await send('GET', '/healthz')).status).toBe(200);
    expect((await send('GET', '/api/v1/nodes/fuzz-0')).status).toBe(200);
  }

  /** Whatever got stored still passes the type rules the server enforces on writes. */
  function storeIsWellTyped(): void {
    for (const res of ['nodes', 'pods', 'configmaps', 'events', 'leases.coordination.k8s.io']) {
      for (const o of sim.store.list(res)) expect(typeMismatch(o), `${res} ${o.metadata.name}`).toBeUndefined();
    }
  }

  it('random patches of every type never crash it or take a second', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...PATCH_TARGETS),
        fc.constantFrom(...TYPES),
        fc.oneof(json, objectish, jsonPatch),
        fc.boolean(),
        async (path, type, patch, asText) => {
          const body = asText && typeof patch === 'string' ? patch : JSON.stringify(patch);
          const { status } = await send('PATCH', `${path}?fieldManager=fuzz`, body, type);
          expect(status).toBeLessThan(500);
        },
      ),
      { seed: SEED, numRuns: 400 * RUNS },
    );
    expect(crashed).toEqual([]);
    expect(slow).toEqual([]);
    await stillServing();
    storeIsWellTyped();
  });

  it('random create and replace bodies never crash it', async () => {
    const targets = [
      '/api/v1/nodes',
      '/api/v1/namespaces/apps/pods',
      '/api/v1/namespaces/apps/configmaps',
      '/api/v1/namespaces/apps/events',
      '/apis/events.k8s.io/v1/namespaces/apps/events',
      '/api/v1/namespaces/apps/pods/web-0/eviction',
      '/apis/coordination.k8s.io/v1/namespaces/apps/leases',
    ];
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...targets),
        fc.oneof(objectish, json),
        fc.constantFrom('POST', 'PUT'),
        async (path, body, method) => {
          const target =
            method === 'PUT' && !path.endsWith('eviction')
              ? path === '/api/v1/nodes'
                ? '/api/v1/nodes/fuzz-1'
                : `${path}/${path.includes('pods') ? 'web-1' : 'cm'}`
              : path;
          const { status } = await send(
            method === 'PUT' && path.endsWith('eviction') ? 'POST' : method,
            `${target}?dryRun=All`,
            JSON.stringify(body),
          );
          expect(status).toBeLessThan(500);
        },
      ),
      { seed: SEED + 1, numRuns: 300 * RUNS },
    );
    expect(crashed).toEqual([]);
    expect(slow).toEqual([]);
    await stillServing();
    storeIsWellTyped();
  });

  it('random query strings never crash it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...QUERY_TARGETS), queryString, async ([method, path], query) => {
        const { status } = await send(
          method,
          `${path}?${query}`,
          method === 'PATCH' ? '{}' : undefined,
          'application/merge-patch+json',
        );
        expect(status).toBeLessThan(500);
      }),
      { seed: SEED + 2, numRuns: 400 * RUNS },
    );
    expect(crashed).toEqual([]);
    expect(slow).toEqual([]);
    await stillServing();
  });

  it('raw bytes in any content type are refused cleanly', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...TYPES, 'application/json', 'application/yaml', 'text/plain'),
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.constantFrom(
            '{',
            '[[[',
            '{"a":',
            'null',
            '"x"',
            '&a [*a, *a]',
            '!!binary x',
            '- - - - x',
            ': :',
            '{a: [b, {c: d}]}',
          ),
        ),
        async (type, text) => {
          const { status } = await send('PATCH', '/api/v1/nodes/fuzz-1?fieldManager=fuzz', text, type);
          expect(status).toBeLessThan(500);
        },
      ),
      { seed: SEED + 3, numRuns: 200 * RUNS },
    );
    expect(crashed).toEqual([]);
    await stillServing();
    storeIsWellTyped();
  });
});
