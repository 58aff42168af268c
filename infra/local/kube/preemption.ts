import { isTerminating } from './pods.ts';
import { pdbStatus, selectedBy } from './pdb.ts';
import type { KubeObject, Pod } from './types.ts';

/**
 * kube-scheduler's DefaultPreemption, as the simulated scheduler does it: what the real scheduler does when a pod fits
 * on no node (kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/; the PostFilter plugin
 * pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and framework/preemption/preemption.go).
 *
 * - A pod may preempt unless its `preemptionPolicy` is `Never`, and not while it is already nominated to a node where a
 *   lower-priority pod is still terminating (PodEligibleToPreemptOthers: its earlier victims are on their way out).
 * - On each node, every pod of lower priority (not already terminating) is removed in a dry run; if the preemptor then
 *   passes the filters, the victims are reprieved one by one, most important first (higher priority, then earlier
 *   start), those whose disruption would break a PodDisruptionBudget before the others (SelectVictimsOnNode): a pod is
 *   put back when the preemptor still fits with it. A node where even removing them all does not help (a taint, a
 *   selector, a cordon: "unresolvable") is no candidate.
 * - Among candidate nodes, pickOneNodeForPreemption: fewest PDB violations, then the lowest highest-victim priority,
 *   then the smallest sum of victim priorities (each raised by 2^31 so negatives count), then the fewest victims, then
 *   the latest start of the earliest-started victim, then the first node (here: name order).
 * - The scheduler then marks each victim `DisruptionTarget` (reason `PreemptionByScheduler`, "<scheduler>: preempting
 *   to accommodate a higher priority pod"), deletes it with its grace period, records a Normal Event `Preempted`
 *   ("Preempted by pod <preemptor uid> on node <node>"), and sets the preemptor's `status.nominatedNodeName`. Until the
 *   preemptor binds, pods of no higher priority treat its requests as taken on that node (the filters run "with
 *   nominated pods", RunFilterPluginsWithNominatedPods) and the queue takes higher priority first (queuesort
 *   PrioritySort).
 * PDBs are best effort in preemption: a victim may break one when no better node exists. Not modelled: preemption for
 * pods with ResourceClaims or inter-pod anti-affinity, extenders, the candidate sampling of very large clusters.
 */
export interface Candidate {
  node: string;
  /** Most important first. */
  victims: Pod[];
  pdbViolations: number;
}

export const PREEMPTION_REASON = 'PreemptionByScheduler';

export const priorityOf = (pod: Pod): number => (typeof pod.spec.priority === 'number' ? pod.spec.priority : 0);

const startOf = (pod: Pod): number =>
  Date.parse(String(pod.status?.startTime ?? pod.metadata.creationTimestamp ?? '')) || 0;

const schedulerOf = (pod: Pod): string =>
  typeof pod.spec.schedulerName === 'string' ? pod.spec.schedulerName : 'default-scheduler';

/** MoreImportantPod (pkg/scheduler/util): higher priority first, then the earlier start. */
export function moreImportantFirst(a: Pod, b: Pod): number {
  return priorityOf(b) - priorityOf(a) || startOf(a) - startOf(b);
}

/** Whether the pod may preempt others now (PodEligibleToPreemptOthers). */
export function mayPreempt(pod: Pod, podsOnNominated: readonly Pod[]): boolean {
  if (pod.spec.preemptionPolicy === 'Never') return false;
  const prio = priorityOf(pod);
  return !podsOnNominated.some((p) => isTerminating(p) && priorityOf(p) < prio);
}

/**
 * The victims on one node, or undefined when removing every lower-priority pod does not make room.
 * `fitsWith(kept)`: does the preemptor pass the filters when the node runs only `kept`?
 * `pdbs`: the budgets of the victims' namespaces, with their pods (`podsOf`).
 */
export function victimsOn(
  preemptor: Pod,
  node: string,
  podsOnNode: readonly Pod[],
  fitsWith: (kept: Pod[]) => boolean,
  pdbs: readonly KubeObject[],
  podsOf: (pdb: KubeObject) => Pod[],
): Candidate | undefined {
  const prio = priorityOf(preemptor);
  const lower = podsOnNode.filter((p) => priorityOf(p) < prio && !isTerminating(p));
  if (lower.length === 0) return undefined;
  const kept = podsOnNode.filter((p) => !lower.includes(p));
  if (!fitsWith(kept)) return undefined;
  // filterPodsWithPDBViolation: each budget allows so many more disruptions; pods past that violate it.
  const allowed = new Map(pdbs.map((b) => [b, pdbStatus(b, podsOf(b)).disruptionsAllowed]));
  const violating: Pod[] = [];
  const other: Pod[] = [];
  for (const p of [...lower].sort(moreImportantFirst)) {
    const budgets = pdbs.filter((b) => b.metadata.namespace === p.metadata.namespace && selectedBy(b, p));
    let breaks = false;
    for (const b of budgets) {
      const left = allowed.get(b)! - 1;
      allowed.set(b, left);
      if (left < 0) breaks = true;
    }
    (breaks ? violating : other).push(p);
  }
  const victims: Pod[] = [];
  let pdbViolations = 0;
  for (const [group, breaks] of [
    [violating, true],
    [other, false],
  ] as const) {
    for (const p of group) {
      if (fitsWith([...kept, p])) kept.push(p);
      else {
        victims.push(p);
        if (breaks) pdbViolations++;
      }
    }
  }
  return { node, victims: victims.sort(moreImportantFirst), pdbViolations };
}

/** pickOneNodeForPreemption's order, candidates given in node name order. */
export function pickCandidate(candidates: readonly Candidate[]): Candidate | undefined {
  const scores: ((c: Candidate) => number)[] = [
    (c) => -c.pdbViolations,
    (c) => -priorityOf(c.victims[0]!),
    (c) => -c.victims.reduce((t, p) => t + priorityOf(p) + 2 ** 31, 0),
    (c) => -c.victims.length,
    (c) => Math.min(...c.victims.map(startOf)),
  ];
  let left = candidates.filter((c) => c.victims.length > 0);
  for (const score of scores) {
    if (left.length <= 1) break;
    const best = Math.max(...left.map(score));
    left = left.filter((c) => score(c) === best);
  }
  return left[0];
}

/** The victim's condition before its deletion (PodDisruptionConditions, on by default since 1.26). */
export function disruptionTarget(preemptor: Pod, nowIso: string): Record<string, unknown> {
  return {
    type: 'DisruptionTarget',
    status: 'True',
    reason: PREEMPTION_REASON,
    message: `${schedulerOf(preemptor)}: preempting to accommodate a higher priority pod`,
    lastTransitionTime: nowIso,
    lastProbeTime: null,
  };
}

/** The scheduler's Normal Event on the victim, in the core Event shape the simulator serves. */
export function preemptedEvent(victim: Pod, preemptor: Pod, node: string, nowIso: string, uid: string, nanos: bigint) {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: {
      name: `${victim.metadata.name}.${nanos.toString(16)}`,
      namespace: victim.metadata.namespace ?? 'default',
      uid,
      creationTimestamp: nowIso,
    },
    involvedObject: {
      kind: 'Pod',
      namespace: victim.metadata.namespace,
      name: victim.metadata.name,
      uid: victim.metadata.uid,
      apiVersion: 'v1',
    },
    related: {
      kind: 'Pod',
      namespace: preemptor.metadata.namespace,
      name: preemptor.metadata.name,
      uid: preemptor.metadata.uid,
      apiVersion: 'v1',
    },
    reason: 'Preempted',
    action: 'Preempting',
    message: `Preempted by pod ${preemptor.metadata.uid} on node ${node}`,
    source: { component: schedulerOf(preemptor) },
    firstTimestamp: nowIso,
    lastTimestamp: nowIso,
    count: 1,
    type: 'Normal',
    eventTime: null,
    reportingComponent: schedulerOf(preemptor),
    reportingInstance: '',
  } as unknown as KubeObject;
}
