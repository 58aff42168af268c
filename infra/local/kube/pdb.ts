import { isHealthy, isTerminal, isTerminating } from './pods.ts';
import { matchesRequirements, requirementsOf } from './selectors.ts';
import type { KubeObject, LabelSelectorSpec, Pod } from './types.ts';

/**
 * PodDisruptionBudget arithmetic, as the disruption controller computes it, and the eviction
 * decision the eviction subresource makes with it.
 */
export interface PdbSpec {
  minAvailable?: number | string;
  maxUnavailable?: number | string;
  selector?: LabelSelectorSpec;
  unhealthyPodEvictionPolicy?: 'IfHealthyBudget' | 'AlwaysAllow';
}

export interface PdbStatus {
  currentHealthy: number;
  desiredHealthy: number;
  disruptionsAllowed: number;
  expectedPods: number;
}

function resolve(v: number | string, total: number, roundUp: boolean): number {
  if (typeof v === 'number') return v;
  const m = /^(\d+)%$/.exec(v);
  if (!m) return Number(v);
  const exact = (Number(m[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

export function selectedBy(pdb: KubeObject, pod: Pod): boolean {
  const spec = pdb.spec as PdbSpec | undefined;
  // An empty selector in policy/v1 selects every pod in the namespace.
  return matchesRequirements(pod.metadata.labels, requirementsOf(spec?.selector));
}

export function pdbStatus(pdb: KubeObject, podsInNamespace: Pod[]): PdbStatus {
  const spec = (pdb.spec ?? {}) as PdbSpec;
  const pods = podsInNamespace.filter((p) => selectedBy(pdb, p) && !isTerminal(p));
  // Pods being deleted are already replaced by their controllers here, so they do not count
  // toward the expected size (the real controller reads the owners' replica counts instead).
  const expectedPods = pods.filter((p) => !isTerminating(p)).length;
  const currentHealthy = pods.filter(isHealthy).length;
  let desiredHealthy = 0;
  if (spec.minAvailable !== undefined) desiredHealthy = resolve(spec.minAvailable, expectedPods, true);
  else if (spec.maxUnavailable !== undefined)
    desiredHealthy = Math.max(0, expectedPods - resolve(spec.maxUnavailable, expectedPods, true));
  return {
    currentHealthy,
    desiredHealthy,
    disruptionsAllowed: Math.max(0, currentHealthy - desiredHealthy),
    expectedPods,
  };
}

export function withPdbStatus(pdb: KubeObject, podsInNamespace: Pod[], nowIso: string): KubeObject {
  const s = pdbStatus(pdb, podsInNamespace);
  const allowed = s.disruptionsAllowed > 0;
  return {
    ...pdb,
    status: {
      observedGeneration: pdb.metadata.generation ?? 1,
      ...s,
      conditions: [
        {
          type: 'DisruptionAllowed',
          status: allowed ? 'True' : 'False',
          reason: allowed ? 'SufficientPods' : 'InsufficientPods',
          message: '',
          observedGeneration: pdb.metadata.generation ?? 1,
          lastTransitionTime: nowIso,
        },
      ],
    },
  };
}

export type EvictionVerdict = { allowed: true } | { allowed: false; code: 429 | 500; message: string; cause?: string };

/**
 * Whether evicting `pod` keeps every budget that selects it (the eviction REST handler's rules).
 * `podsOf(pdb)`: the namespace's pods (or any superset of those the budget selects), asked only
 * when a budget applies, so evicting an unbudgeted pod costs nothing per pod in the namespace.
 */
export function evictionVerdict(pod: Pod, pdbs: KubeObject[], podsOf: (pdb: KubeObject) => Pod[]): EvictionVerdict {
  // Pods that are not running (pending, finished) never count against a budget.
  if (pod.status?.phase !== 'Running') return { allowed: true };
  const matching = pdbs.filter((b) => selectedBy(b, pod));
  if (matching.length === 0) return { allowed: true };
  if (matching.length > 1)
    return {
      allowed: false,
      code: 500,
      message: 'This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.',
    };
  const pdb = matching[0]!;
  const s = pdbStatus(pdb, podsOf(pdb));
  // An unhealthy pod may go when the budget is already met (IfHealthyBudget, the default),
  // or always (AlwaysAllow).
  const policy = (pdb.spec as PdbSpec | undefined)?.unhealthyPodEvictionPolicy;
  if (!isHealthy(pod) && (policy === 'AlwaysAllow' || s.currentHealthy >= s.desiredHealthy)) return { allowed: true };
  if (s.disruptionsAllowed > 0) return { allowed: true };
  return {
    allowed: false,
    code: 429,
    message: "Cannot evict pod as it would violate the pod's disruption budget.",
    cause:
      `The disruption budget ${pdb.metadata.name} needs ${s.desiredHealthy} healthy pods and ` +
      `has ${s.currentHealthy} currently`,
  };
}
