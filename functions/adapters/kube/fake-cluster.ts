/**
 * The shared in-memory state behind the fakes (fake.ts): nodes, pods, PodDisruptionBudgets,
 * quotas, limit ranges, the state ConfigMap and leases, plus a call log and failure injection.
 * Several fakes built on one FakeCluster see each other's writes, like ports over one API server.
 *
 * Deliberately not modelled (the contract suite seeds around them): namespaces (the real API
 * answers 404 for objects in a missing namespace), admission (quota, limit ranges), and the
 * controllers that replace evicted pods. Handler tests that depend on those belong on the
 * simulated cluster.
 */
import type { DeviceRef, DeviceTaint } from './ports.ts';
import type { Clock } from '../clock.ts';
import { ConflictError, fromKubeError } from '../errors.ts';
import type { AdapterError } from '../errors.ts';
import type { LimitRangeInfo, NodeInfo, PodInfo, QuotaInfo } from './model.ts';
import { podKey } from './model.ts';
import { DEFAULT_CONFLICT_ATTEMPTS } from './retry.ts';

/** HTTP statuses a fake can be told to answer with. */
export type InjectedStatus = 403 | 404 | 409 | 429 | 500;

export interface FakeCall {
  /** `<port>.<method>`, e.g. `nodes.cordon`, `pods.evict`, `state.update`. */
  op: string;
  args: unknown[];
}

/** A PodDisruptionBudget reduced to the rule the fakes honour. */
export interface FakePdb {
  namespace: string;
  matchLabels: Record<string, string>;
  /** Healthy matching pods that must remain after an eviction. */
  minAvailable?: number;
  /** Matching pods that may be unavailable (terminating or not running) at once. */
  maxUnavailable?: number;
}

export interface FakeLease {
  holder: string | undefined;
  durationS: number;
  renewMs: number;
  transitions: number;
}

type StoredPod = PodInfo & { deleteAtMs?: number };

export class FakeCluster {
  readonly nodes = new Map<string, NodeInfo>();
  readonly pdbs: FakePdb[] = [];
  readonly quotas = new Map<string, QuotaInfo>();
  readonly limitRanges = new Map<string, LimitRangeInfo>();
  /** The state ConfigMap's `data`: JSON text per key, as the real store keeps it. */
  readonly state = new Map<string, string>();
  readonly leases = new Map<string, FakeLease>();
  /** DRA: each node's GPU devices by UUID (its ResourceSlices), and the DeviceTaintRules by name. */
  readonly draDevices = new Map<string, Record<string, DeviceRef>>();
  readonly deviceTaintRules = new Map<string, DeviceTaint>();
  /** ConfigMap files (`namespace/name/key` → text): mig-manager's mig-parted config. */
  readonly configFiles = new Map<string, string>();
  /** ConfigMap (`namespace/name`) → its labels and owner references, where a test sets them. */
  readonly configFileOwners = new Map<
    string,
    { labels: Record<string, string>; ownerReferences: { apiVersion: string; kind: string; name: string }[] }
  >();
  /** The GPU Operator's ClusterPolicies; undefined: the kind is not served (no operator). */
  clusterPolicies: { name: string; configName?: string; ignored: boolean }[] | undefined = undefined;
  readonly calls: FakeCall[] = [];
  readonly clock: Clock;
  readonly conflictAttempts: number;
  private readonly podMap = new Map<string, StoredPod>();
  private readonly failures = new Map<string, InjectedStatus[]>();
  private rv = 1;

  constructor(options: { clock?: Clock; conflictAttempts?: number } = {}) {
    this.clock = options.clock ?? { now: () => 0, sleep: async () => {} };
    this.conflictAttempts = options.conflictAttempts ?? DEFAULT_CONFLICT_ATTEMPTS;
  }

  nextResourceVersion(): string {
    return String(++this.rv);
  }

  addNode(seed: Partial<NodeInfo> & { name: string }): NodeInfo {
    const node: NodeInfo = {
      labels: {},
      annotations: {},
      taints: [],
      unschedulable: false,
      ready: true,
      allocatable: {},
      ...structuredClone(seed),
      resourceVersion: this.nextResourceVersion(),
    };
    this.nodes.set(node.name, node);
    return node;
  }

  addPod(seed: Partial<PodInfo> & { name: string }): PodInfo {
    const pod: StoredPod = {
      namespace: 'default',
      uid: `uid-${this.rv}`,
      nodeName: undefined,
      phase: 'Running',
      labels: {},
      annotations: {},
      owners: [],
      terminating: false,
      terminationGracePeriodSeconds: 30,
      extendedResources: {},
      ...structuredClone(seed),
    };
    this.podMap.set(podKey(pod), pod);
    this.rv++;
    return pod;
  }

  addPdb(pdb: FakePdb): void {
    this.pdbs.push(pdb);
  }

  /** Pods as they stand now: evicted pods past their grace period are gone. */
  pods(): PodInfo[] {
    const now = this.clock.now();
    for (const [k, p] of this.podMap) if (p.deleteAtMs !== undefined && p.deleteAtMs <= now) this.podMap.delete(k);
    return [...this.podMap.values()].map(({ deleteAtMs: _d, ...p }) => structuredClone(p));
  }

  pod(namespace: string, name: string): StoredPod | undefined {
    this.pods();
    return this.podMap.get(`${namespace}/${name}`);
  }

  /** Starts a pod's termination; it disappears once its grace period has passed on the clock. */
  terminate(pod: StoredPod, gracePeriodSeconds?: number): void {
    if (pod.terminating) return;
    pod.terminating = true;
    pod.deleteAtMs = this.clock.now() + 1000 * (gracePeriodSeconds ?? pod.terminationGracePeriodSeconds ?? 30);
  }

  /** The next `times` calls of `op` answer `status` (as the real adapter would surface it). */
  failNext(op: string, status: InjectedStatus, times = 1): void {
    const queue = this.failures.get(op) ?? [];
    for (let i = 0; i < times; i++) queue.push(status);
    this.failures.set(op, queue);
  }

  record(op: string, args: unknown[]): void {
    this.calls.push({ op, args: structuredClone(args) });
  }

  callsTo(op: string): FakeCall[] {
    return this.calls.filter((c) => c.op === op);
  }

  takeFailure(op: string): InjectedStatus | undefined {
    const queue = this.failures.get(op);
    return queue?.shift();
  }

  /**
   * Consumes the failures injected for `op`. For read-modify-writes (`retriesConflicts`) a 409 is
   * absorbed the way the real adapter's retry absorbs it, up to `conflictAttempts`; `onRetry`
   * runs for each absorbed conflict (the real adapter re-reads and re-applies there).
   */
  guard(op: string, what: string, retriesConflicts: boolean, onRetry?: () => void): void {
    for (let attempt = 1; ; attempt++) {
      const status = this.takeFailure(op);
      if (status === undefined) return;
      if (status === 409 && retriesConflicts) {
        if (attempt >= this.conflictAttempts) {
          throw new ConflictError(`${what}: still conflicting after ${this.conflictAttempts} attempts`, {
            what,
            status: 409,
          });
        }
        onRetry?.();
        continue;
      }
      throw injected(status, what);
    }
  }
}

/** The error the real adapter would throw for this status. */
export function injected(status: InjectedStatus, what: string): AdapterError {
  return fromKubeError(
    { code: status, body: JSON.stringify({ kind: 'Status', code: status, message: `injected ${status}` }) },
    what,
  );
}
