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
import type { NodeChange } from './node-change.ts';
import type { EvictResult, NodeInfo, NodeMeta, PodInfo, Taint, TaintEffect, NodeCondition } from './model.ts';

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

export type {
  ClusterPolicyMigConfig,
  ConfigFileOps,
  ConfigMapOwnership,
  GangObjectOps,
  GangObjects,
} from './config-file-ports.ts';
export type { CardFenceOps, DeviceRef, DeviceTaint, DeviceTaintOps } from './fence-ports.ts';
export type { LeaseOps, LimitRangeSpec, QuotaOps, QuotaSpec, StateStore } from './store-ports.ts';
