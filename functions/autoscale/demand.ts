/**
 * Which pods are demand for a new node, as the scheduler means it (pure). cluster-autoscaler scales
 * up only for pods the scheduler has tried and failed to place: `PodScheduled` `False` with reason
 * `Unschedulable` (kubernetes/autoscaler cluster-autoscaler/utils/kubernetes/listers.go
 * `isUnschedulable`; kube-scheduler sets it: pkg/scheduler/schedule_one.go `handleSchedulingFailure`).
 * So a pod is not demand while:
 * - it has scheduling gates (`spec.schedulingGates`, Kueue's among them): the scheduler does not try
 *   it, and its condition says `SchedulingGated` (kubernetes.io/docs/concepts/scheduling-eviction/
 *   pod-scheduling-readiness); a node bought for it would idle until the gate is lifted;
 * - the scheduler nominated a node for it (`status.nominatedNodeName`): preemption is freeing room
 *   there (kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption);
 * - the scheduler has not (yet) said it fits nowhere.
 * Pods that fit existing nodes, or nodes on their way, are taken out later (existing-room.ts, the
 * planner's in-flight count), as cluster-autoscaler's filter_out_schedulable does.
 */
import type { PodInfo } from '../adapters/kube/model.ts';
import type { Gang } from './core/gangs.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';

export type NotDemand = 'gated' | 'nominated' | 'not-unschedulable';

/** Why a pod waiting for a node is no reason to buy one, or undefined when it is. */
export function notDemand(p: PodInfo): NotDemand | undefined {
  if ((p.schedulingGates ?? []).length > 0) return 'gated';
  if (p.nominatedNodeName) return 'nominated';
  if (p.scheduled?.status !== 'False' || p.scheduled.reason !== 'Unschedulable') return 'not-unschedulable';
  return undefined;
}

/** How many waiting pods each rule left out, for the log and the round's outcome. */
export function countNotDemand(pods: readonly PodInfo[]): Record<NotDemand, number> {
  const out: Record<NotDemand, number> = { gated: 0, nominated: 0, 'not-unschedulable': 0 };
  for (const p of pods) {
    const why = notDemand(p);
    if (why) out[why]++;
  }
  return out;
}

/** Volcano's pod annotation naming the pod's PodGroup (volcano.sh/en/docs/podgroup/). */
export const VOLCANO_GROUP_ANNOTATION = 'scheduling.k8s.io/group-name';
/** Kueue's plain-pod group label and its size (kueue.sigs.k8s.io/docs/tasks/run/plain_pods/). */
export const KUEUE_GROUP_LABEL = 'kueue.x-k8s.io/pod-group-name';
export const KUEUE_GROUP_TOTAL_ANNOTATION = 'kueue.x-k8s.io/pod-group-total-count';

/**
 * A gang's own minimum to start, from its object in the cluster (issue #34), by the gang's name as
 * gangOfPod spells it.
 */
export interface GangSpec {
  name: string;
  /** How many of its pods must run at once for any to start. */
  minimum: number;
  /** The least its pods ask for all together (base units: cpu in cores, memory in bytes). */
  minResources?: Record<string, number>;
}

/**
 * A Volcano PodGroup's own minimum (scheduling.volcano.sh/v1beta1, volcano.sh/en/docs/podgroup/):
 * `spec.minMember` pods must be placeable at once (1 when unset), and the group's pods must ask for at
 * least `spec.minResources` in all, before Volcano binds any of them.
 */
export function podGroupSpec(o: {
  metadata?: { namespace?: string; name?: string };
  spec?: { minMember?: number; minResources?: Record<string, string | number> };
}): GangSpec | undefined {
  const { namespace, name } = o.metadata ?? {};
  if (!namespace || !name) return undefined;
  const min = o.spec?.minResources;
  return {
    name: `PodGroup ${namespace}/${name}`,
    minimum: Math.max(1, Math.floor(o.spec?.minMember ?? 1)),
    ...(min ? { minResources: Object.fromEntries(Object.entries(min).map(([k, v]) => [k, parseQuantity(v)])) } : {}),
  };
}

/**
 * A Kueue Workload's own minimum (kueue.x-k8s.io/v1beta1, kueue.sigs.k8s.io/docs/concepts/workload/):
 * the sum over `spec.podSets[]` of `count`, or of `minCount` where partial admission lets Kueue admit
 * fewer (kueue.sigs.k8s.io/docs/concepts/workload/#partial-admission). A plain-pod group's Workload is
 * named after the group (kubernetes-sigs/kueue keps/976-plain-pods), so it matches the pods' label.
 */
export function kueueWorkloadSpec(o: {
  metadata?: { namespace?: string; name?: string };
  spec?: { podSets?: { count?: number; minCount?: number }[] };
}): GangSpec | undefined {
  const { namespace, name } = o.metadata ?? {};
  const sets = o.spec?.podSets ?? [];
  if (!namespace || !name || sets.length === 0) return undefined;
  const minimum = sets.reduce((t, s) => t + Math.max(0, s.minCount ?? s.count ?? 1), 0);
  return { name: `Kueue workload ${namespace}/${name}`, minimum };
}

/**
 * The gang a pod belongs to (core/gangs.ts), by what Volcano or Kueue put on it, or undefined.
 * `bound` is how many of the gang's pods already run: a Kueue group of 4 with 1 running needs 3.
 * With the gang's object read (`spec`: its PodGroup or Workload), the gang needs only its own
 * minimum less the running pods; once that many run, its other pods are ordinary demand (undefined).
 */
export function gangOfPod(
  p: PodInfo,
  bound: (gang: string) => number,
  spec: (gang: string) => GangSpec | undefined = () => undefined,
): Gang | undefined {
  const volcano = p.annotations[VOLCANO_GROUP_ANNOTATION];
  const kueue = p.labels[KUEUE_GROUP_LABEL];
  const own = volcano ? `PodGroup ${p.namespace}/${volcano}` : kueue ? `Kueue workload ${p.namespace}/${kueue}` : '';
  const s = own ? spec(own) : undefined;
  if (s) {
    const size = s.minimum - bound(own);
    if (size <= 0) return undefined;
    return { name: own, size, minimum: true, ...(s.minResources ? { minResources: s.minResources } : {}) };
  }
  if (volcano) return { name: own };
  if (!kueue) return undefined;
  const name = own;
  const total = Number(p.annotations[KUEUE_GROUP_TOTAL_ANNOTATION]);
  return Number.isInteger(total) && total > 0 ? { name, size: Math.max(0, total - bound(name)) } : { name };
}
