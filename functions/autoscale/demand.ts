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
