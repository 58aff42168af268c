/**
 * The Kubernetes ports: what the functions may do to a cluster, as small interfaces. The real
 * implementations (`Kube*`) sit over `@kubernetes/client-node`; the fakes (`Fake*`, fake.ts) are
 * in-memory and keep the same contracts. Every method is safe to repeat: functions may be
 * delivered twice and retried, so a repeat of a completed call changes nothing.
 *
 * Errors are the hierarchy in ../errors.ts: NotFoundError (404), ConflictError (409, after the
 * built-in retries ran out), ThrottledError (429), ForbiddenError (403: RBAC or quota admission),
 * BadInputError (400/422), TransientError (5xx, network).
 */
import type { Clock } from '../clock.ts';
import type { NodeChange } from './node-change.ts';
import type {
  ApplyResult,
  EvictResult,
  Json,
  LeaseAttempt,
  LeaseState,
  LimitItem,
  LimitRangeInfo,
  NodeInfo,
  NodeMeta,
  PodInfo,
  QuotaInfo,
  Taint,
  TaintEffect,
  NodeCondition,
} from './model.ts';

/**
 * Nodes. Reads follow `continue` until the list is complete. Writes that read-modify-write
 * (taints, labels, annotations) send the resourceVersion they read and re-read on 409, up to the
 * implementation's retry budget; after that they throw ConflictError. A missing node throws
 * NotFoundError. Each write resolves `true` when it changed the node, `false` when it was already so.
 */
export interface NodeOps {
  /** One node by name. */
  get(name: string): Promise<NodeInfo>;
  /** Nodes matching a label selector (e.g. `nvidia.com/gpu.present=true`); all when omitted. */
  list(labelSelector?: string): Promise<NodeInfo[]>;
  /**
   * Like list, but names, labels and annotations only (the API's metadata-only list,
   * PartialObjectMetadataList): a few hundred bytes a node instead of its whole status, for
   * callers that count or classify many nodes (the remediation's pool facts, every invocation).
   */
  listMetadata(labelSelector?: string): Promise<NodeMeta[]>;
  /** Marks the node unschedulable. Idempotent. */
  cordon(name: string): Promise<boolean>;
  /** Makes the node schedulable again. Idempotent. */
  uncordon(name: string): Promise<boolean>;
  /**
   * Adds a taint. A taint with the same key and effect is replaced (its value updated), so
   * repeating the call is a no-op.
   */
  addTaint(name: string, taint: Taint): Promise<boolean>;
  /** Removes taints with this key (and effect, when given). Removing an absent taint is a no-op. */
  removeTaint(name: string, key: string, effect?: TaintEffect): Promise<boolean>;
  /** Merges labels: a string sets, `null` removes, keys not named are kept. */
  setLabels(name: string, labels: Record<string, string | null>): Promise<boolean>;
  /** Merges annotations: a string sets, `null` removes, keys not named are kept. */
  setAnnotations(name: string, annotations: Record<string, string | null>): Promise<boolean>;
  /**
   * Taints, cordon, labels and annotations in one read-modify-write (one patch): what a
   * remediation's node edit does to its node. Same idempotency as the single operations.
   * `basis`: the node as the caller read it under its lease; the patch is computed from it and
   * sent with its resourceVersion, without another read; a node changed since throws
   * ConflictError (the invocation is retried). `blind`: labels and annotations only, patched
   * without a read or a resourceVersion (removing our own annotation needs no basis); it may
   * answer true without knowing whether anything changed.
   */
  update(name: string, change: NodeChange, options?: NodeUpdateOptions): Promise<boolean>;
  /**
   * Sets one condition of the node's status (`nodes/status`, merged by type: the kubelet's and
   * node-problem-detector's conditions stay). False when it already reads so. Idempotent.
   */
  setCondition(name: string, condition: NodeCondition): Promise<boolean>;
}

export interface NodeUpdateOptions {
  basis?: NodeInfo;
  blind?: boolean;
}

export interface PodQuery {
  /** Namespace to list in; all namespaces when omitted. */
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/** What an Event is about: a node, or a pod in its namespace. */
export interface KubeEventRef {
  kind: 'Node' | 'Pod';
  name: string;
  namespace?: string;
  /**
   * Pods: their uid, so `kubectl describe pod` finds the event. Nodes: defaults to the name (the kubelet's convention).
   */
  uid?: string;
}

export interface KubeEventNote {
  type: 'Normal' | 'Warning';
  /** CamelCase, what `kubectl get events` shows: `Cordoned`, `Tainted`, `Evicted`, `DrainStuck`. */
  reason: string;
  /** What was done: `Cordon`, `Taint`, `Evict`, `Drain`. */
  action: string;
  /** One human sentence (at most 1 KiB; longer is cut). */
  note: string;
}

/**
 * Kubernetes Events about gpu-reflex's own actions, recorded after a real change. Never throws:
 * a failure to record is logged and the action it reports stands.
 */
export interface EventRecorder {
  record(regarding: KubeEventRef, event: KubeEventNote): Promise<void>;
}

export interface EvictOptions {
  /**
   * Grace period for the eviction. Omit to honour the pod's own `terminationGracePeriodSeconds`
   * (the default, and what drain does).
   */
  gracePeriodSeconds?: number;
  /**
   * The uid of the pod meant (from the list the plan was made from). Sent as the eviction's
   * precondition: a pod recreated under the same name since (a StatefulSet's replacement, maybe on a
   * healthy node) is not evicted; the answer is `gone`, the pod meant no longer exists.
   */
  uid?: string;
}

/**
 * Pods. Lists follow `continue`. Pods are only ever removed through the Eviction API, so
 * PodDisruptionBudgets always apply: there is deliberately no delete here.
 */
export interface PodOps {
  /** Pods scheduled on a node (field selector `spec.nodeName=<node>`), all namespaces. */
  listOnNode(node: string): Promise<PodInfo[]>;
  /** Pods by namespace and/or selectors. */
  list(query?: PodQuery): Promise<PodInfo[]>;
  /**
   * Asks to evict a pod (POST .../pods/{name}/eviction, policy/v1). `evicted`: accepted, the pod
   * terminates within its grace period. `blocked`: 429, a PodDisruptionBudget forbids it now; try
   * again later. `gone`: 404, nothing to do. Repeating on a terminating pod answers `evicted`.
   * Other failures throw.
   */
  evict(namespace: string, name: string, options?: EvictOptions): Promise<EvictResult>;
}

export interface QuotaSpec {
  hard: Record<string, string>;
  labels?: Record<string, string>;
  /** Set (merged) with the spec; gpu-reflex keeps the previous hard values here for a rollback. */
  annotations?: Record<string, string>;
}

export interface LimitRangeSpec {
  limits: LimitItem[];
  labels?: Record<string, string>;
}

/**
 * ResourceQuotas and LimitRanges. `apply*` makes the object's spec (and the given labels) equal to
 * what is passed: create when absent, replace when different (with the resourceVersion it read,
 * re-reading on 409), nothing when equal. Reads of an absent object resolve `undefined`.
 */
export interface QuotaOps {
  getQuota(namespace: string, name: string): Promise<QuotaInfo | undefined>;
  /** Quotas in a namespace, or in all namespaces when omitted. */
  listQuotas(namespace?: string): Promise<QuotaInfo[]>;
  applyQuota(namespace: string, name: string, spec: QuotaSpec): Promise<ApplyResult>;
  /**
   * Deletes the quota if it is still at `resourceVersion` (a concurrent edit is a 409
   * ConflictError: re-read and re-decide). Idempotent: already gone is 'absent'.
   */
  deleteQuota(namespace: string, name: string, resourceVersion: string): Promise<'deleted' | 'absent'>;
  getLimitRange(namespace: string, name: string): Promise<LimitRangeInfo | undefined>;
  listLimitRanges(namespace?: string): Promise<LimitRangeInfo[]>;
  applyLimitRange(namespace: string, name: string, spec: LimitRangeSpec): Promise<ApplyResult>;
}

/**
 * A small key → JSON store kept in one ConfigMap (`gpu-reflex-state`), for cooldowns and counters
 * that must survive between invocations. `update` is atomic per call: it reads, applies the pure
 * `fn`, and writes with the resourceVersion it read; on 409 it re-reads and re-applies `fn`, so
 * `fn` may run more than once and must not have side effects. Returning `undefined` deletes the
 * key; returning a value equal to the current one writes nothing. The ConfigMap is created on the
 * first write.
 */
export interface StateStore {
  get(key: string): Promise<Json | undefined>;
  getAll(): Promise<Record<string, Json>>;
  update<T extends Json>(key: string, fn: (current: Json | undefined) => T | undefined): Promise<T | undefined>;
  /**
   * A store over its own object (`name`: a DNS label suffix), for keys that many invocations write
   * at once: every write to one object conflicts with every other, so one hot key there serializes
   * all writers of all keys. Optional: stores without it keep everything together.
   */
  shard?(name: string): StateStore;
}

/**
 * coordination.k8s.io/v1 Leases for exclusive work (one rebalance per pool at a time). Expiry is
 * judged with the caller's clock against the lease's `renewTime + leaseDurationSeconds`.
 */
export interface LeaseOps {
  /**
   * Takes the lease when it is free, expired, or already ours (then it renews, idempotent).
   * `acquired: false` when someone else holds it unexpired, or won a race for it.
   */
  tryAcquire(name: string, holder: string, durationS: number, clock: Clock): Promise<LeaseAttempt>;
  /** Extends our holding by its duration. `false` when we no longer hold it (lost or taken over). */
  renew(name: string, holder: string, clock: Clock): Promise<boolean>;
  /**
   * Frees the lease if we hold it (a free lease is no object: it is deleted). `false` (and no change) when we do not.
   * Idempotent.
   */
  release(name: string, holder: string): Promise<boolean>;
  /** The lease as it stands, or undefined when it is free (never created, or released). */
  get(name: string): Promise<LeaseState | undefined>;
}

/** A DRA device: what a DeviceTaintRule's `deviceSelector` names (resource.k8s.io). */
export interface DeviceRef {
  driver: string;
  pool: string;
  device: string;
}

/** A DeviceTaintRule gpu-reflex keeps on one GPU's DRA device while the GPU is held out. */
export interface DeviceTaint extends DeviceRef {
  /** Deterministic per node and GPU, so a redelivered plan asks for the same rule. */
  name: string;
  node: string;
  gpuUuid: string;
  taint: { key: string; value: string; effect: 'NoSchedule' };
}

/**
 * DRA device taints (resource.k8s.io): the GPUs a node's ResourceSlices publish, and the
 * DeviceTaintRules gpu-reflex keeps on them (labelled with the node, so a node's are listed alone).
 */
export interface DeviceTaintOps {
  /** The node's devices of `driver` that carry a GPU UUID attribute, by UUID. */
  devices(node: string, driver: string): Promise<Record<string, DeviceRef>>;
  /** Names of the DeviceTaintRules gpu-reflex keeps for the node. */
  rules(node: string): Promise<string[]>;
  /** Creates the rule; `false` when it already exists. */
  create(rule: DeviceTaint): Promise<boolean>;
  /** Deletes the rule; `false` when it is already gone. */
  remove(name: string): Promise<boolean>;
}

/**
 * ACK's gpushare card fence: ConfigMap `kube-system/unhealthy-gpu-<node>`, key `gpus`, the card
 * indices its scheduler extender leaves out of placement, comma-separated with no spaces
 * (AliyunContainerService/gpushare-scheduler-extender pkg/cache/nodeinfo.go getUnhealthyGPUs: a
 * piece strconv.Atoi refuses, such as " 1", counts as card 0). Other writers' entries and other
 * keys are kept: a change is a read-modify-write under the object's resourceVersion, retried on a
 * conflict (409), never a rewrite of the whole.
 */
export interface CardFenceOps {
  /** The indices the ConfigMap lists now (empty when it does not exist; entries Atoi refuses are left out). */
  listed(node: string): Promise<number[]>;
  /** Lists `add` and unlists `remove`; `false` when it already said so (idempotent). */
  change(node: string, add: readonly number[], remove: readonly number[]): Promise<boolean>;
}

/** A text file in one key of a ConfigMap another component reads (mig-manager's mig-parted config). */
/** Who a ConfigMap belongs to: its labels and owner references (the GPU Operator sets a ClusterPolicy one). */
export interface ConfigMapOwnership {
  labels: Readonly<Record<string, string>>;
  ownerReferences: readonly { apiVersion: string; kind: string; name: string; controller?: boolean }[];
}

/**
 * One GPU Operator ClusterPolicy (nvidia.com/v1, cluster-scoped), as far as mig-manager's config goes:
 * `configName` is its `spec.migManager.config.name` (absent: unset, the operator's own
 * default-mig-parted-config); `ignored` when its `status.state` is `ignored` (the operator acts on one
 * ClusterPolicy and marks the others so: NVIDIA/gpu-operator controllers/clusterpolicy_controller.go).
 */
export interface ClusterPolicyMigConfig {
  name: string;
  configName?: string;
  ignored: boolean;
}

export interface ConfigFileOps {
  /** Which ConfigMap and key. */
  readonly ref: { namespace: string; name: string; key: string };
  /**
   * The cluster's GPU Operator ClusterPolicies; undefined when the cluster does not serve the kind (no
   * GPU Operator: a static mig-manager, configured by path). Read only.
   */
  clusterPolicies(): Promise<readonly ClusterPolicyMigConfig[] | undefined>;
  /** The file's text; undefined when the ConfigMap or the key is absent. */
  read(): Promise<string | undefined>;
  /** The ConfigMap's labels and owner references; undefined when it is absent. Read only. */
  ownership(): Promise<ConfigMapOwnership | undefined>;
  /** Rewrites it with `fn` (a conflicting write re-reads and applies `fn` again); an unchanged text writes nothing. */
  update(fn: (current: string | undefined) => string): Promise<void>;
}

/** A Volcano PodGroup or a Kueue Workload as the pool autoscaler reads it (kube-gang-ops.ts). */
export interface GangObjects {
  podGroups: {
    metadata?: { namespace?: string; name?: string };
    spec?: { minMember?: number; minResources?: Record<string, string | number> };
  }[];
  workloads: {
    metadata?: { namespace?: string; name?: string };
    spec?: { podSets?: { count?: number; minCount?: number }[] };
  }[];
}

/** Volcano PodGroups and Kueue Workloads of every namespace; a kind the cluster does not serve: none. */
export interface GangObjectOps {
  list(): Promise<GangObjects>;
}
