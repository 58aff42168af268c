import { holdsResources, podRequests } from './pods.ts';
import { parseQuantity } from './quantity.ts';
import { expressionHolds, tolerates as toleratesOne } from '../../../functions/autoscale/core/fit.ts';
import type { Node, Pod, Taint, Toleration } from './types.ts';

/**
 * The scheduler's filter: does a pod fit a node? Pure functions over plain objects, the same
 * checks kube-scheduler's default filters make for what this fleet uses: resources (cpu, memory,
 * pods and any extended resource such as `nvidia.com/gpu` or `nvidia.com/mig-1g.10gb`), node
 * unschedulable, taints against tolerations, nodeSelector and required node affinity. The
 * toleration and selector rules are the pool autoscaler's own (functions/autoscale/core/fit.ts), so
 * the planner and this scheduler cannot disagree about where a pod may land.
 */
export function tolerates(tolerations: Toleration[] | undefined, taint: Taint): boolean {
  return (tolerations ?? []).some((t) => toleratesOne(t, taint));
}

export function matchesNodeAffinity(pod: Pod, node: Node): boolean {
  const labels = node.metadata.labels ?? {};
  for (const [k, v] of Object.entries(pod.spec.nodeSelector ?? {})) if (labels[k] !== v) return false;
  const terms = pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some(
    (t) =>
      (t.matchExpressions ?? []).every((e) => expressionHolds(e, labels[e.key])) &&
      (t.matchFields ?? []).every((e) => expressionHolds(e, e.key === 'metadata.name' ? node.metadata.name : undefined)),
  );
}

/** What a node has left: allocatable minus the requests of pods bound to it. */
export function freeOn(node: Node, podsOnNode: Pod[]): Map<string, number> {
  const free = new Map<string, number>();
  for (const [k, v] of Object.entries(node.status?.allocatable ?? node.status?.capacity ?? {})) free.set(k, parseQuantity(v));
  if (!free.has('pods')) free.set('pods', 110);
  for (const p of podsOnNode) {
    if (!holdsResources(p)) continue;
    free.set('pods', (free.get('pods') ?? 0) - 1);
    for (const [k, v] of podRequests(p)) free.set(k, (free.get(k) ?? 0) - v);
  }
  return free;
}

/** Why `pod` cannot go to `node`, in kube-scheduler's words, or undefined when it fits. */
export function unfitReason(pod: Pod, node: Node, free: Map<string, number>): string | undefined {
  return unfitReasonOf(pod, node, () => free);
}

/**
 * unfitReason with the node's free room computed only when the checks get that far: a node the
 * pod's selector rules out costs no walk over its pods (a new pod shape's first pass in a
 * 10,000-node fleet visits every node).
 */
function unfitReasonOf(pod: Pod, node: Node, freeOf: () => Map<string, number>): string | undefined {
  const unschedulable: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
  if (node.spec?.unschedulable && !tolerates(pod.spec.tolerations, unschedulable)) return 'node(s) were unschedulable';
  // The node lifecycle controller taints a node whose Ready condition is not True.
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const notReady: Taint = { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' };
  if (ready && ready.status !== 'True' && !tolerates(pod.spec.tolerations, notReady)) return 'node(s) had untolerated taint {node.kubernetes.io/not-ready: }';
  for (const t of node.spec?.taints ?? []) {
    if (t.effect === 'PreferNoSchedule') continue;
    if (!tolerates(pod.spec.tolerations, t)) return `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`;
  }
  if (!matchesNodeAffinity(pod, node)) return "node(s) didn't match Pod's node affinity/selector";
  const free = freeOf();
  if ((free.get('pods') ?? 0) < 1) return 'Too many pods';
  for (const [k, v] of podRequests(pod)) {
    if (v <= 0) continue;
    // 1e-9 absorbs float noise from summing milli-cpu values.
    if ((free.get(k) ?? 0) + 1e-9 < v) return `Insufficient ${k}`;
  }
  return undefined;
}

/**
 * First node in name order that fits, or the scheduler's summary of why none did:
 * `0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable.`
 * Name order keeps placement deterministic for tests; the real scheduler scores instead.
 * `start` skips nodes the caller knows cannot fit (see Lifecycle's scan hints).
 */
export function pickNode(pod: Pod, nodesByName: Node[], freeOf: (n: Node) => Map<string, number>, start = 0): { node: string; index: number } | { reason: string } {
  // Hot path (seeding thousands of pods): a plain fit test, no reason strings.
  const requests = podRequests(pod);
  for (let i = start; i < nodesByName.length; i++) {
    const node = nodesByName[i]!;
    // Selector first: it is cheap, and it spares the free-room walk of nodes the pod cannot use.
    if (!matchesNodeAffinity(pod, node)) continue;
    const free = freeOf(node);
    let room = (free.get('pods') ?? 0) >= 1;
    for (const [k, v] of requests) if (room && v > 0 && (free.get(k) ?? 0) + 1e-9 < v) room = false;
    if (room && unfitReason(pod, node, free) === undefined) return { node: node.metadata.name, index: i };
  }
  const reasons = new Map<string, number>();
  for (const node of nodesByName) {
    const why = unfitReasonOf(pod, node, () => freeOf(node)) ?? 'unknown';
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
  }
  // kube-scheduler sorts the "<count> <reason>" strings themselves (Go sort.Strings).
  const parts = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { reason: `0/${nodesByName.length} nodes are available: ${parts.join(', ')}.` };
}
