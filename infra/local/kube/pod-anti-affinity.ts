import { matchesRequirements, requirementsOf } from './selectors.ts';
import type { LabelSelectorSpec, Pod } from './types.ts';

/**
 * Required inter-pod anti-affinity on `kubernetes.io/hostname`, as kube-scheduler's InterPodAffinity
 * filter keeps it (pkg/scheduler/framework/plugins/interpodaffinity/filtering.go;
 * kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity):
 * a pod may not go to a node running a pod its required anti-affinity terms select, nor to a node
 * running a pod whose own required anti-affinity terms select it. A term selects pods by its
 * `labelSelector` in its `namespaces` (none: the pod's own namespace). Other topology keys (zone)
 * are not modelled; the node is the topology here. Reason text: "node(s) didn't match pod
 * anti-affinity rules" (filtering.go ErrReasonAntiAffinityRulesNotMatch).
 */
export const HOSTNAME = 'kubernetes.io/hostname';
export const ANTI_AFFINITY_REASON = "node(s) didn't match pod anti-affinity rules";

interface Term {
  labelSelector?: LabelSelectorSpec;
  namespaces?: string[];
  topologyKey: string;
}

function hostnameTerms(pod: Pod): Term[] {
  const anti = (pod.spec.affinity as { podAntiAffinity?: { requiredDuringSchedulingIgnoredDuringExecution?: Term[] } })
    ?.podAntiAffinity;
  return (anti?.requiredDuringSchedulingIgnoredDuringExecution ?? []).filter((t) => t.topologyKey === HOSTNAME);
}

/** Does the pod ask for anti-affinity the scheduler keeps per node? */
export function hasHostnameAntiAffinity(pod: Pod): boolean {
  return hostnameTerms(pod).length > 0;
}

/** Does `owner`'s term select `other`? A selector the server would refuse selects nothing. */
function selects(owner: Pod, t: Term, other: Pod): boolean {
  const namespaces = t.namespaces?.length ? t.namespaces : [owner.metadata.namespace ?? 'default'];
  if (!namespaces.includes(other.metadata.namespace ?? 'default')) return false;
  try {
    return matchesRequirements(other.metadata.labels, requirementsOf(t.labelSelector));
  } catch {
    return false;
  }
}

/** Whether `pod` may join `onNode` (the pods there) under either side's hostname anti-affinity. */
export function antiAffinityAllows(pod: Pod, onNode: readonly Pod[]): boolean {
  const mine = hostnameTerms(pod);
  for (const other of onNode) {
    if (other === pod || other.metadata.deletionTimestamp) continue;
    if (mine.some((t) => selects(pod, t, other))) return false;
    if (hostnameTerms(other).some((t) => selects(other, t, pod))) return false;
  }
  return true;
}
