import { apiVersionOf, resource, RESOURCES, type ResourceDef } from './resources.ts';

/**
 * Which Kubernetes release the simulated API server is, and so which resource.k8s.io (DRA) versions it
 * serves. A scenario picks one (`kubernetesVersion`, 1.32–1.37), may turn feature gates on or off
 * (`featureGates`, as `--feature-gates`) and enable API versions that are off by default (`runtimeConfig`,
 * as `--runtime-config=resource.k8s.io/v1beta2=true`). A request to a version the release does not serve
 * gets the real 404 (`the server could not find the requested resource`), and discovery leaves it out.
 *
 * Sources (checked 2026-12-04):
 * - Feature gate defaults per release: kubernetes/kubernetes pkg/features/kube_features.go (versioned specs):
 *   DynamicResourceAllocation beta off in 1.32, GA on from 1.34; DRADeviceTaints alpha off from 1.33, beta on
 *   from 1.36; DRADeviceTaintRules alpha off in 1.35, beta off in 1.36 ("depends on an off-by-default beta
 *   API"), GA on in 1.37.
 * - API versions: resource.k8s.io/v1beta1 from 1.32 and v1beta2 from 1.33, beta APIs off by default
 *   (https://kubernetes.io/docs/tasks/configure-pod-container/assign-resources/set-up-dra-cluster/);
 *   v1 from 1.34, on by default (kubernetes/kubernetes#132706 "DRA API: graduation to GA"); alpha APIs
 *   (v1alpha3) always need --runtime-config.
 * - DeviceTaintRule (KEP-5055; "Device taints and tolerations" in
 *   https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/): v1alpha3 from 1.33
 *   behind DRADeviceTaints (DRADeviceTaintRules from 1.35); v1beta2 from 1.36, where
 *   "support for DeviceTaintRules depends on enabling resource.k8s.io/v1beta2 and the DeviceTaintRules feature
 *   gate" (kubernetes/kubernetes#137170); v1 in 1.37 (kubernetes/kubernetes#138676, kubernetes/enhancements#6299).
 */
export const KUBERNETES_VERSIONS = ['1.32', '1.33', '1.34', '1.35', '1.36', '1.37'] as const;
export type KubernetesVersion = (typeof KUBERNETES_VERSIONS)[number];
export const DEFAULT_KUBERNETES_VERSION: KubernetesVersion = '1.37';

export interface ApiSettings {
  kubernetesVersion?: KubernetesVersion;
  /** `--feature-gates`: only the gates named below change what is served. */
  featureGates?: Record<string, boolean>;
  /** `--runtime-config`: group/versions turned on (`resource.k8s.io/v1beta2` or `…=true`; `…=false` turns off). */
  runtimeConfig?: string[];
}

/** Per gate: from which minor release its default is what (the last entry at or below the release wins). */
const GATE_DEFAULTS: Record<string, [minor: number, on: boolean][]> = {
  DynamicResourceAllocation: [
    [32, false],
    [34, true],
  ],
  DRADeviceTaints: [
    [33, false],
    [36, true],
  ],
  DRADeviceTaintRules: [
    [35, false],
    [37, true],
  ],
};

/** resource.k8s.io versions: the first release that has each, and whether it is on without --runtime-config. */
const GROUP_VERSIONS: Record<string, { since: number; onByDefault: boolean }> = {
  v1alpha3: { since: 31, onByDefault: false },
  v1beta1: { since: 32, onByDefault: false },
  v1beta2: { since: 33, onByDefault: false },
  v1: { since: 34, onByDefault: true },
};

/** Which DRA kind each version carries, from which release, and the gate it needs there. */
const DRA_KINDS: { plural: string; version: string; since: number; gate?: (minor: number) => string }[] = [
  { plural: 'resourceslices', version: 'v1beta1', since: 32 },
  { plural: 'resourceslices', version: 'v1beta2', since: 33 },
  { plural: 'resourceslices', version: 'v1', since: 34 },
  // Claims, templates and classes at v1beta1 (flat requests, converted below), v1beta2 and v1 (`exactly`).
  ...['resourceclaims', 'resourceclaimtemplates', 'deviceclasses'].flatMap((plural) => [
    { plural, version: 'v1beta1', since: 32 },
    { plural, version: 'v1beta2', since: 33 },
    { plural, version: 'v1', since: 34 },
  ]),
  {
    plural: 'devicetaintrules',
    version: 'v1alpha3',
    since: 33,
    gate: (m) => (m >= 35 ? 'DRADeviceTaintRules' : 'DRADeviceTaints'),
  },
  { plural: 'devicetaintrules', version: 'v1beta2', since: 36, gate: () => 'DRADeviceTaintRules' },
  { plural: 'devicetaintrules', version: 'v1', since: 37, gate: () => 'DRADeviceTaintRules' },
];

export const DRA_GROUP = 'resource.k8s.io';

export class ServedApis {
  readonly version: KubernetesVersion;
  readonly minor: number;
  /** The DRA rows this release serves (each a copy of the stored kind's row at its served version). */
  readonly dra: ResourceDef[];

  constructor(settings: ApiSettings = {}) {
    this.version = settings.kubernetesVersion ?? DEFAULT_KUBERNETES_VERSION;
    if (!KUBERNETES_VERSIONS.includes(this.version))
      throw new Error(`kubernetesVersion ${String(this.version)}: expected one of ${KUBERNETES_VERSIONS.join(', ')}`);
    this.minor = Number(this.version.split('.')[1]);
    const gates = settings.featureGates ?? {};
    const enabled = new Map<string, boolean>();
    for (const entry of settings.runtimeConfig ?? []) {
      if (!/^[a-z0-9.-]+\/v[0-9a-z]+(=(true|false))?$/.test(entry))
        throw new Error(`runtimeConfig ${entry}: expected group/version, group/version=true or =false`);
      const [gv, value] = entry.split('=');
      enabled.set(gv!, value === undefined || value === 'true');
    }
    const gateOn = (name: string) => gates[name] ?? defaultOf(name, this.minor);
    const versionOn = (v: string) => {
      const spec = GROUP_VERSIONS[v]!;
      return spec.since <= this.minor && (enabled.get(`${DRA_GROUP}/${v}`) ?? spec.onByDefault);
    };
    this.dra = DRA_KINDS.filter(
      (k) => k.since <= this.minor && versionOn(k.version) && (k.gate === undefined || gateOn(k.gate(this.minor))),
    ).map((k) => ({ ...resource(k.plural), version: k.version }));
  }

  /** Every row served: the core and other kinds as listed, DRA kinds at the versions this release serves. */
  resources(): ResourceDef[] {
    return [...RESOURCES.filter((r) => r.group !== DRA_GROUP), ...this.dra];
  }

  find(apiVersion: string, plural: string): ResourceDef | undefined {
    return this.resources().find((r) => apiVersionOf(r) === apiVersion && r.plural === plural);
  }

  /** Served group/versions, the newest first within a group (discovery's preferred version is the first). */
  groupVersions(): { group: string; version: string }[] {
    const seen = new Map<string, { group: string; version: string }>();
    for (const r of this.resources())
      if (r.group !== '') seen.set(`${r.group}/${r.version}`, { group: r.group, version: r.version });
    const rank = (v: string) => ['v1', 'v1beta2', 'v1beta1', 'v1alpha3'].indexOf(v);
    return [...seen.values()].sort((a, b) => (a.group === b.group ? rank(a.version) - rank(b.version) : 0));
  }

  /** `/version`, as a real server of this release answers it. */
  versionInfo(): object {
    return {
      major: '1',
      minor: String(this.minor),
      gitVersion: `v${this.version}.0-gpu-reflex-sim`,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2026-01-01T00:00:00Z',
      goVersion: 'go1.24.0',
      compiler: 'gc',
      platform: 'linux/amd64',
    };
  }

  /** `v1.37.0`: what kubelets and kube-proxies of this release report in `nodeInfo`. */
  gitVersion(): string {
    return `v${this.version}.0`;
  }
}

function defaultOf(gate: string, minor: number): boolean {
  let on = false;
  for (const [since, value] of GATE_DEFAULTS[gate] ?? []) if (since <= minor) on = value;
  return on;
}

/**
 * An object as the client's version shows it, from the stored (v1) one. At `v1beta1`:
 * - a ResourceSlice nests each device's fields under `basic` (k8s.io/api resource/v1beta1 `Device.Basic`);
 * - a claim's (and a template's) request carries the fields of v1's `exactly` itself (`deviceClassName`,
 *   `selectors`, `allocationMode`, `count`, `adminAccess`, `tolerations`, `capacity`: k8s.io/api
 *   resource/v1beta1 `DeviceRequest`; v1beta2 and v1 hold them in `DeviceRequest.Exactly`, an
 *   `ExactDeviceRequest`), and a `firstAvailable` request is the same at every version
 *   (kubernetes pkg/apis/resource/v1beta1/conversion.go).
 * The later versions are v1's shapes. DeviceTaintRule's and DeviceClass's fields are the same in the versions
 * served here; claim status (allocation results, reservedFor, devices) too.
 */
export function toServedVersion(r: ResourceDef, obj: Record<string, unknown>): Record<string, unknown> {
  if (r.group !== DRA_GROUP) return obj;
  const out: Record<string, unknown> = { ...obj, apiVersion: `${r.group}/${r.version}` };
  if (r.version !== 'v1beta1') return out;
  if (r.plural === 'resourceslices') out.spec = mapDevices(obj.spec, nest);
  if (r.plural === 'resourceclaims') out.spec = mapRequests(obj.spec, flatRequest);
  if (r.plural === 'resourceclaimtemplates') out.spec = mapTemplate(obj.spec, flatRequest);
  return out;
}

/** A client's object at its version, as stored (v1). */
export function toStoredVersion(r: ResourceDef, obj: unknown): unknown {
  if (r.group !== DRA_GROUP || typeof obj !== 'object' || obj === null || Array.isArray(obj)) return obj;
  const rec = obj as Record<string, unknown>;
  const out: Record<string, unknown> = { ...rec };
  if (rec.apiVersion !== undefined) out.apiVersion = `${r.group}/${resource(r.plural).version}`;
  if (r.version !== 'v1beta1') return out;
  if (r.plural === 'resourceslices') out.spec = mapDevices(rec.spec, flatten);
  if (r.plural === 'resourceclaims') out.spec = mapRequests(rec.spec, exactRequest);
  if (r.plural === 'resourceclaimtemplates') out.spec = mapTemplate(rec.spec, exactRequest);
  return out;
}

type Device = Record<string, unknown>;
const nest = ({ name, ...rest }: Device): Device => ({ name, basic: rest });
const flatten = ({ basic, ...rest }: Device): Device => ({
  ...rest,
  ...(typeof basic === 'object' && basic !== null ? (basic as Device) : {}),
});

function mapDevices(spec: unknown, f: (d: Device) => Device): unknown {
  if (typeof spec !== 'object' || spec === null) return spec;
  const s = spec as { devices?: unknown };
  if (!Array.isArray(s.devices)) return spec;
  return { ...s, devices: s.devices.map((d) => (typeof d === 'object' && d !== null ? f(d as Device) : d)) };
}

type Request = Record<string, unknown>;
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** v1 → v1beta1: `{name, exactly: {...}}` becomes `{name, ...}`; a `firstAvailable` request stays as it is. */
const flatRequest = ({ exactly, ...rest }: Request): Request => ({ ...rest, ...(isRecord(exactly) ? exactly : {}) });

/** v1beta1 → v1: the fields of an exact request move under `exactly` unless the request lists `firstAvailable`. */
const EXACT_FIELDS = [
  'deviceClassName',
  'selectors',
  'allocationMode',
  'count',
  'adminAccess',
  'tolerations',
  'capacity',
];
function exactRequest(req: Request): Request {
  if (Array.isArray(req.firstAvailable) && req.firstAvailable.length > 0) return req;
  const out: Request = {};
  const exactly: Request = {};
  for (const [k, v] of Object.entries(req)) (EXACT_FIELDS.includes(k) ? exactly : out)[k] = v;
  return { ...out, exactly };
}

/** ResourceClaimSpec: `devices.requests[]` mapped, everything else kept. */
function mapRequests(spec: unknown, f: (r: Request) => Request): unknown {
  if (!isRecord(spec) || !isRecord(spec.devices) || !Array.isArray(spec.devices.requests)) return spec;
  const requests = spec.devices.requests.map((q) => (isRecord(q) ? f(q) : q));
  return { ...spec, devices: { ...spec.devices, requests } };
}

/** ResourceClaimTemplateSpec: the claim spec sits at `spec.spec`. */
function mapTemplate(spec: unknown, f: (r: Request) => Request): unknown {
  return isRecord(spec) && isRecord(spec.spec) ? { ...spec, spec: mapRequests(spec.spec, f) } : spec;
}
