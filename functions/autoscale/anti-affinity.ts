/**
 * Required pod anti-affinity on `kubernetes.io/hostname`, as kube-scheduler's InterPodAffinity
 * filter keeps it (kubernetes/kubernetes pkg/scheduler/framework/plugins/interpodaffinity/
 * filtering.go; kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/
 * #inter-pod-affinity-and-anti-affinity): a pod may not join a node that runs a pod its required
 * anti-affinity terms select, nor a node running a pod whose own terms select it. A term selects by
 * its label selector in its namespaces (none listed: the pod's own). Other topology keys (zone) are
 * not modelled. cluster-autoscaler runs the same filter on its template nodes (simulator/
 * predicatechecker), so anti-affine replicas there each need a node of their own.
 */
import type { PodInfo, PodSelectorTerm } from '../adapters/kube/model.ts';

type Who = Pick<PodInfo, 'namespace' | 'labels' | 'hostnameAntiAffinity'>;

/** Does `owner`'s term select `other`? An operator the API would refuse selects nothing. */
function selects(owner: Who, t: PodSelectorTerm, other: Who): boolean {
  const namespaces = t.namespaces?.length ? t.namespaces : [owner.namespace];
  if (!namespaces.includes(other.namespace)) return false;
  for (const [k, v] of Object.entries(t.matchLabels ?? {})) if (other.labels[k] !== v) return false;
  for (const e of t.matchExpressions ?? []) {
    const v = other.labels[e.key];
    const ok =
      e.operator === 'In'
        ? v !== undefined && (e.values ?? []).includes(v)
        : e.operator === 'NotIn'
          ? v === undefined || !(e.values ?? []).includes(v)
          : e.operator === 'Exists'
            ? v !== undefined
            : e.operator === 'DoesNotExist'
              ? v === undefined
              : false;
    if (!ok) return false;
  }
  return true;
}

/** Whether `pod` may share a node with `others` under either side's hostname anti-affinity. */
export function apartAllows(pod: Who, others: readonly Who[]): boolean {
  for (const o of others) {
    if ((pod.hostnameAntiAffinity ?? []).some((t) => selects(pod, t, o))) return false;
    if ((o.hostnameAntiAffinity ?? []).some((t) => selects(o, t, pod))) return false;
  }
  return true;
}

/**
 * The spread key of a pod whose anti-affinity selects itself (replicas that must each have a node):
 * pods with one key never share a planned node (core/planner.ts). Undefined otherwise.
 */
export function spreadKeyOf(pod: Who): string | undefined {
  const self = (pod.hostnameAntiAffinity ?? []).filter((t) => selects(pod, t, pod));
  return self.length > 0 ? `${pod.namespace}|${JSON.stringify(self)}` : undefined;
}
