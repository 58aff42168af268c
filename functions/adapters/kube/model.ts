/**
 * Plain data the Kubernetes ports speak. Decision cores take these, never SDK objects, so they
 * can be built by hand in tests, logged and diffed.
 */

export type TaintEffect = 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';

export interface Taint {
  key: string;
  value?: string;
  effect: TaintEffect;
}

/** A node's identity and metadata only (a metadata-only list): enough to count and classify members. */
export interface NodeMeta {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  taints: Taint[];
  /** True when cordoned (`spec.unschedulable`). */
  unschedulable: boolean;
  /** `Ready` condition: true, false, or undefined when the node reports none. */
  ready: boolean | undefined;
  /** `status.allocatable`, quantities as the API writes them (e.g. `nvidia.com/gpu: "8"`). */
  allocatable: Record<string, string>;
  /** `status.capacity`; a device plugin's unhealthy devices are in it and not in `allocatable`. */
  capacity?: Record<string, string>;
  resourceVersion: string;
  /** `status.conditions` other than Ready, by type (what node-problem-detector and gpu-reflex report). */
  conditions?: Record<string, NodeCondition>;
  /** `status.nodeInfo.bootID`: changes on every boot (how a reboot is seen to have happened). */
  bootId?: string;
  /** `spec.providerID`: on ACK `<region>.<ECS instance id>`. */
  providerId?: string;
  /** `metadata.creationTimestamp` (ISO): a node that joined after a pool grew is its new node. */
  createdAt?: string;
}

/** A Node condition as written through `nodes/status` (node-problem-detector's convention). */
export interface NodeCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export interface OwnerRef {
  kind: string;
  name: string;
  /** `controller: true`: the owner that manages the pod (metav1.GetControllerOf), when set. */
  controller?: boolean;
}

/** A volume of a pod that keeps data on the node (cluster-autoscaler's local storage). */
export interface PodLocalVolume {
  name: string;
  kind: 'hostPath' | 'emptyDir';
  /** emptyDir's `medium` (`Memory`: tmpfs, nothing on the node's disk). */
  medium?: string;
}

export interface PodInfo {
  namespace: string;
  name: string;
  uid: string;
  nodeName: string | undefined;
  /** `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`. */
  phase: string | undefined;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  owners: OwnerRef[];
  /** True once deletion started (`metadata.deletionTimestamp` set): the pod is terminating. */
  terminating: boolean;
  /** `spec.terminationGracePeriodSeconds`; the eviction honours it. */
  terminationGracePeriodSeconds: number | undefined;
  /**
   * Extended resources the pod's containers ask for, summed over containers (limits, else
   * requests), e.g. `{ 'nvidia.com/gpu': 2 }` or `{ 'nvidia.com/mig-1g.10gb': 1 }`.
   */
  extendedResources: Record<string, number>;
  /**
   * How many `spec.resourceClaims` the pod names (DRA): devices it holds through ResourceClaims, which no
   * extended resource counts (a DRA node advertises no `nvidia.com/gpu`; kubernetes.io/docs/concepts/
   * scheduling-eviction/dynamic-resource-allocation/). Absent: none.
   */
  resourceClaims?: number;
  /**
   * What the scheduler reserves for the pod, in base units (cpu in cores, memory in bytes,
   * extended resources in their counts): the containers' requests (a limit stands in for a missing
   * request, as the API server defaults it), or the largest init container's when that is more,
   * plus `spec.overhead`.
   */
  requests?: Record<string, number>;
  /** `spec.nodeSelector` (where a pending pod may land), when it has one. */
  nodeSelector?: Record<string, string>;
  /** `spec.tolerations`, when any. */
  tolerations?: PodToleration[];
  /** requiredDuringSchedulingIgnoredDuringExecution node selector terms (any one term must hold), when any. */
  requiredNodeTerms?: NodeSelectorTermInfo[];
  /** `spec.priority` (resolved from its PriorityClass by admission), when set. */
  priority?: number;
  /** `spec.priorityClassName`, when set. */
  priorityClassName?: string;
  /** `metadata.creationTimestamp` (ISO), when the API gave one: how long a pending pod has waited. */
  createdAt?: string;
  /**
   * A pod that ended (`Succeeded`/`Failed`): the latest `state.terminated.finishedAt` of its containers
   * (ISO; Kubernetes PodStatus, ContainerStateTerminated), when the kubelet reported one.
   */
  finishedAt?: string;
  /** The `PodScheduled` condition, when the pod has one (`False`/`Unschedulable`: the scheduler found no node). */
  scheduled?: { status: string; reason?: string };
  /** `spec.schedulingGates` names (Kueue's, for one), when any: the scheduler does not try the pod. */
  schedulingGates?: string[];
  /**
   * Required pod anti-affinity terms on `kubernetes.io/hostname`, when any: no pod they select may
   * share the pod's node (autoscale/anti-affinity.ts).
   */
  hostnameAntiAffinity?: PodSelectorTerm[];
  /** `status.nominatedNodeName`: the scheduler preempted room for the pod there. */
  nominatedNodeName?: string;
  /** hostPath and emptyDir volumes, when any. */
  localVolumes?: PodLocalVolume[];
}

export interface PodToleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

/** One node selector term: every requirement holds; `matchFields` match node fields (only `metadata.name`). */
export interface NodeSelectorTermInfo {
  matchExpressions: NodeSelectorExpression[];
  matchFields?: NodeSelectorExpression[];
}

export interface NodeSelectorExpression {
  key: string;
  /** As the pod writes it: an operator Kubernetes does not know is kept too, and holds on no node. */
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}

/**
 * Extended resources that mean "this pod uses a GPU" (seed notes' resource table). ACK's GPU sharing
 * asks for `aliyun.com/gpu-mem` (GiB), with `aliyun.com/gpu-count` (cards) and
 * `aliyun.com/gpu-core.percentage` beside it (AliyunContainerService/gpushare-scheduler-extender
 * pkg/utils/const.go; ACK cGPU docs): each alone is a GPU pod.
 */
const GPU_RESOURCE = new RegExp(
  '^(nvidia\\.com/(gpu|gpu\\.shared|mig-.+|vgpu)|aliyun\\.com/gpu-(mem|count|core\\.percentage)' +
    '|amd\\.com/gpu|gpu\\.intel\\.com/.+)$',
);

/** True when the pod asks for any GPU resource: whole GPUs, MIG instances, shared GPU memory… */
/** A pod affinity term's selection: `labelSelector` in `namespaces` (empty: the pod's own). */
export interface PodSelectorTerm {
  namespaces?: string[];
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export function requestsGpu(pod: Pick<PodInfo, 'extendedResources'>): boolean {
  return Object.entries(pod.extendedResources).some(([k, v]) => v > 0 && GPU_RESOURCE.test(k));
}

/**
 * The pod holds devices: a GPU extended resource, or any DRA ResourceClaim (which may be a GPU: on a GPU fleet a
 * claim is not taken for nothing). For what must never be taken for idle — a node running such a pod is busy.
 */
export function holdsDevices(pod: Pick<PodInfo, 'extendedResources' | 'resourceClaims'>): boolean {
  return requestsGpu(pod) || (pod.resourceClaims ?? 0) > 0;
}

/** `namespace/name`, the key pods are reported by. */
export function podKey(pod: Pick<PodInfo, 'namespace' | 'name'>): string {
  return `${pod.namespace}/${pod.name}`;
}

/** Annotation the kubelet puts on mirror pods of static manifests; they cannot be evicted. */
export const MIRROR_POD_ANNOTATION = 'kubernetes.io/config.mirror';

export type EvictResult =
  | { outcome: 'evicted' }
  /** 404: the pod no longer exists; the eviction's goal is met. */
  | { outcome: 'gone' }
  /** 429: a PodDisruptionBudget (or the server) refused for now; `reason` is the server's message. */
  | { outcome: 'blocked'; reason: string };

export interface QuotaInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  hard: Record<string, string>;
  used: Record<string, string>;
  resourceVersion: string;
}

/** One `spec.limits` entry of a LimitRange. */
export interface LimitItem {
  type: string;
  default?: Record<string, string>;
  defaultRequest?: Record<string, string>;
  max?: Record<string, string>;
  min?: Record<string, string>;
  maxLimitRequestRatio?: Record<string, string>;
}

export interface LimitRangeInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  limits: LimitItem[];
  resourceVersion: string;
}

export type ApplyResult = 'created' | 'updated' | 'unchanged';

/** JSON values the state ConfigMap holds (each key's value is stored JSON-encoded). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface LeaseState {
  name: string;
  /** Current holder, or undefined when free (released or never held). */
  holder: string | undefined;
  durationS: number;
  /** Epoch ms when the current holding ends unless renewed; 0 when free. */
  expiresAtMs: number;
}

export interface LeaseAttempt {
  acquired: boolean;
  /** The lease as it stands after the attempt (who holds it, until when). */
  lease: LeaseState;
}
