/**
 * The resource table: every type the simulated API server serves, with the facts discovery,
 * routing and error messages need. Adding a plain CRUD type is one row here.
 */
export interface ResourceDef {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  subresources?: string[];
  /** Whether the main endpoint ignores status changes (the status subresource owns them). */
  hasStatus?: boolean;
  /** Served as a converted view of another resource's objects (events.k8s.io Events are core Events). */
  viewOf?: string;
  /** The verbs discovery lists, when not every CRUD verb (a review is only created, never stored). */
  verbs?: string[];
}

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

export const RESOURCES: ResourceDef[] = [
  {
    group: '',
    version: 'v1',
    plural: 'namespaces',
    singular: 'namespace',
    kind: 'Namespace',
    namespaced: false,
    shortNames: ['ns'],
    subresources: ['status'],
    hasStatus: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'nodes',
    singular: 'node',
    kind: 'Node',
    namespaced: false,
    shortNames: ['no'],
    subresources: ['status'],
    hasStatus: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'pods',
    singular: 'pod',
    kind: 'Pod',
    namespaced: true,
    shortNames: ['po'],
    subresources: ['status', 'eviction', 'binding'],
    hasStatus: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'configmaps',
    singular: 'configmap',
    kind: 'ConfigMap',
    namespaced: true,
    shortNames: ['cm'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'events',
    singular: 'event',
    kind: 'Event',
    namespaced: true,
    shortNames: ['ev'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'resourcequotas',
    singular: 'resourcequota',
    kind: 'ResourceQuota',
    namespaced: true,
    shortNames: ['quota'],
    subresources: ['status'],
    hasStatus: true,
  },
  {
    group: '',
    version: 'v1',
    plural: 'limitranges',
    singular: 'limitrange',
    kind: 'LimitRange',
    namespaced: true,
    shortNames: ['limits'],
  },
  {
    group: 'policy',
    version: 'v1',
    plural: 'poddisruptionbudgets',
    singular: 'poddisruptionbudget',
    kind: 'PodDisruptionBudget',
    namespaced: true,
    shortNames: ['pdb'],
    subresources: ['status'],
    hasStatus: true,
  },
  { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', singular: 'lease', kind: 'Lease', namespaced: true },
  // PriorityClass (kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/#priorityclass):
  // cluster-scoped, short name pc; its `value`, `globalDefault`, `preemptionPolicy` sit at the top level.
  {
    group: 'scheduling.k8s.io',
    version: 'v1',
    plural: 'priorityclasses',
    singular: 'priorityclass',
    kind: 'PriorityClass',
    namespaced: false,
    shortNames: ['pc'],
  },
  {
    group: 'events.k8s.io',
    version: 'v1',
    plural: 'events',
    singular: 'event',
    kind: 'Event',
    namespaced: true,
    viewOf: 'events',
  },
  {
    group: 'apps',
    version: 'v1',
    plural: 'daemonsets',
    singular: 'daemonset',
    kind: 'DaemonSet',
    namespaced: true,
    shortNames: ['ds'],
    subresources: ['status'],
    hasStatus: true,
  },
  // Identity and RBAC: what `kubectl apply -k infra/k8s` creates, and what `auth can-i` is answered from.
  {
    group: '',
    version: 'v1',
    plural: 'serviceaccounts',
    singular: 'serviceaccount',
    kind: 'ServiceAccount',
    namespaced: true,
    shortNames: ['sa'],
  },
  {
    group: '',
    version: 'v1',
    plural: 'secrets',
    singular: 'secret',
    kind: 'Secret',
    namespaced: true,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'roles',
    singular: 'role',
    kind: 'Role',
    namespaced: true,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'rolebindings',
    singular: 'rolebinding',
    kind: 'RoleBinding',
    namespaced: true,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterroles',
    singular: 'clusterrole',
    kind: 'ClusterRole',
    namespaced: false,
  },
  {
    group: 'rbac.authorization.k8s.io',
    version: 'v1',
    plural: 'clusterrolebindings',
    singular: 'clusterrolebinding',
    kind: 'ClusterRoleBinding',
    namespaced: false,
  },
  // Answered from the RBAC objects above (access-review.ts), never stored.
  {
    group: 'authorization.k8s.io',
    version: 'v1',
    plural: 'selfsubjectaccessreviews',
    singular: 'selfsubjectaccessreview',
    kind: 'SelfSubjectAccessReview',
    namespaced: false,
    verbs: ['create'],
  },
  // Volcano's PodGroup CRD (volcano.sh/en/docs/podgroup/): gangs the simulated Volcano binds whole (volcano.ts).
  {
    group: 'scheduling.volcano.sh',
    version: 'v1beta1',
    plural: 'podgroups',
    singular: 'podgroup',
    kind: 'PodGroup',
    namespaced: true,
    shortNames: ['pg', 'podgroup-v1beta1'],
  },
  // DRA (resource.k8s.io), as Kubernetes 1.37 serves it: a node's devices, and taints on them.
  {
    group: 'resource.k8s.io',
    version: 'v1',
    plural: 'resourceslices',
    singular: 'resourceslice',
    kind: 'ResourceSlice',
    namespaced: false,
  },
  // A pod's request for devices, the template a pod's own claim is made from, and the classes the
  // requests name (kubernetes.io/docs/reference/kubernetes-api/workload-resources/resource-claim-v1).
  {
    group: 'resource.k8s.io',
    version: 'v1',
    plural: 'resourceclaims',
    singular: 'resourceclaim',
    kind: 'ResourceClaim',
    namespaced: true,
  },
  {
    group: 'resource.k8s.io',
    version: 'v1',
    plural: 'resourceclaimtemplates',
    singular: 'resourceclaimtemplate',
    kind: 'ResourceClaimTemplate',
    namespaced: true,
  },
  {
    group: 'resource.k8s.io',
    version: 'v1',
    plural: 'deviceclasses',
    singular: 'deviceclass',
    kind: 'DeviceClass',
    namespaced: false,
  },
  {
    group: 'resource.k8s.io',
    version: 'v1',
    plural: 'devicetaintrules',
    singular: 'devicetaintrule',
    kind: 'DeviceTaintRule',
    namespaced: false,
  },
  // The GPU Operator's CRD (NVIDIA/gpu-operator config/crd/bases/nvidia.com_clusterpolicies.yaml):
  // cluster-scoped, short name none; served where the fleet runs the operator (../gpu-operator.ts).
  {
    group: 'nvidia.com',
    version: 'v1',
    plural: 'clusterpolicies',
    singular: 'clusterpolicy',
    kind: 'ClusterPolicy',
    namespaced: false,
  },
];

export function verbsFor(r: ResourceDef): string[] {
  return r.verbs ?? VERBS;
}

/** `pods`, `poddisruptionbudgets.policy`: the name the real server uses in messages and store keys. */
export function qualifiedName(r: ResourceDef): string {
  return r.group === '' ? r.plural : `${r.plural}.${r.group}`;
}

export function apiVersionOf(r: ResourceDef): string {
  return r.group === '' ? r.version : `${r.group}/${r.version}`;
}

const byPath = new Map<string, ResourceDef>(RESOURCES.map((r) => [`${apiVersionOf(r)}/${r.plural}`, r]));
// The first row of a kind wins: a view (events.k8s.io Event) never shadows the stored kind.
const byKind = new Map<string, ResourceDef>(RESOURCES.filter((r) => r.viewOf === undefined).map((r) => [r.kind, r]));

export function findResource(apiVersion: string, plural: string): ResourceDef | undefined {
  return byPath.get(`${apiVersion}/${plural}`);
}

export function resourceForKind(kind: string): ResourceDef | undefined {
  return byKind.get(kind);
}

export function resource(plural: string): ResourceDef {
  const r = RESOURCES.find((x) => x.plural === plural);
  if (!r) throw new Error(`unknown resource ${plural}`);
  return r;
}

export function groupVersions(): { group: string; version: string }[] {
  const seen = new Map<string, { group: string; version: string }>();
  for (const r of RESOURCES)
    if (r.group !== '') seen.set(`${r.group}/${r.version}`, { group: r.group, version: r.version });
  return [...seen.values()];
}
