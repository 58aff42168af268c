import { isTerminal, podLimits, podRequests } from './pods.ts';
import { formatQuantity, parseQuantity } from './quantity.ts';
import type { KubeObject, Pod, ResourceList } from './types.ts';

/**
 * ResourceQuota for pods: `status.used` computed from the pods in the namespace, and the
 * admission check the real quota plugin makes on pod create, with its exact message shape.
 */
interface Quota extends KubeObject {
  spec?: { hard?: ResourceList };
}

/** How much of quota key `key` one pod uses, or undefined when the key is not about pods. */
function podUsage(key: string, req: Map<string, number>, lim: Map<string, number>): number | undefined {
  if (key === 'pods' || key === 'count/pods') return 1;
  if (key.startsWith('requests.')) return req.get(key.slice('requests.'.length)) ?? 0;
  if (key.startsWith('limits.')) return lim.get(key.slice('limits.'.length)) ?? 0;
  if (key === 'cpu' || key === 'memory' || key === 'ephemeral-storage') return req.get(key) ?? 0;
  // A bare extended resource (`nvidia.com/gpu`) is accepted in a quota but never tracked: the pod
  // evaluator only knows `requests.<extended>`. Real quotas with it silently do nothing.
  return undefined;
}

export function quotaUsed(quota: KubeObject, pods: Pod[]): Map<string, number> {
  const hard = (quota as Quota).spec?.hard ?? {};
  const empty = new Map<string, number>();
  const used = new Map<string, number>(
    Object.keys(hard)
      .filter((k) => podUsage(k, empty, empty) !== undefined)
      .map((k) => [k, 0]),
  );
  for (const p of pods) {
    if (isTerminal(p)) continue;
    const req = podRequests(p);
    const lim = podLimits(p);
    for (const k of used.keys()) used.set(k, (used.get(k) ?? 0) + (podUsage(k, req, lim) ?? 0));
  }
  return used;
}

/** The quota with `status.hard` and `status.used` filled in, as the quota controller keeps it. */
export function withQuotaStatus(quota: KubeObject, pods: Pod[]): KubeObject {
  const hard = (quota as Quota).spec?.hard ?? {};
  const used: Record<string, string> = {};
  for (const [k, v] of quotaUsed(quota, pods)) used[k] = formatQuantity(v, k);
  return { ...quota, status: { hard: { ...hard }, used } };
}

/**
 * The reason a new pod would break one of `quotas`, in the quota plugin's words
 * (`exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, used: ..., limited: ...`),
 * or undefined when it fits them all.
 */
export function quotaRefusal(pod: Pod, quotas: KubeObject[], podsInNamespace: Pod[]): string | undefined {
  const req = podRequests(pod);
  const lim = podLimits(pod);
  for (const q of [...quotas].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))) {
    const hard = (q as Quota).spec?.hard ?? {};
    const missing = Object.keys(hard)
      .filter((k) => /^(requests\.|limits\.)?(cpu|memory)$/.test(k))
      .filter((k) => {
        const base = k.replace(/^(requests|limits)\./, '');
        return !(k.startsWith('limits.') ? lim : req).has(base);
      });
    if (missing.length > 0) return `failed quota: ${q.metadata.name}: must specify ${missing.sort().join(',')}`;
    const used = quotaUsed(q, podsInNamespace);
    const over = Object.keys(hard)
      .filter((k) => {
        const add = podUsage(k, req, lim) ?? 0;
        return add > 0 && (used.get(k) ?? 0) + add > parseQuantity(hard[k]) + 1e-9;
      })
      .sort();
    if (over.length === 0) continue;
    const fmt = (f: (k: string) => number) => over.map((k) => `${k}=${formatQuantity(f(k), k)}`).join(',');
    return (
      `exceeded quota: ${q.metadata.name}, requested: ${fmt((k) => podUsage(k, req, lim) ?? 0)}, ` +
      `used: ${fmt((k) => used.get(k) ?? 0)}, limited: ${fmt((k) => parseQuantity(hard[k]))}`
    );
  }
  return undefined;
}
