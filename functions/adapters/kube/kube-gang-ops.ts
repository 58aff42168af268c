/**
 * The gang objects the pool autoscaler sizes a gang by (functions/autoscale/demand.ts, issue #34):
 * Volcano's PodGroups (scheduling.volcano.sh/v1beta1, volcano.sh/en/docs/podgroup/) and Kueue's
 * Workloads (kueue.x-k8s.io/v1beta1, kueue.sigs.k8s.io/docs/concepts/workload/), every namespace,
 * through the generic custom-objects client. A kind the cluster does not serve (its CRD is not
 * installed: the list is answered 404) has no objects; any other failure is thrown.
 */
import type { CustomApi } from './api-methods.ts';
import { NotFoundError, fromKubeError } from '../errors.ts';
import { listAll, type Page } from './list-all.ts';
import type { GangObjectOps, GangObjects } from './ports.ts';

export class KubeGangOps implements GangObjectOps {
  constructor(
    private readonly custom: CustomApi,
    private readonly pageSize = 500,
  ) {}

  // RBAC: kueue.x-k8s.io workloads list
  // RBAC: scheduling.volcano.sh podgroups list
  async list(): Promise<GangObjects> {
    const [podGroups, workloads] = await Promise.all([
      this.served<GangObjects['podGroups'][number]>('scheduling.volcano.sh', 'v1beta1', 'podgroups'),
      this.served<GangObjects['workloads'][number]>('kueue.x-k8s.io', 'v1beta1', 'workloads'),
    ]);
    return { podGroups, workloads };
  }

  private async served<T>(group: string, version: string, plural: string): Promise<T[]> {
    try {
      return await listAll<T>(async (cont) => {
        try {
          const page = (await this.custom.listClusterCustomObject({
            group,
            version,
            plural,
            limit: this.pageSize,
            ...(cont ? { _continue: cont } : {}),
          })) as { items: T[]; metadata?: { continue?: string; _continue?: string } };
          // The custom-objects client hands back the JSON as served: `metadata.continue`.
          const next = page.metadata?.continue ?? page.metadata?._continue;
          return { items: page.items, ...(next ? { metadata: { _continue: next } } : {}) } satisfies Page<T>;
        } catch (err) {
          throw fromKubeError(err, `listing ${plural}.${group}`);
        }
      });
    } catch (err) {
      if (err instanceof NotFoundError) return [];
      throw err;
    }
  }
}
