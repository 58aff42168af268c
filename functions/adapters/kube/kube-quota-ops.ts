/**
 * QuotaOps over the Kubernetes API: ResourceQuotas and LimitRanges per team namespace.
 *
 * Apply is create-or-replace with optimistic concurrency, not server-side apply. gpu-reflex owns
 * these objects whole (it writes every entry of `spec.hard`), so "make it exactly this" is the
 * meaning we want. SSA's per-field ownership pays off when several managers share an object; here
 * it would only add managedFields bookkeeping that every API server we run against (the
 * simulated one included) must implement exactly for the result to be right.
 * A replace carries the resourceVersion we read, so a concurrent edit gives 409 and we re-read
 * and re-decide instead of overwriting it blind.
 */
import type { V1LimitRange, V1ResourceQuota } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { ConflictError, NotFoundError, fromKubeError } from '../errors.ts';
import { toLimitRangeInfo, toQuotaInfo } from './convert.ts';
import type { KubeOpsOptions } from './kube-node-ops.ts';
import { listAll } from './list-all.ts';
import type { ApplyResult, LimitItem, LimitRangeInfo, QuotaInfo } from './model.ts';
import type { LimitRangeSpec, QuotaOps, QuotaSpec } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';
import { sameJson } from './same-json.ts';

/** True when every wanted label is present with that value (other labels may exist). */
function hasLabels(current: Record<string, string>, wanted: Record<string, string> | undefined): boolean {
  return Object.entries(wanted ?? {}).every(([k, v]) => current[k] === v);
}

function toSdkLimits(items: LimitItem[]): NonNullable<NonNullable<V1LimitRange['spec']>['limits']> {
  return items.map(({ default: d, ...rest }) => (d === undefined ? rest : { ...rest, _default: d }));
}

export class KubeQuotaOps implements QuotaOps {
  private readonly pageSize: number;
  private readonly attempts: number;

  constructor(
    private readonly core: CoreApi,
    options: KubeOpsOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 500;
    this.attempts = options.conflictAttempts ?? DEFAULT_CONFLICT_ATTEMPTS;
  }

  // RBAC: resourcequotas get
  async getQuota(namespace: string, name: string): Promise<QuotaInfo | undefined> {
    const q = await this.readQuota(namespace, name);
    return q && toQuotaInfo(q);
  }

  // RBAC: resourcequotas list
  async listQuotas(namespace?: string): Promise<QuotaInfo[]> {
    try {
      const items = await listAll((cont) =>
        namespace === undefined
          ? this.core.listResourceQuotaForAllNamespaces({ limit: this.pageSize, _continue: cont })
          : this.core.listNamespacedResourceQuota({ namespace, limit: this.pageSize, _continue: cont }),
      );
      return items.map(toQuotaInfo);
    } catch (err) {
      throw fromKubeError(err, `listing resourcequotas${namespace ? ` in ${namespace}` : ''}`);
    }
  }

  // RBAC: resourcequotas get, create, update
  async applyQuota(namespace: string, name: string, spec: QuotaSpec): Promise<ApplyResult> {
    const what = `applying resourcequota ${namespace}/${name}`;
    const r = await retryOnConflict(what, this.attempts, async (): Promise<ApplyResult | 'stale'> => {
      const current = await this.readQuota(namespace, name);
      // The replace below carries the version read here: checked against the caller's, the two are one decision.
      if (spec.basis !== undefined && !sameJson(current ? (current.spec?.hard ?? {}) : null, spec.basis))
        return 'stale';
      if (current === undefined) {
        await this.core.createNamespacedResourceQuota({
          namespace,
          body: {
            metadata: {
              name,
              namespace,
              labels: spec.labels,
              ...(spec.annotations ? { annotations: spec.annotations } : {}),
            },
            spec: { hard: spec.hard },
          },
        });
        return 'created';
      }
      const labels = current.metadata?.labels ?? {};
      const annotations = current.metadata?.annotations ?? {};
      if (
        sameJson(current.spec?.hard ?? {}, spec.hard) &&
        hasLabels(labels, spec.labels) &&
        hasLabels(annotations, spec.annotations)
      )
        return 'unchanged';
      const body: V1ResourceQuota = {
        ...current,
        metadata: {
          ...current.metadata,
          labels: { ...labels, ...spec.labels },
          ...(spec.annotations ? { annotations: { ...annotations, ...spec.annotations } } : {}),
        },
        spec: { ...current.spec, hard: spec.hard },
      };
      await this.core.replaceNamespacedResourceQuota({ namespace, name, body });
      return 'updated';
    });
    if (r === 'stale') throw new ConflictError(`${what}: its hard values changed since they were read`);
    return r;
  }

  // RBAC: resourcequotas delete
  async deleteQuota(namespace: string, name: string, resourceVersion: string): Promise<'deleted' | 'absent'> {
    try {
      await this.core.deleteNamespacedResourceQuota({ namespace, name, body: { preconditions: { resourceVersion } } });
      return 'deleted';
    } catch (err) {
      const mapped = fromKubeError(err, `deleting resourcequota ${namespace}/${name}`);
      if (mapped instanceof NotFoundError) return 'absent';
      throw mapped;
    }
  }

  // RBAC: limitranges get
  async getLimitRange(namespace: string, name: string): Promise<LimitRangeInfo | undefined> {
    const l = await this.readLimitRange(namespace, name);
    return l && toLimitRangeInfo(l);
  }

  // RBAC: limitranges list
  async listLimitRanges(namespace?: string): Promise<LimitRangeInfo[]> {
    try {
      const items = await listAll((cont) =>
        namespace === undefined
          ? this.core.listLimitRangeForAllNamespaces({ limit: this.pageSize, _continue: cont })
          : this.core.listNamespacedLimitRange({ namespace, limit: this.pageSize, _continue: cont }),
      );
      return items.map(toLimitRangeInfo);
    } catch (err) {
      throw fromKubeError(err, `listing limitranges${namespace ? ` in ${namespace}` : ''}`);
    }
  }

  // RBAC: limitranges get, create, update
  applyLimitRange(namespace: string, name: string, spec: LimitRangeSpec): Promise<ApplyResult> {
    return retryOnConflict(`applying limitrange ${namespace}/${name}`, this.attempts, async () => {
      const current = await this.readLimitRange(namespace, name);
      const limits = toSdkLimits(spec.limits);
      if (current === undefined) {
        await this.core.createNamespacedLimitRange({
          namespace,
          body: { metadata: { name, namespace, labels: spec.labels }, spec: { limits } },
        });
        return 'created';
      }
      const labels = current.metadata?.labels ?? {};
      if (sameJson(toLimitRangeInfo(current).limits, spec.limits) && hasLabels(labels, spec.labels)) return 'unchanged';
      const body: V1LimitRange = {
        ...current,
        metadata: { ...current.metadata, labels: { ...labels, ...spec.labels } },
        spec: { limits },
      };
      await this.core.replaceNamespacedLimitRange({ namespace, name, body });
      return 'updated';
    });
  }

  private async readQuota(namespace: string, name: string): Promise<V1ResourceQuota | undefined> {
    try {
      return await this.core.readNamespacedResourceQuota({ namespace, name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading resourcequota ${namespace}/${name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }

  private async readLimitRange(namespace: string, name: string): Promise<V1LimitRange | undefined> {
    try {
      return await this.core.readNamespacedLimitRange({ namespace, name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading limitrange ${namespace}/${name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }
}
