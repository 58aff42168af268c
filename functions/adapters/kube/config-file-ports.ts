// The ports over other components' objects: mig-manager's config file, the GPU Operator's ClusterPolicies,
// Volcano's and Kueue's gang objects (ports.ts).
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

/** A text file in one key of a ConfigMap another component reads (mig-manager's mig-parted config). */
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
