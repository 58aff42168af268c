/**
 * Can a pod ever run on a node of this pool? The scheduler's static checks, on a node that does
 * not exist yet: nodeSelector, required node affinity, taints and tolerations, and whether one
 * node offers enough of every resource the pod requests. Pure; the reason is said in words when
 * the answer is no.
 */
export type Resources = Readonly<Record<string, number>>;

export interface Toleration {
  key?: string;
  operator?: 'Exists' | 'Equal';
  value?: string;
  effect?: string;
}

export interface Taint {
  key: string;
  value?: string;
  effect: string;
}

export interface MatchExpression {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: readonly string[];
}

export interface PodConstraints {
  /** cpu in millicores, memory in bytes, extended resources in their own units. */
  requests: Resources;
  nodeSelector?: Readonly<Record<string, string>>;
  /** requiredDuringScheduling node selector terms: any one term, every expression in it. */
  requiredTerms?: readonly { matchExpressions: readonly MatchExpression[] }[];
  tolerations?: readonly Toleration[];
}

export interface NodeTemplate {
  labels: Readonly<Record<string, string>>;
  taints: readonly Taint[];
  /** What one node offers to pods (allocatable). */
  allocatable: Resources;
}

/**
 * kube-scheduler's rules, shared with the simulated cluster's scheduler (infra/local/kube/scheduler.ts)
 * so both decide the same: does one toleration tolerate a taint?
 */
export function tolerates(
  t: { key?: string; operator?: string; value?: string; effect?: string },
  taint: { key: string; value?: string; effect: string },
): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key === undefined || t.key === '') return t.operator === 'Exists';
  if (t.key !== taint.key) return false;
  return t.operator === 'Exists' || (t.value ?? '') === (taint.value ?? '');
}

/** Does a node selector requirement hold for the value its key has (undefined: the label is absent)? */
export function expressionHolds(e: { operator: string; values?: readonly string[] }, v: string | undefined): boolean {
  const values = e.values ?? [];
  switch (e.operator) {
    case 'In':
      return v !== undefined && values.includes(v);
    case 'NotIn':
      return v === undefined || !values.includes(v);
    case 'Exists':
      return v !== undefined;
    case 'DoesNotExist':
      return v === undefined;
    case 'Gt':
    case 'Lt': {
      const n = Number(v);
      const bound = Number(values[0]);
      if (v === undefined || !Number.isInteger(n) || !Number.isInteger(bound)) return false;
      return e.operator === 'Gt' ? n > bound : n < bound;
    }
    default:
      return false;
  }
}

/** Undefined when the pod fits a node of this template; otherwise why not. */
export function whyNot(pod: PodConstraints, node: NodeTemplate): string | undefined {
  for (const [k, v] of Object.entries(pod.nodeSelector ?? {})) {
    if (node.labels[k] !== v)
      return `nodeSelector ${k}=${v} (the pool's nodes have ${node.labels[k] === undefined ? `no ${k}` : `${k}=${node.labels[k]}`})`;
  }
  const terms = pod.requiredTerms ?? [];
  if (terms.length > 0 && !terms.some((t) => t.matchExpressions.every((e) => expressionHolds(e, node.labels[e.key]))))
    return 'required node affinity matches none of its labels';
  for (const taint of node.taints) {
    if (taint.effect !== 'NoSchedule' && taint.effect !== 'NoExecute') continue;
    if (!(pod.tolerations ?? []).some((t) => tolerates(t, taint)))
      return `taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} not tolerated`;
  }
  for (const [r, want] of Object.entries(pod.requests)) {
    if (want <= 0) continue;
    const has = node.allocatable[r] ?? 0;
    if (want > has) return has === 0 ? `no ${r} on its nodes` : `needs ${want} ${r}, a node offers ${has}`;
  }
  return undefined;
}
