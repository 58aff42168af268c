/**
 * PodOps over the Kubernetes API. Eviction goes through the Eviction subresource
 * (policy/v1), never a DELETE, so the API server checks PodDisruptionBudgets for us.
 */
import type { V1Eviction } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { ConflictError, ThrottledError, NotFoundError, fromKubeError, kubeStatusMessage } from '../errors.ts';
import { toPodInfo } from './convert.ts';
import type { KubeOpsOptions } from './kube-node-ops.ts';
import { listAll } from './list-all.ts';
import type { EvictResult, PodInfo } from './model.ts';
import type { EvictOptions, PodOps, PodQuery } from './ports.ts';

export class KubePodOps implements PodOps {
  private readonly pageSize: number;

  /**
   * `events` is accepted and unused: an eviction records no Event per pod (event-notes.ts says
   * why); the applier and drain record one on the node for all of a drain's evictions.
   */
  constructor(
    private readonly core: CoreApi,
    options: Pick<KubeOpsOptions, 'pageSize' | 'events'> = {},
  ) {
    this.pageSize = options.pageSize ?? 500;
  }

  // RBAC: pods list
  listOnNode(node: string): Promise<PodInfo[]> {
    return this.list({ fieldSelector: `spec.nodeName=${node}` });
  }

  // RBAC: pods list
  async list(query: PodQuery = {}): Promise<PodInfo[]> {
    const { namespace, labelSelector, fieldSelector } = query;
    const what = `listing pods${namespace ? ` in ${namespace}` : ''}${fieldSelector ? ` (${fieldSelector})` : ''}`;
    try {
      const pods = await listAll((cont) => {
        const page = { limit: this.pageSize, _continue: cont, labelSelector, fieldSelector };
        return namespace === undefined
          ? this.core.listPodForAllNamespaces(page)
          : this.core.listNamespacedPod({ ...page, namespace });
      });
      return pods.map(toPodInfo);
    } catch (err) {
      throw fromKubeError(err, what);
    }
  }

  // RBAC: pods/eviction create
  async evict(namespace: string, name: string, options: EvictOptions = {}): Promise<EvictResult> {
    const body: V1Eviction = {
      apiVersion: 'policy/v1',
      kind: 'Eviction',
      metadata: { name, namespace },
      // No grace period unless asked: the pod's own terminationGracePeriodSeconds then applies.
      ...(options.gracePeriodSeconds === undefined && options.uid === undefined
        ? {}
        : {
            deleteOptions: {
              ...(options.gracePeriodSeconds === undefined ? {} : { gracePeriodSeconds: options.gracePeriodSeconds }),
              ...(options.uid === undefined ? {} : { preconditions: { uid: options.uid } }),
            },
          }),
    };
    try {
      await this.core.createNamespacedPodEviction({ name, namespace, body });
    } catch (err) {
      const mapped = fromKubeError(err, `evicting pod ${namespace}/${name}`);
      if (mapped instanceof NotFoundError) return { outcome: 'gone' };
      // The uid precondition failed: the name now belongs to another pod; the one meant is gone.
      if (mapped instanceof ConflictError && options.uid !== undefined) return { outcome: 'gone' };
      // 429 on the eviction subresource is the disruption-budget refusal (Status reason
      // TooManyRequests); it is an answer, not a failure, so it is returned, not thrown.
      if (mapped instanceof ThrottledError) {
        const reason = kubeStatusMessage((err as { body?: unknown }).body) ?? 'eviction refused (429)';
        return { outcome: 'blocked', reason };
      }
      throw mapped;
    }
    return { outcome: 'evicted' };
  }
}
