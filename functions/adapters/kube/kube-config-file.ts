/**
 * A text file kept in one key of a ConfigMap that another component reads (NVIDIA mig-manager's
 * mig-parted config: gpu-reflex's own `gpu-reflex-mig-parted-config`, key `config.yaml`, in the GPU
 * Operator's namespace, named in the ClusterPolicy's `spec.migManager.config.name`). Updates are
 * read → change → replace with the resourceVersion; a 409 re-reads and applies the change again,
 * so a concurrent writer's edit is never lost. The ConfigMap is created when absent (labelled as
 * ours).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { CoreApi, CustomApi } from './api-methods.ts';
import { NotFoundError, fromKubeError } from '../errors.ts';
import { listAll, type Page } from './list-all.ts';
import type { ClusterPolicyMigConfig, ConfigFileOps, ConfigMapOwnership } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';

export interface ConfigFileRef {
  namespace: string;
  name: string;
  key: string;
}

/**
 * gpu-reflex's own mig-parted ConfigMap. Not the GPU Operator's `default-mig-parted-config`: the
 * operator owns that one and rewrites it on every ClusterPolicy reconcile (NVIDIA/gpu-operator
 * controllers/object_controls.go createConfigMap). mig-manager reads this one once the ClusterPolicy's
 * `spec.migManager.config.name` names it (docs/mig.md "The mig-parted ConfigMap").
 */
export const DEFAULT_MIG_PARTED_CONFIG: ConfigFileRef = {
  namespace: 'gpu-operator',
  name: 'gpu-reflex-mig-parted-config',
  key: 'config.yaml',
};

/** The GPU Operator's ClusterPolicy as far as read here (NVIDIA/gpu-operator api/nvidia/v1 ClusterPolicySpec). */
interface ClusterPolicyObject {
  metadata?: { name?: string };
  spec?: { migManager?: { config?: { name?: string } } };
  status?: { state?: string };
}

export class KubeConfigFile implements ConfigFileOps {
  constructor(
    private readonly core: CoreApi,
    readonly ref: ConfigFileRef,
    private readonly attempts = DEFAULT_CONFLICT_ATTEMPTS,
    /** For the ClusterPolicies; absent: read as a cluster that serves none. */
    private readonly custom?: CustomApi,
  ) {}

  // RBAC: nvidia.com clusterpolicies list
  async clusterPolicies(): Promise<readonly ClusterPolicyMigConfig[] | undefined> {
    const custom = this.custom;
    if (!custom) return undefined;
    try {
      const items = await listAll<ClusterPolicyObject>(
        async (cont) =>
          (await custom.listClusterCustomObject({
            group: 'nvidia.com',
            version: 'v1',
            plural: 'clusterpolicies',
            ...(cont ? { _continue: cont } : {}),
          })) as Page<ClusterPolicyObject>,
      );
      return items.map((p) => ({
        name: p.metadata?.name ?? '',
        ...(p.spec?.migManager?.config?.name ? { configName: p.spec.migManager.config.name } : {}),
        ignored: p.status?.state === 'ignored',
      }));
    } catch (err) {
      const mapped = fromKubeError(err, 'listing clusterpolicies.nvidia.com');
      // Not served: no GPU Operator in this cluster (a static mig-manager reads its config by path).
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }

  // In the ConfigMap's namespace (a Role there: infra/k8s/functions-rbac.yaml).
  // RBAC: configmaps get
  async read(): Promise<string | undefined> {
    return (await this.readMap())?.data?.[this.ref.key];
  }

  // RBAC: configmaps get
  async ownership(): Promise<ConfigMapOwnership | undefined> {
    const cm = await this.readMap();
    if (!cm) return undefined;
    return {
      labels: cm.metadata?.labels ?? {},
      ownerReferences: (cm.metadata?.ownerReferences ?? []).map((o) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.name,
        ...(o.controller !== undefined ? { controller: o.controller } : {}),
      })),
    };
  }

  // RBAC: configmaps get, create, update
  async update(fn: (current: string | undefined) => string): Promise<void> {
    const { namespace, name, key } = this.ref;
    await retryOnConflict(`updating configmap ${namespace}/${name} key ${key}`, this.attempts, async () => {
      const cm = await this.readMap();
      const current = cm?.data?.[key];
      const next = fn(current);
      if (next === current) return;
      if (!cm) {
        await this.core.createNamespacedConfigMap({
          namespace,
          body: {
            metadata: { name, namespace, labels: { 'app.kubernetes.io/managed-by': 'gpu-reflex' } },
            data: { [key]: next },
          },
        });
        return;
      }
      const body: V1ConfigMap = { ...cm, data: { ...(cm.data ?? {}), [key]: next } };
      await this.core.replaceNamespacedConfigMap({ namespace, name, body });
    });
  }

  private async readMap(): Promise<V1ConfigMap | undefined> {
    try {
      return await this.core.readNamespacedConfigMap({ namespace: this.ref.namespace, name: this.ref.name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading configmap ${this.ref.namespace}/${this.ref.name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }
}
