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
 * The gang a pod belongs to (core/gangs.ts), by what Volcano or Kueue put on it, or undefined.
 * `bound` is how many of the gang's pods already run: a Kueue group of 4 with 1 running needs 3.
 */
export function gangOfPod(p: PodInfo, bound: (gang: string) => number): Gang | undefined {
  const volcano = p.annotations[VOLCANO_GROUP_ANNOTATION];
  if (volcano) return { name: `PodGroup ${p.namespace}/${volcano}` };
  const kueue = p.labels[KUEUE_GROUP_LABEL];
  if (!kueue) return undefined;
  const name = `Kueue workload ${p.namespace}/${kueue}`;
  const total = Number(p.annotations[KUEUE_GROUP_TOTAL_ANNOTATION]);
  return Number.isInteger(total) && total > 0 ? { name, size: Math.max(0, total - bound(name)) } : { name };
}
