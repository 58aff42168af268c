import type { NodeSelectorRequirement, Pod, Taint, Toleration } from './types.ts';

/**
 * kube-scheduler's placement predicates, written from Kubernetes' own sources (not from the
 * functions' rules, which the simulator exists to check):
 *
 * - tolerations: k8s.io/api/core/v1/toleration.go `ToleratesTaint`;
 * - label requirements: k8s.io/apimachinery/pkg/labels/selector.go `Requirement.Matches`;
 * - node selector terms: k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go
 *   (`NodeSelector.Match`, `nodeSelectorTerm.match`, `nodeSelectorRequirementsAsFieldSelector`);
 * - required affinity: the same file's `GetRequiredNodeAffinity` / `RequiredNodeAffinity.Match`,
 *   used by the NodeAffinity filter plugin (pkg/scheduler/framework/plugins/nodeaffinity).
 */

/**
 * ToleratesTaint: a toleration with an effect matches only that effect; with a key, only that
 * key (an empty key with `Exists` tolerates every taint); the operator defaults to `Equal`, which
 * compares values (absent = ""), `Exists` ignores them, and any other operator tolerates nothing.
 */
export function toleratesTaint(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.key && t.key !== taint.key) return false;
  switch (t.operator ?? '') {
    case '':
    case 'Equal':
      return (t.value ?? '') === (taint.value ?? '');
    case 'Exists':
      return true;
    default:
      return false;
  }
}

/** TolerationsTolerateTaint (component-helpers/scheduling/corev1/helpers.go): any one toleration will do. */
export function tolerates(tolerations: readonly Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => toleratesTaint(t, taint));
}

/** strconv.ParseInt(s, 10, 64): optional sign, decimal digits only, within int64. */
function parseInt64(s: string): bigint | undefined {
  if (!/^[+-]?[0-9]+$/.test(s)) return undefined;
  const n = BigInt(s);
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : undefined;
}

/**
 * Requirement.Matches for a label's value (undefined: the node has no such label). `Gt`/`Lt`
 * need the label and exactly one bound, both base-10 int64s; anything else does not match.
 */
export function requirementHolds(
  r: { operator: string; values?: readonly string[] },
  value: string | undefined,
): boolean {
  const values = r.values ?? [];
  switch (r.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1) return false;
      const have = parseInt64(value);
      const bound = parseInt64(values[0]!);
      if (have === undefined || bound === undefined) return false;
      return r.operator === 'Gt' ? have > bound : have < bound;
    }
    default:
      return false;
  }
}

/**
 * A matchFields requirement (nodeSelectorRequirementsAsFieldSelector): only `metadata.name`, only
 * `In`/`NotIn`, exactly one value; anything else is an error, and a term in error matches nothing.
 */
function fieldHolds(r: NodeSelectorRequirement, nodeName: string): boolean {
  if (r.key !== 'metadata.name' || (r.values ?? []).length !== 1) return false;
  if (r.operator === 'In') return nodeName === r.values![0];
  if (r.operator === 'NotIn') return nodeName !== r.values![0];
  return false;
}

/** A label's value; own keys only (a label named `constructor` is not Object.prototype's). */
function labelOf(labels: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(labels, key) ? labels[key] : undefined;
}

export interface SelectorTerm {
  matchExpressions?: readonly NodeSelectorRequirement[];
  matchFields?: readonly NodeSelectorRequirement[];
}

/** nodeSelectorTerm.match: "nil or empty term selects no objects"; otherwise every requirement holds. */
export function termMatches(t: SelectorTerm, labels: Readonly<Record<string, string>>, nodeName: string): boolean {
  const exprs = t.matchExpressions ?? [];
  const fields = t.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  return (
    exprs.every((e) => requirementHolds(e, labelOf(labels, e.key))) && fields.every((f) => fieldHolds(f, nodeName))
  );
}

/**
 * RequiredNodeAffinity.Match as one test per pod: every `nodeSelector` entry equal
 * (labels.SelectorFromSet), then, when `requiredDuringSchedulingIgnoredDuringExecution` is set, any
 * one of its terms (NodeSelector.Match; no terms at all: no node matches; validation refuses that).
 */
export function requiredAffinity(pod: Pod): (labels: Readonly<Record<string, string>>, nodeName: string) => boolean {
  const selector = Object.entries(pod.spec.nodeSelector ?? {});
  const required = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  const terms = required?.nodeSelectorTerms ?? [];
  return (labels, nodeName) => {
    for (const [k, v] of selector) if (labelOf(labels, k) !== v) return false;
    if (required === undefined) return true;
    return terms.some((t) => termMatches(t, labels, nodeName));
  };
}
