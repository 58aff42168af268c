import type { Clock as SharedClock } from '../../../events/clock.ts';
/**
 * The shapes the simulated cluster stores. Objects are plain JSON as the API server would send
 * them; only the fields the simulation reads are typed, the rest ride along untouched.
 * Stored objects are never mutated in place: every write stores a fresh object, so a reader
 * (a test holding `store.get(...)`, a watch stream) always sees a consistent snapshot.
 */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace?: string;
  generateName?: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  generation?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  finalizers?: string[];
  [k: string]: unknown;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  [k: string]: unknown;
}

export type ResourceList = Record<string, string | number>;

export interface Taint {
  key: string;
  value?: string;
  effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' | string;
  timeAdded?: string;
}

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal' | string;
  value?: string;
  effect?: string;
  tolerationSeconds?: number;
}

export interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt' | string;
  values?: string[];
}

export interface Container {
  name: string;
  image?: string;
  resources?: { requests?: ResourceList; limits?: ResourceList };
  [k: string]: unknown;
}

export interface PodSpec {
  nodeName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: Toleration[];
  containers: Container[];
  initContainers?: Container[];
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: {
        nodeSelectorTerms: { matchExpressions?: NodeSelectorRequirement[]; matchFields?: NodeSelectorRequirement[] }[];
      };
    };
  };
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; emptyDir?: unknown; [k: string]: unknown }[];
  [k: string]: unknown;
}

export interface PodCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  lastTransitionTime?: string;
  reason?: string;
  message?: string;
}

export interface Pod extends KubeObject {
  spec: PodSpec;
  status?: {
    phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
    conditions?: PodCondition[];
    [k: string]: unknown;
  };
}

export interface Node extends KubeObject {
  spec?: { unschedulable?: boolean; taints?: Taint[]; [k: string]: unknown };
  status?: {
    capacity?: ResourceList;
    allocatable?: ResourceList;
    conditions?: { type: string; status: string; [k: string]: unknown }[];
    [k: string]: unknown;
  };
}

export interface LabelSelectorSpec {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** Time is injected (the one clock, events/clock.ts): tests step it, the CLI reads the wall clock. */
export type Clock = Pick<SharedClock, 'now'>;
