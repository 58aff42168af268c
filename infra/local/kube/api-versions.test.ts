import { afterEach, describe, expect, it } from 'vitest';
import { ServedApis, type ApiSettings, type KubernetesVersion } from './api-versions.ts';
import { startKubeSim, type KubeSim } from './index.ts';

const served = (s: ApiSettings, kinds = ['resourceslices', 'devicetaintrules']) =>
  new ServedApis(s).dra.filter((r) => kinds.includes(r.plural)).map((r) => `${r.plural}/${r.version}`);

describe('which resource.k8s.io versions each Kubernetes release serves', () => {
  it.each<[KubernetesVersion, string[]]>([
    ['1.32', []],
    ['1.33', []],
    ['1.34', ['resourceslices/v1']],
    ['1.35', ['resourceslices/v1']],
    // DeviceTaintRule v1beta2 exists, but its API version and its gate are off by default (kubernetes#137170).
    ['1.36', ['resourceslices/v1']],
    ['1.37', ['resourceslices/v1', 'devicetaintrules/v1']],
  ])('Kubernetes %s with its defaults: %j', (kubernetesVersion, rows) => {
    expect(served({ kubernetesVersion })).toEqual(rows);
  });

  it.each<[string, ApiSettings, string[]]>([
    [
      '1.33 with v1alpha3 and DRADeviceTaints on',
      {
        kubernetesVersion: '1.33',
        runtimeConfig: ['resource.k8s.io/v1alpha3', 'resource.k8s.io/v1beta2'],
        featureGates: { DRADeviceTaints: true },
      },
      ['resourceslices/v1beta2', 'devicetaintrules/v1alpha3'],
    ],
    // From 1.35 the rule API has its own gate: DRADeviceTaints alone no longer serves it.
    [
      '1.35 with v1alpha3 and only DRADeviceTaints',
      {
        kubernetesVersion: '1.35',
        runtimeConfig: ['resource.k8s.io/v1alpha3'],
        featureGates: { DRADeviceTaints: true },
      },
      ['resourceslices/v1'],
    ],
    [
      '1.35 with v1alpha3 and DRADeviceTaintRules',
      {
        kubernetesVersion: '1.35',
        runtimeConfig: ['resource.k8s.io/v1alpha3'],
        featureGates: { DRADeviceTaintRules: true },
      },
      ['resourceslices/v1', 'devicetaintrules/v1alpha3'],
    ],
    [
      '1.36 with v1beta2 and DRADeviceTaintRules',
      {
        kubernetesVersion: '1.36',
        runtimeConfig: ['resource.k8s.io/v1beta2=true'],
        featureGates: { DRADeviceTaintRules: true },
      },
      ['resourceslices/v1beta2', 'resourceslices/v1', 'devicetaintrules/v1beta2'],
    ],
    [
      '1.37 with the gate turned off',
      { kubernetesVersion: '1.37', featureGates: { DRADeviceTaintRules: false } },
      ['resourceslices/v1'],
    ],
    ['1.37 with v1 turned off', { kubernetesVersion: '1.37', runtimeConfig: ['resource.k8s.io/v1=false'] }, []],
    [
      '1.32 with v1beta1 on',
      { kubernetesVersion: '1.32', runtimeConfig: ['resource.k8s.io/v1beta1'] },
      ['resourceslices/v1beta1'],
    ],
  ])('%s', (_what, settings, rows) => {
    expect(served(settings)).toEqual(rows);
  });

  it.each<[string, ApiSettings, string[]]>([
    ['1.32 with its defaults (v1beta1 is off)', { kubernetesVersion: '1.32' }, []],
    ['1.32 with v1beta1 on', { kubernetesVersion: '1.32', runtimeConfig: ['resource.k8s.io/v1beta1'] }, ['v1beta1']],
    ['1.33 with v1beta2 on', { kubernetesVersion: '1.33', runtimeConfig: ['resource.k8s.io/v1beta2'] }, ['v1beta2']],
    ['1.34 with its defaults', { kubernetesVersion: '1.34' }, ['v1']],
    ['1.37 with its defaults', { kubernetesVersion: '1.37' }, ['v1']],
  ])('serves ResourceClaims, their templates and DeviceClasses on %s', (_what, settings, versions) => {
    const kinds = ['resourceclaims', 'resourceclaimtemplates', 'deviceclasses'];
    expect(served(settings, kinds)).toEqual(versions.flatMap((v) => kinds.map((k) => `${k}/${v}`)));
  });

  it('refuses a release it does not know and a runtime-config it cannot read', () => {
    expect(() => new ServedApis({ kubernetesVersion: '1.30' as KubernetesVersion })).toThrow(/1\.32, 1\.33/);
    expect(() => new ServedApis({ runtimeConfig: ['resource.k8s.io/v1beta2=maybe'] })).toThrow(/runtimeConfig/);
  });
});

describe('the API server of a release', () => {
  let sim: KubeSim | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });
  const get = async (path: string) => {
    const res = await fetch(`${sim!.url}${path}`);
    return { code: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('answers /version, the kubelets and discovery as that release', async () => {
    sim = await startKubeSim({ apis: { kubernetesVersion: '1.35' } });
    expect((await get('/version')).body).toMatchObject({
      major: '1',
      minor: '35',
      gitVersion: 'v1.35.0-gpu-reflex-sim',
    });
    expect((await get('/apis/resource.k8s.io')).body).toMatchObject({
      versions: [{ groupVersion: 'resource.k8s.io/v1', version: 'v1' }],
      preferredVersion: { version: 'v1' },
    });
    const list = (await get('/apis/resource.k8s.io/v1')).body as { resources: { name: string }[] };
    expect(list.resources.map((r) => r.name)).toEqual([
      'resourceslices',
      'resourceclaims',
      'resourceclaimtemplates',
      'deviceclasses',
    ]);
    await fetch(`${sim.url}/api/v1/nodes`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'n1' } }),
    });
    expect(((await get('/api/v1/nodes/n1')).body.status as { nodeInfo: object }).nodeInfo).toMatchObject({
      kubeletVersion: 'v1.35.0',
    });
  });

  it('answers a DeviceTaintRule request at a version the release does not serve with the real 404', async () => {
    sim = await startKubeSim({ apis: { kubernetesVersion: '1.36' } });
    for (const v of ['v1', 'v1beta2', 'v1alpha3'])
      expect(await get(`/apis/resource.k8s.io/${v}/devicetaintrules`)).toEqual({
        code: 404,
        body: {
          kind: 'Status',
          apiVersion: 'v1',
          metadata: {},
          status: 'Failure',
          message: 'the server could not find the requested resource',
          reason: 'NotFound',
          details: {},
          code: 404,
        },
      });
  });

  it('serves a claim at v1beta1 with its flat requests and stores it in v1 shape (`exactly`)', async () => {
    sim = await startKubeSim({
      apis: { kubernetesVersion: '1.34', runtimeConfig: ['resource.k8s.io/v1beta1'] },
    });
    const flat = {
      name: 'gpu',
      deviceClassName: 'gpu.nvidia.com',
      allocationMode: 'ExactCount',
      count: 2,
      selectors: [{ cel: { expression: 'true' } }],
    };
    const alt = { name: 'alt', firstAvailable: [{ name: 'a', deviceClassName: 'gpu.nvidia.com' }] };
    const post = (path: string, body: object) =>
      fetch(`${sim!.url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const claim = {
      apiVersion: 'resource.k8s.io/v1beta1',
      kind: 'ResourceClaim',
      metadata: { name: 'c1', namespace: 'default' },
      spec: { devices: { requests: [flat, alt] } },
    };
    const created = await post('/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims', claim);
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ apiVersion: 'resource.k8s.io/v1beta1', spec: claim.spec });
    const { name: _name, ...exactly } = flat;
    const v1 = (await get('/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/c1')).body;
    expect(v1.apiVersion).toBe('resource.k8s.io/v1');
    // A firstAvailable request is the same at both versions: no `exactly` beside it.
    expect((v1.spec as { devices: { requests: object[] } }).devices.requests).toEqual([{ name: 'gpu', exactly }, alt]);
    const v1beta1 = (await get('/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims/c1')).body;
    expect((v1beta1.spec as { devices: { requests: object[] } }).devices.requests).toEqual([flat, alt]);
    // A template's claim spec (spec.spec) is converted the same way, both ways.
    const template = {
      apiVersion: 'resource.k8s.io/v1beta1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 't1', namespace: 'default' },
      spec: { spec: { devices: { requests: [flat] } } },
    };
    expect(
      (await post('/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaimtemplates', template)).status,
    ).toBe(201);
    expect((await get('/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates/t1')).body).toMatchObject({
      spec: { spec: { devices: { requests: [{ name: 'gpu', exactly }] } } },
    });
    const t = (await get('/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaimtemplates/t1')).body;
    expect(t.spec).toEqual(template.spec);
  });

  it('serves one store under each version, converted: a v1beta1 ResourceSlice nests its devices under basic', async () => {
    sim = await startKubeSim({
      apis: { kubernetesVersion: '1.34', runtimeConfig: ['resource.k8s.io/v1beta1'] },
    });
    const slice = {
      apiVersion: 'resource.k8s.io/v1beta1',
      kind: 'ResourceSlice',
      metadata: { name: 'n1-gpu' },
      spec: {
        driver: 'gpu.nvidia.com',
        nodeName: 'n1',
        pool: { name: 'n1', generation: 1, resourceSliceCount: 1 },
        devices: [{ name: 'gpu-0', basic: { attributes: { uuid: { string: 'GPU-0' } } } }],
      },
    };
    const created = await fetch(`${sim.url}/apis/resource.k8s.io/v1beta1/resourceslices`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(slice),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ apiVersion: 'resource.k8s.io/v1beta1', spec: slice.spec });
    const v1 = await get('/apis/resource.k8s.io/v1/resourceslices/n1-gpu');
    expect(v1.body).toMatchObject({
      apiVersion: 'resource.k8s.io/v1',
      spec: { devices: [{ name: 'gpu-0', attributes: { uuid: { string: 'GPU-0' } } }] },
    });
    const listed = (await get('/apis/resource.k8s.io/v1beta1/resourceslices')).body;
    expect(listed).toMatchObject({ apiVersion: 'resource.k8s.io/v1beta1', kind: 'ResourceSliceList' });
    expect((listed.items as object[])[0]).toMatchObject({ spec: { devices: [{ basic: { attributes: {} } }] } });
    // A body of another version than the URL's is refused, as the real decoder does.
    const wrong = await fetch(`${sim.url}/apis/resource.k8s.io/v1/resourceslices`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...slice, metadata: { name: 'x' } }),
    });
    expect(wrong.status).toBe(400);
  });
});
