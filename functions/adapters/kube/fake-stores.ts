/**
 * In-memory QuotaOps, StateStore and LeaseOps over a FakeCluster. Injected 409s are absorbed up
 * to the cluster's `conflictAttempts` (re-running the update function, as the real store does),
 * then surface as ConflictError; other injected statuses throw what the real adapter throws.
 */
import type { Clock } from '../clock.ts';
import { BadInputError, ConflictError } from '../errors.ts';
import type { FakeCluster } from './fake-cluster.ts';
import { decodeValue } from './kube-state-store.ts';
import type { ApplyResult, Json, LeaseAttempt, LeaseState, LimitRangeInfo, QuotaInfo } from './model.ts';
import type {
  ClusterPolicyMigConfig,
  ConfigFileOps,
  ConfigMapOwnership,
  DeviceTaintOps,
  LeaseOps,
  LimitRangeSpec,
  QuotaOps,
  QuotaSpec,
  StateStore,
} from './ports.ts';
import type { DeviceRef, DeviceTaint } from './ports.ts';
import { sameJson } from './same-json.ts';

export class FakeQuotaOps implements QuotaOps {
  constructor(readonly cluster: FakeCluster) {}

  async getQuota(namespace: string, name: string): Promise<QuotaInfo | undefined> {
    this.begin('quotas.getQuota', [namespace, name], false);
    const q = this.cluster.quotas.get(`${namespace}/${name}`);
    return q && structuredClone(q);
  }

  async listQuotas(namespace?: string): Promise<QuotaInfo[]> {
    this.begin('quotas.listQuotas', [namespace], false);
    return [...this.cluster.quotas.values()]
      .filter((q) => namespace === undefined || q.namespace === namespace)
      .map((q) => structuredClone(q));
  }

  async applyQuota(namespace: string, name: string, spec: QuotaSpec): Promise<ApplyResult> {
    this.begin('quotas.applyQuota', [namespace, name, spec], true);
    const key = `${namespace}/${name}`;
    const cur = this.cluster.quotas.get(key);
    if (spec.basis !== undefined && !sameJson(cur ? cur.hard : null, spec.basis))
      throw new ConflictError(`applying resourcequota ${key}: its hard values changed since they were read`);
    if (
      cur !== undefined &&
      sameJson(cur.hard, spec.hard) &&
      hasAll(cur.labels, spec.labels) &&
      hasAll(cur.annotations ?? {}, spec.annotations)
    )
      return 'unchanged';
    const labels = { ...(cur?.labels ?? {}), ...spec.labels };
    const annotations = { ...(cur?.annotations ?? {}), ...spec.annotations };
    const rv = this.cluster.nextResourceVersion();
    this.cluster.quotas.set(key, {
      namespace,
      name,
      labels,
      annotations,
      hard: { ...spec.hard },
      used: cur?.used ?? {},
      resourceVersion: rv,
    });
    return cur === undefined ? 'created' : 'updated';
  }

  async deleteQuota(namespace: string, name: string, resourceVersion: string): Promise<'deleted' | 'absent'> {
    this.begin('quotas.deleteQuota', [namespace, name, resourceVersion], true);
    const cur = this.cluster.quotas.get(`${namespace}/${name}`);
    if (cur === undefined) return 'absent';
    if (cur.resourceVersion !== resourceVersion)
      throw new ConflictError(`deleting resourcequota ${namespace}/${name}: the object has been modified`);
    this.cluster.quotas.delete(`${namespace}/${name}`);
    return 'deleted';
  }

  async getLimitRange(namespace: string, name: string): Promise<LimitRangeInfo | undefined> {
    this.begin('quotas.getLimitRange', [namespace, name], false);
    const l = this.cluster.limitRanges.get(`${namespace}/${name}`);
    return l && structuredClone(l);
  }

  async listLimitRanges(namespace?: string): Promise<LimitRangeInfo[]> {
    this.begin('quotas.listLimitRanges', [namespace], false);
    return [...this.cluster.limitRanges.values()]
      .filter((l) => namespace === undefined || l.namespace === namespace)
      .map((l) => structuredClone(l));
  }

  async applyLimitRange(namespace: string, name: string, spec: LimitRangeSpec): Promise<ApplyResult> {
    this.begin('quotas.applyLimitRange', [namespace, name, spec], true);
    const key = `${namespace}/${name}`;
    const cur = this.cluster.limitRanges.get(key);
    if (cur !== undefined && sameJson(cur.limits, spec.limits) && hasAll(cur.labels, spec.labels)) return 'unchanged';
    const labels = { ...(cur?.labels ?? {}), ...spec.labels };
    const rv = this.cluster.nextResourceVersion();
    this.cluster.limitRanges.set(key, {
      namespace,
      name,
      labels,
      limits: structuredClone(spec.limits),
      resourceVersion: rv,
    });
    return cur === undefined ? 'created' : 'updated';
  }

  private begin(op: string, args: unknown[], rmw: boolean): void {
    this.cluster.record(op, args);
    this.cluster.guard(op, op, rmw);
  }
}

function hasAll(current: Record<string, string>, wanted: Record<string, string> | undefined): boolean {
  return Object.entries(wanted ?? {}).every(([k, v]) => current[k] === v);
}

const KEY = /^[-._a-zA-Z0-9]{1,253}$/;

export class FakeStateStore implements StateStore {
  constructor(readonly cluster: FakeCluster) {}

  async get(key: string): Promise<Json | undefined> {
    this.cluster.record('state.get', [key]);
    this.cluster.guard('state.get', `reading state ${key}`, false);
    const raw = this.cluster.state.get(key);
    return raw === undefined ? undefined : decodeValue(key, raw);
  }

  async getAll(): Promise<Record<string, Json>> {
    this.cluster.record('state.getAll', []);
    this.cluster.guard('state.getAll', 'reading state', false);
    return Object.fromEntries([...this.cluster.state].map(([k, v]) => [k, decodeValue(k, v)]));
  }

  async update<T extends Json>(key: string, fn: (current: Json | undefined) => T | undefined): Promise<T | undefined> {
    if (!KEY.test(key))
      throw new BadInputError(`state key ${JSON.stringify(key)} must match ${KEY}`, { what: 'state key' });
    this.cluster.record('state.update', [key]);
    const read = (): Json | undefined => {
      const raw = this.cluster.state.get(key);
      return raw === undefined ? undefined : decodeValue(key, raw);
    };
    // Like the real store, fn runs once per attempt: an absorbed conflict runs it again.
    this.cluster.guard('state.update', `updating state ${key}`, true, () => fn(read()));
    const current = read();
    const next = fn(current);
    if (next === undefined) this.cluster.state.delete(key);
    else if (current === undefined || !sameJson(current, next)) this.cluster.state.set(key, JSON.stringify(next));
    return next;
  }
}

export class FakeLeaseOps implements LeaseOps {
  constructor(readonly cluster: FakeCluster) {}

  async tryAcquire(name: string, holder: string, durationS: number, clock: Clock): Promise<LeaseAttempt> {
    this.cluster.record('leases.tryAcquire', [name, holder, durationS]);
    if (holder === '') throw new BadInputError('lease holder must not be empty', { what: `lease ${name}` });
    if (!(Number.isInteger(durationS) && durationS > 0))
      throw new BadInputError(`lease durationS must be a positive integer, got ${durationS}`, {
        what: `lease ${name}`,
      });
    this.cluster.guard('leases.tryAcquire', `acquiring lease ${name}`, true);
    const now = clock.now();
    const cur = this.cluster.leases.get(name);
    if (
      cur !== undefined &&
      cur.holder !== undefined &&
      cur.holder !== holder &&
      cur.renewMs + cur.durationS * 1000 > now
    ) {
      return { acquired: false, lease: state(name, cur) };
    }
    const transitions = cur === undefined ? 0 : cur.holder === holder ? cur.transitions : cur.transitions + 1;
    const next = { holder, durationS, renewMs: now, transitions };
    this.cluster.leases.set(name, next);
    return { acquired: true, lease: state(name, next) };
  }

  async renew(name: string, holder: string, clock: Clock): Promise<boolean> {
    this.cluster.record('leases.renew', [name, holder]);
    this.cluster.guard('leases.renew', `renewing lease ${name}`, true);
    const cur = this.cluster.leases.get(name);
    if (cur === undefined || cur.holder !== holder) return false;
    cur.renewMs = clock.now();
    return true;
  }

  async release(name: string, holder: string): Promise<boolean> {
    this.cluster.record('leases.release', [name, holder]);
    this.cluster.guard('leases.release', `releasing lease ${name}`, true);
    const cur = this.cluster.leases.get(name);
    if (cur === undefined || cur.holder !== holder) return false;
    // As the real adapter: a free lease is no object.
    this.cluster.leases.delete(name);
    return true;
  }

  async get(name: string): Promise<LeaseState | undefined> {
    this.cluster.record('leases.get', [name]);
    this.cluster.guard('leases.get', `reading lease ${name}`, false);
    const cur = this.cluster.leases.get(name);
    return cur && state(name, cur);
  }
}

function state(name: string, l: { holder: string | undefined; durationS: number; renewMs: number }): LeaseState {
  return {
    name,
    holder: l.holder,
    durationS: l.durationS,
    expiresAtMs: l.holder === undefined ? 0 : l.renewMs + l.durationS * 1000,
  };
}

export class FakeDeviceTaintOps implements DeviceTaintOps {
  constructor(readonly cluster: FakeCluster) {}

  async devices(node: string, driver: string): Promise<Record<string, DeviceRef>> {
    this.cluster.record('deviceTaints.devices', [node, driver]);
    this.cluster.guard('deviceTaints.devices', `listing resourceslices of node ${node}`, false);
    return Object.fromEntries(
      Object.entries(this.cluster.draDevices.get(node) ?? {}).filter(([, d]) => d.driver === driver),
    );
  }

  async rules(node: string): Promise<string[]> {
    this.cluster.record('deviceTaints.rules', [node]);
    this.cluster.guard('deviceTaints.rules', `listing devicetaintrules of node ${node}`, false);
    return [...this.cluster.deviceTaintRules.values()]
      .filter((r) => r.node === node)
      .map((r) => r.name)
      .sort();
  }

  async create(rule: DeviceTaint): Promise<boolean> {
    this.cluster.record('deviceTaints.create', [rule]);
    this.cluster.guard('deviceTaints.create', `creating devicetaintrule ${rule.name}`, false);
    if (this.cluster.deviceTaintRules.has(rule.name)) return false;
    this.cluster.deviceTaintRules.set(rule.name, structuredClone(rule));
    return true;
  }

  async remove(name: string): Promise<boolean> {
    this.cluster.record('deviceTaints.remove', [name]);
    this.cluster.guard('deviceTaints.remove', `deleting devicetaintrule ${name}`, false);
    return this.cluster.deviceTaintRules.delete(name);
  }
}

/** ConfigFileOps over the FakeCluster's `configFiles`; every write is recorded as `configFile.update`. */
export class FakeConfigFile implements ConfigFileOps {
  constructor(
    private readonly cluster: FakeCluster,
    readonly ref: { namespace: string; name: string; key: string } = {
      namespace: 'gpu-operator',
      name: 'gpu-reflex-mig-parted-config',
      key: 'config.yaml',
    },
  ) {}

  async clusterPolicies(): Promise<readonly ClusterPolicyMigConfig[] | undefined> {
    return this.cluster.clusterPolicies;
  }

  async ownership(): Promise<ConfigMapOwnership | undefined> {
    const set = this.cluster.configFileOwners.get(`${this.ref.namespace}/${this.ref.name}`);
    if (set) return set;
    return this.cluster.configFiles.has(this.id) ? { labels: {}, ownerReferences: [] } : undefined;
  }

  private get id(): string {
    return `${this.ref.namespace}/${this.ref.name}/${this.ref.key}`;
  }

  async read(): Promise<string | undefined> {
    return this.cluster.configFiles.get(this.id);
  }

  async update(fn: (current: string | undefined) => string): Promise<void> {
    const current = this.cluster.configFiles.get(this.id);
    const next = fn(current);
    if (next === current) return;
    this.cluster.record('configFile.update', [this.id]);
    this.cluster.configFiles.set(this.id, next);
  }
}
