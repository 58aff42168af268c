/**
 * A node whose GPUs a DRA driver offers (issue #28): it advertises no device-plugin GPU resource at all,
 * by design, and that is not a dead plugin.
 *
 * How a real node shows it: the Node has no `nvidia.com/gpu` (nor any other device-plugin GPU resource) in
 * capacity, because no device plugin registered one with the kubelet; its GPUs are devices of a
 * ResourceSlice that the DRA driver's kubelet plugin publishes with `spec.nodeName` = the node
 * (kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/ "ResourceSlice";
 * kubernetes.io/docs/reference/kubernetes-api/workload-resources/resource-slice-v1/: "NodeName identifies
 * the node which provides the resources in this pool. A field selector can be used to list only
 * ResourceSlice objects belonging to a certain node"). NVIDIA's DRA driver for GPUs publishes its GPUs
 * under driver `gpu.nvidia.com` (NVIDIA/k8s-dra-driver-gpu, now kubernetes-sigs/dra-driver-nvidia-gpu:
 * deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml selects `device.driver ==
 * 'gpu.nvidia.com'`; its `compute-domain.nvidia.com` driver publishes ComputeDomain channels, not GPUs).
 *
 * The kubelet's PodResources API cannot say it: GetAllocatableResources lists device-plugin devices only
 * (kubernetes/kubelet pkg/apis/podresources/v1/api.proto AllocatableResourcesResponse: devices, cpu_ids,
 * memory), so it is empty on a DRA node and on a node whose plugin never started alike.
 *
 * So the rule: nothing device-plugin in capacity AND a ResourceSlice of this node from a GPU DRA driver
 * that lists at least one device. A slice that cannot be read is unknown, and unknown is not DRA: the
 * mismatch stands (a node whose plugin never started also has no GPU resource in capacity).
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { Resource as ExpectedResource } from './plugin-advertised.ts';

/** The DRA drivers whose ResourceSlice devices are GPUs (NVIDIA's DRA driver for GPUs). */
export const GPU_DRA_DRIVERS: readonly string[] = ['gpu.nvidia.com'];

/** One ResourceSlice of this node, as the check reads it. */
export interface SliceView {
  driver: string;
  devices: number;
}

/** Whether the node is DRA-managed: no device-plugin GPU resource in capacity, a GPU DRA driver's devices. */
export function draManaged(
  resources: readonly ExpectedResource[],
  slices: readonly SliceView[],
  drivers: readonly string[] = GPU_DRA_DRIVERS,
): boolean {
  if (resources.some((r) => r.capacity > 0)) return false; // a device plugin serves here: check it
  return slices.some((s) => drivers.includes(s.driver) && s.devices > 0);
}

/** Whether the rule can change the verdict: only while the node advertises no device-plugin GPU at all. */
export function advertisesNothing(resources: readonly ExpectedResource[]): boolean {
  return resources.every((r) => r.capacity === 0);
}

/**
 * resource.k8s.io's versions, newest first: ResourceSlice is served at `v1beta1` from Kubernetes 1.32,
 * `v1beta2` from 1.33, `v1` from 1.34 (the betas only where --runtime-config turns them on later:
 * kubernetes/kubernetes pkg/features/kube_features.go), so the served one is found by asking.
 */
const VERSIONS = ['v1', 'v1beta2', 'v1beta1'] as const;

interface SliceList {
  items?: { spec?: { driver?: string; nodeName?: string; devices?: unknown[] } }[];
}

const status = (err: unknown): number | undefined => {
  const e = err as { code?: unknown; statusCode?: unknown } | null;
  return typeof e?.code === 'number' ? e.code : typeof e?.statusCode === 'number' ? e.statusCode : undefined;
};

/**
 * This node's ResourceSlices through the API (RBAC: resource.k8s.io resourceslices list, the actuator's
 * ClusterRole), at the first version the cluster serves (a 404 on a list: not served at that version).
 * Throws when none is served or the list is refused: the caller reads that as unknown.
 */
export function kubeNodeSlices(
  custom: Pick<CustomObjectsApi, 'listClusterCustomObject'>,
  node: string,
): () => Promise<SliceView[]> {
  let found: string | undefined;
  return async () => {
    const order = found ? [found, ...VERSIONS.filter((v) => v !== found)] : [...VERSIONS];
    for (const version of order) {
      try {
        const list = (await custom.listClusterCustomObject({
          group: 'resource.k8s.io',
          version,
          plural: 'resourceslices',
          fieldSelector: `spec.nodeName=${node}`,
        })) as SliceList;
        found = version;
        return (list.items ?? [])
          .filter((s) => s.spec?.nodeName === node)
          .map((s) => ({ driver: s.spec?.driver ?? '', devices: s.spec?.devices?.length ?? 0 }));
      } catch (err) {
        if (status(err) !== 404) throw err;
      }
    }
    found = undefined;
    throw new Error(`the cluster serves resourceslices.resource.k8s.io at none of ${VERSIONS.join(', ')}`);
  };
}
