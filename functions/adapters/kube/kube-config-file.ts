/**
 * A text file kept in one key of a ConfigMap that another component reads (NVIDIA mig-manager's
 * mig-parted config: `default-mig-parted-config`, key `config.yaml`, in the GPU Operator's
 * namespace). Updates are read → change → replace with the resourceVersion; a 409 re-reads and
 * applies the change again, so a concurrent writer's edit is never lost. The ConfigMap is created
 * when absent (labelled as ours).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { NotFoundError, fromKubeError } from '../errors.ts';
import type { ConfigFileOps } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';

export interface ConfigFileRef {
  namespace: string;
  name: string;
  key: string;
}

/** Where NVIDIA's GPU Operator keeps mig-manager's config by default. */
export const DEFAULT_MIG_PARTED_CONFIG: ConfigFileRef = {
  namespace: 'gpu-operator',
  name: 'default-mig-parted-config',
  key: 'config.yaml',
};

export class KubeConfigFile implements ConfigFileOps {
  constructor(
    private readonly core: CoreApi,
    readonly ref: ConfigFileRef,
    private readonly attempts = DEFAULT_CONFLICT_ATTEMPTS,
  ) {}

  // In the ConfigMap's namespace (a Role there: infra/k8s/functions-rbac.yaml).
  // RBAC: configmaps get
  async read(): Promise<string | undefined> {
    return (await this.readMap())?.data?.[this.ref.key];
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
