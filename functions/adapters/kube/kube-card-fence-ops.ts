/**
 * CardFenceOps over ConfigMap `kube-system/unhealthy-gpu-<node>` (ports.ts): the one place ACK's
 * gpushare scheduler extender reads which cards of a sharing node to skip
 * (AliyunContainerService/gpushare-scheduler-extender@c0b61411 pkg/cache/nodeinfo.go getUnhealthyGPUs,
 * pkg/cache/configmap.go: namespace kube-system, key `gpus`, comma-separated indices).
 *
 * The ConfigMap is shared: a person or ACK's own tooling may list cards there too. So a change reads
 * the object, adds or removes only the given indices, keeps every other entry (in its order, even
 * ones the extender cannot parse) and every other key, and replaces it under its resourceVersion; a
 * conflicting write (409) reads again. The first writer creates it; two racing creators: the loser
 * gets 409 AlreadyExists and retries as a replace.
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import type { CoreApi } from './api-methods.ts';
import { NotFoundError, fromKubeError } from '../errors.ts';
import type { CardFenceOps } from './ports.ts';
import { DEFAULT_CONFLICT_ATTEMPTS, retryOnConflict } from './retry.ts';

export const CARD_FENCE_NAMESPACE = 'kube-system';

export function cardFenceConfigMap(node: string): string {
  return `unhealthy-gpu-${node}`;
}

/** The entries of `gpus` as written (empty pieces dropped: "" is no entry). */
function entries(cm: V1ConfigMap | undefined): string[] {
  return (cm?.data?.['gpus'] ?? '').split(',').filter((e) => e !== '');
}

/** A card index as Go's strconv.Atoi reads it (the extender's parse); undefined where it refuses. */
function index(entry: string): number | undefined {
  return /^[+-]?\d+$/.test(entry) ? Number(entry) : undefined;
}

export class KubeCardFenceOps implements CardFenceOps {
  constructor(
    private readonly core: CoreApi,
    private readonly attempts = DEFAULT_CONFLICT_ATTEMPTS,
  ) {}

  // RBAC: configmaps get
  async listed(node: string): Promise<number[]> {
    return entries(await this.read(node))
      .map(index)
      .filter((i): i is number => i !== undefined);
  }

  // RBAC: configmaps get, create, update
  async change(node: string, add: readonly number[], remove: readonly number[]): Promise<boolean> {
    const name = cardFenceConfigMap(node);
    return retryOnConflict(`updating configmap ${CARD_FENCE_NAMESPACE}/${name}`, this.attempts, async () => {
      const cm = await this.read(node);
      const before = entries(cm);
      const gone = new Set(remove.filter((r) => !add.includes(r)));
      const kept = before.filter((e) => !gone.has(index(e) ?? -1));
      const have = new Set(kept.map(index));
      const next = [...kept, ...add.filter((a, i) => !have.has(a) && add.indexOf(a) === i).map(String)];
      if (next.length === before.length && next.every((e, i) => e === before[i])) return false;
      // No spaces: the extender's Atoi refuses " 1" and would skip card 0 instead. For the same
      // reason an empty list is no key at all: "" splits into one piece Atoi refuses, card 0 again.
      const { gpus: _old, ...others } = cm?.data ?? {};
      const data = next.length > 0 ? { ...others, gpus: next.join(',') } : others;
      if (cm === undefined) {
        await this.core.createNamespacedConfigMap({
          namespace: CARD_FENCE_NAMESPACE,
          body: {
            metadata: {
              name,
              namespace: CARD_FENCE_NAMESPACE,
              labels: { 'app.kubernetes.io/managed-by': 'gpu-reflex' },
            },
            data,
          },
        });
      } else {
        await this.core.replaceNamespacedConfigMap({ namespace: CARD_FENCE_NAMESPACE, name, body: { ...cm, data } });
      }
      return true;
    });
  }

  private async read(node: string): Promise<V1ConfigMap | undefined> {
    const name = cardFenceConfigMap(node);
    try {
      return await this.core.readNamespacedConfigMap({ namespace: CARD_FENCE_NAMESPACE, name });
    } catch (err) {
      const mapped = fromKubeError(err, `reading configmap ${CARD_FENCE_NAMESPACE}/${name}`);
      if (mapped instanceof NotFoundError) return undefined;
      throw mapped;
    }
  }
}
