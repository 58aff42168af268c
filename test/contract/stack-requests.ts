import { CARD_FENCE_NAMESPACE } from '../../functions/adapters/kube/kube-card-fence-ops.ts';
import { DEFAULT_MIG_PARTED_CONFIG } from '../../functions/adapters/kube/kube-config-file.ts';
import { STATE_CONFIGMAP } from '../../functions/adapters/kube/kube-state-store.ts';

/**
 * The Kubernetes requests gpu-reflex's functions make, with the namespace and object each one names,
 * as their adapters make them (functions/adapters/kube/*: the `// RBAC:` comments give the verbs, the
 * constants below the places). test/contract/rbac.test.ts puts them to the simulated API server's RBAC
 * over the shipped manifests; test/e2e/local-identities.test.ts holds the stack's audited writes and its
 * reads to them (a read the list lacks fails there, so "nothing granted that no row uses" rests on a whole list).
 * `namespace` undefined: cluster-scoped, or across namespaces; `name` undefined: any name (or a list).
 */
export interface StackRequest {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

/** Namespace of gpu-reflex's own objects (functions/config.ts GPU_REFLEX_NAMESPACE's default). */
export const OWN_NAMESPACE = 'gpu-reflex';
/**
 * A tenant's namespace: evictions, quotas, limit ranges and pods' Events are written wherever the fleet's
 * pods run, so a row in TENANT stands for any namespace but the ones named here.
 */
export const TENANT = 'ml-infer';

/**
 * Whether an audited write (kube-apiserver's objectRef: resource, subresource, namespace) is one of the
 * stack's requests: same verb and resource, and the same namespace unless the row's is a tenant's (any
 * namespace gpu-reflex does not name) or the row is cluster-wide.
 */
export function coveredBy(
  rows: readonly StackRequest[],
  a: { verb: string; resource: string; subresource?: string; namespace?: string },
): boolean {
  const named = new Set([OWN_NAMESPACE, MIG_NAMESPACE, CARD_FENCE_NAMESPACE, 'default']);
  return rows.some(
    (r) =>
      r.verb === a.verb &&
      r.resource === a.resource &&
      r.subresource === a.subresource &&
      (r.namespace === undefined ||
        r.namespace === a.namespace ||
        (r.namespace === TENANT && a.namespace !== undefined && !named.has(a.namespace))),
  );
}
const MIG = DEFAULT_MIG_PARTED_CONFIG;
const MIG_NAMESPACE = MIG.namespace;

const core = (verb: string, resource: string, more: Partial<StackRequest> = {}): StackRequest => ({
  verb,
  group: '',
  resource,
  ...more,
});

export const STACK_REQUESTS: readonly StackRequest[] = [
  ...['get', 'list', 'patch'].map((v) => core(v, 'nodes', v === 'list' ? {} : { name: 'gpu-a' })),
  core('patch', 'nodes', { subresource: 'status', name: 'gpu-a' }),
  core('list', 'pods'),
  core('list', 'pods', { namespace: TENANT }),
  core('create', 'pods', { subresource: 'eviction', namespace: TENANT, name: 'llm-serve-0' }),
  ...['get', 'create', 'update', 'delete'].map((v) =>
    core(v, 'resourcequotas', { namespace: TENANT, ...(v === 'create' ? {} : { name: 'gpu-reflex' }) }),
  ),
  core('list', 'resourcequotas'),
  ...['get', 'create', 'update'].map((v) =>
    core(v, 'limitranges', { namespace: TENANT, ...(v === 'create' ? {} : { name: 'gpu-reflex' }) }),
  ),
  core('list', 'limitranges'),
  // The state store: gpu-reflex-state and its shards, in gpu-reflex's namespace.
  ...['get', 'update'].flatMap((v) => [
    core(v, 'configmaps', { namespace: OWN_NAMESPACE, name: STATE_CONFIGMAP }),
    core(v, 'configmaps', { namespace: OWN_NAMESPACE, name: `${STATE_CONFIGMAP}-remediate` }),
  ]),
  core('create', 'configmaps', { namespace: OWN_NAMESPACE }),
  ...['get', 'create', 'update', 'delete'].map((v) => ({
    verb: v,
    group: 'coordination.k8s.io',
    resource: 'leases',
    namespace: OWN_NAMESPACE,
    ...(v === 'create' ? {} : { name: 'remediate-gpu-a' }),
  })),
  // Node Events go to `default`, as the kubelet's do (kube-event-recorder.ts); pods' to their namespace.
  { verb: 'create', group: 'events.k8s.io', resource: 'events', namespace: 'default' },
  { verb: 'create', group: 'events.k8s.io', resource: 'events', namespace: TENANT },
  // gpu-reflex's own mig-parted ConfigMap: created when nobody has (create cannot be narrowed by name).
  core('get', 'configmaps', { namespace: MIG.namespace, name: MIG.name }),
  core('update', 'configmaps', { namespace: MIG.namespace, name: MIG.name }),
  core('create', 'configmaps', { namespace: MIG.namespace }),
  { verb: 'list', group: 'resource.k8s.io', resource: 'resourceslices' },
  ...['list', 'create', 'delete'].map((v) => ({
    verb: v,
    group: 'resource.k8s.io',
    resource: 'devicetaintrules',
    ...(v === 'delete' ? { name: 'gpu-reflex-gpu-a-0' } : {}),
  })),
  { verb: 'list', group: 'nvidia.com', resource: 'clusterpolicies' },
  // A gang's own size (autoscale's kube-gang-ops.ts): Volcano PodGroups and Kueue Workloads, read only.
  { verb: 'list', group: 'scheduling.volcano.sh', resource: 'podgroups' },
  { verb: 'list', group: 'kueue.x-k8s.io', resource: 'workloads' },
];

/** With the ack-cgpu component: ACK's per-node `unhealthy-gpu-<node>` ConfigMaps (kube-card-fence-ops.ts). */
export const CGPU_REQUESTS: readonly StackRequest[] = [
  core('get', 'configmaps', { namespace: CARD_FENCE_NAMESPACE, name: 'unhealthy-gpu-gpu-a' }),
  core('update', 'configmaps', { namespace: CARD_FENCE_NAMESPACE, name: 'unhealthy-gpu-gpu-a' }),
  core('create', 'configmaps', { namespace: CARD_FENCE_NAMESPACE }),
];

/** What the functions' ServiceAccount must be refused, whatever component is on. */
export const REFUSED: readonly StackRequest[] = [
  // The GPU Operator's own mig-parted ConfigMap: it rewrites it on each reconcile (parted-owner.ts).
  core('get', 'configmaps', { namespace: MIG.namespace, name: 'default-mig-parted-config' }),
  core('update', 'configmaps', { namespace: MIG.namespace, name: 'default-mig-parted-config' }),
  core('delete', 'configmaps', { namespace: MIG.namespace, name: MIG.name }),
  core('list', 'configmaps', { namespace: MIG.namespace }),
  // Tenants' ConfigMaps and the cluster's, and anyone's Secrets.
  core('get', 'configmaps', { namespace: TENANT, name: 'app-config' }),
  core('list', 'configmaps'),
  core('get', 'secrets', { namespace: OWN_NAMESPACE, name: 'anything' }),
  core('list', 'secrets'),
  // Node heartbeats and other components' leader elections are not gpu-reflex's leases.
  { verb: 'update', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-node-lease', name: 'gpu-a' },
  { verb: 'get', group: 'coordination.k8s.io', resource: 'leases', namespace: 'kube-system', name: 'kube-scheduler' },
  // Deleting pods is the Eviction API's, which honours PodDisruptionBudgets.
  core('delete', 'pods', { namespace: TENANT, name: 'llm-serve-0' }),
  core('delete', 'nodes', { name: 'gpu-a' }),
  // The state namespace's ConfigMaps may be written, not deleted (state is never dropped wholesale).
  core('delete', 'configmaps', { namespace: OWN_NAMESPACE, name: STATE_CONFIGMAP }),
];
