import { cardRoom, gpuMemRequest, NO_CARD_FITS, tightestCard } from './gpushare.ts';
import { holdsResources, podSchedulerRequests } from './pods.ts';
import { requiredAffinity, tolerates } from './predicates.ts';
import { quantityNanos, schedulerUnits } from './quantity.ts';
import type { Node, Pod, Taint } from './types.ts';

/**
 * The scheduler's filter: does a pod fit a node? Pure functions over plain objects, making the
 * checks of kube-scheduler's default Filter plugins that this fleet needs, in their configured
 * order (pkg/scheduler/apis/config/v1/default_plugins.go), the first failure being the node's
 * reason (framework/runtime RunFilterPlugins):
 *
 * 1. NodeUnschedulable (plugins/nodeunschedulable): `spec.unschedulable` unless the pod tolerates
 *    `node.kubernetes.io/unschedulable:NoSchedule`; "node(s) were unschedulable".
 * 2. TaintToleration (plugins/tainttoleration): the first NoSchedule or NoExecute taint no
 *    toleration tolerates (PreferNoSchedule only scores); "node(s) had untolerated taint {k: v}".
 * 3. NodeAffinity (plugins/nodeaffinity): nodeSelector and required node affinity;
 *    "node(s) didn't match Pod's node affinity/selector".
 * 4. NodeResourcesFit (plugins/noderesources/fit.go fitsRequest): one more pod within the node's
 *    `pods` ("Too many pods"), then each requested resource with a non-zero request, extended
 *    ones included, within allocatable minus what bound pods request ("Insufficient <name>").
 * 5. ACK's gpushare extender, on nodes that share GPUs: one card must have the pod's
 *    `aliyun.com/gpu-mem` free (gpushare.ts). Extenders filter the nodes the plugins passed
 *    (kube-scheduler pkg/scheduler/schedule_one.go findNodesThatPassExtenders).
 *
 * The rules themselves are in predicates.ts (taints, selectors) and pod-requests.ts (what a pod
 * requests), each from Kubernetes' source; none comes from the functions.
 */
export { tolerates };

export function matchesNodeAffinity(pod: Pod, node: Node): boolean {
  return affinityOf(pod)(viewOf(node));
}

/** What the filter reads of a node, gathered once per stored version of it (nodes are immutable snapshots). */
export interface NodeView {
  node: Node;
  name: string;
  labels: Readonly<Record<string, string>>;
  unschedulable: boolean;
  /** The node's Ready condition is there and not True. */
  notReady: boolean;
  taints: readonly Taint[];
}

/**
 * Why views and not the nodes themselves: a stored node's nested objects come from object spreads
 * (`{ ...c, lastHeartbeatTime }`), and V8 gives each such object a hidden class of its own, so
 * reading `status.conditions[i].type` across 10,000 nodes misses every inline cache (~1 µs a read).
 * A shape that fits nowhere counts the reasons over every node of the fleet: in the 10,000-node
 * storm, 100 shapes did, and those reads were most of the simulator's scheduling time. A view is
 * built by one literal (one hidden class); the scheduler keeps them in name order (Lifecycle).
 */
export function nodeView(node: Node): NodeView {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    node,
    name: node.metadata.name,
    labels: node.metadata.labels ?? {},
    unschedulable: Boolean(node.spec?.unschedulable),
    notReady: ready !== undefined && ready.status !== 'True',
    taints: node.spec?.taints ?? [],
  };
}

/** Views of nodes met one at a time (unfitReason, matchesNodeAffinity), kept while their node object lives. */
const views = new WeakMap<Node, NodeView>();

function viewOf(node: Node): NodeView {
  let v = views.get(node);
  if (!v) views.set(node, (v = nodeView(node)));
  return v;
}

/**
 * The pod's nodeSelector and required node affinity as one test, its entries read once per pod,
 * not once per node.
 */
function affinityOf(pod: Pod): (node: NodeView) => boolean {
  const matches = requiredAffinity(pod);
  return (node) => matches(node.labels, node.name);
}

/**
 * What a node has left, in kube-scheduler's integers (millicores for cpu, whole units otherwise,
 * rounded up: quantity.ts schedulerUnits): allocatable minus the requests of pods bound to it.
 * A node object without `pods` gets 110, the kubelet's default maxPods (a fleet-file shorthand:
 * every real kubelet reports it).
 */
export function freeOn(node: Node, podsOnNode: Pod[], unhealthyCards?: ReadonlySet<number>): Map<string, number> {
  const free = new Map<string, number>();
  const cards = cardRoom(node, podsOnNode, unhealthyCards ?? new Set());
  if (cards) roomByCard.set(free, cards);
  for (const [k, v] of Object.entries(node.status?.allocatable ?? node.status?.capacity ?? {}))
    free.set(k, schedulerUnits(k, quantityNanos(v) ?? 0n));
  if (!free.has('pods')) free.set('pods', 110);
  for (const p of podsOnNode) {
    if (!holdsResources(p)) continue;
    free.set('pods', (free.get('pods') ?? 0) - 1);
    for (const [k, v] of podSchedulerRequests(p)) free.set(k, (free.get(k) ?? 0) - v);
  }
  return free;
}

/**
 * A sharing node's free memory per card (gpushare.ts cardRoom), kept beside the free room freeOn
 * computed with it, so the two are dropped together when the node's pods or cards change.
 */
const roomByCard = new WeakMap<Map<string, number>, (number | undefined)[]>();

export function cardRoomOf(free: Map<string, number>): readonly (number | undefined)[] | undefined {
  return roomByCard.get(free);
}

/** Why `pod` cannot go to `node`, in kube-scheduler's words, or undefined when it fits. */
export function unfitReason(pod: Pod, node: Node, free: Map<string, number>): string | undefined {
  return unfitFilter(pod)(viewOf(node), () => free);
}

const UNSCHEDULABLE: Taint = { key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' };
const NOT_READY: Taint = { key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' };

/**
 * unfitReason for one pod over many nodes: what depends only on the pod (its tolerations of the
 * cordon and not-ready taints, its selector, its requests) is worked out once, so the scheduler's
 * count of why no node fits (every node of the fleet, for each shape that fits nowhere) costs a
 * few field reads per node. The node's free room is computed only when the checks get that far:
 * a node the pod's selector rules out costs no walk over its pods.
 */
function unfitFilter(pod: Pod): (v: NodeView, freeOf: () => Map<string, number>) => string | undefined {
  const tolerations = pod.spec.tolerations;
  const cordonOk = tolerates(tolerations, UNSCHEDULABLE);
  const notReadyOk = tolerates(tolerations, NOT_READY);
  const matches = affinityOf(pod);
  const requests = [...podSchedulerRequests(pod)].filter(([, v]) => v > 0);
  const gpuMem = gpuMemRequest(pod);
  return (v, freeOf) => {
    if (v.unschedulable && !cordonOk) return 'node(s) were unschedulable';
    // The node lifecycle controller taints a node whose Ready condition is not True.
    if (v.notReady && !notReadyOk) return 'node(s) had untolerated taint {node.kubernetes.io/not-ready: }';
    for (const t of v.taints) {
      if (t.effect !== 'NoSchedule' && t.effect !== 'NoExecute') continue;
      if (!tolerates(tolerations, t)) return `node(s) had untolerated taint {${t.key}: ${t.value ?? ''}}`;
    }
    if (!matches(v)) return "node(s) didn't match Pod's node affinity/selector";
    const free = freeOf();
    if ((free.get('pods') ?? 0) < 1) return 'Too many pods';
    for (const [k, n] of requests) {
      if ((free.get(k) ?? 0) < n) return `Insufficient ${k}`;
    }
    const cards = gpuMem > 0 ? roomByCard.get(free) : undefined;
    if (cards && tightestCard(cards, gpuMem) === undefined) return NO_CARD_FITS;
    return undefined;
  };
}

/**
 * First node in name order that fits, or the scheduler's summary of why none did:
 * `0/3 nodes are available: 2 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable.`
 * Name order keeps placement deterministic for tests; the real scheduler scores instead.
 * `start` skips nodes the caller knows cannot fit (see Lifecycle's scan hints).
 */
export function pickNode(
  pod: Pod,
  byName: readonly NodeView[],
  freeOf: (n: Node) => Map<string, number>,
  start = 0,
): { node: string; index: number } | { reason: string } {
  // Hot path (seeding thousands of pods): a plain fit test, no reason strings.
  const requests = podSchedulerRequests(pod);
  const matches = affinityOf(pod);
  const unfit = unfitFilter(pod);
  for (let i = start; i < byName.length; i++) {
    const v = byName[i]!;
    // Selector first: it is cheap, and it spares the free-room walk of nodes the pod cannot use.
    if (!matches(v)) continue;
    const free = freeOf(v.node);
    let room = (free.get('pods') ?? 0) >= 1;
    for (const [k, n] of requests) if (room && n > 0 && (free.get(k) ?? 0) < n) room = false;
    if (room && unfit(v, () => free) === undefined) return { node: v.name, index: i };
  }
  const reasons = new Map<string, number>();
  for (const v of byName) {
    const why = unfit(v, () => freeOf(v.node)) ?? 'unknown';
    reasons.set(why, (reasons.get(why) ?? 0) + 1);
  }
  // kube-scheduler sorts the "<count> <reason>" strings themselves (Go sort.Strings).
  const parts = [...reasons.entries()].map(([r, n]) => `${n} ${r}`).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return { reason: `0/${byName.length} nodes are available: ${parts.join(', ')}.` };
}

/**
 * Pod scheduling readiness (kubernetes.io/docs/concepts/scheduling-eviction/pod-scheduling-readiness;
 * kube-scheduler's SchedulingGates PreEnqueue plugin, pkg/scheduler/framework/plugins/schedulinggates):
 * a pod with any entry in `spec.schedulingGates` is not tried at all until every gate is removed
 * (gates may only be removed after creation, never added). Meanwhile its `PodScheduled` condition is
 * `False` with reason `SchedulingGated` (pkg/apis/core/types.go `PodReasonSchedulingGated`), not
 * `Unschedulable`: nothing was found wanting, nothing was tried.
 */
export const SCHEDULING_GATED = 'SchedulingGated';
export const SCHEDULING_GATED_MESSAGE = 'Scheduling is blocked due to non-empty scheduling gates';

/** Does the pod carry a scheduling gate? */
export function schedulingGated(pod: Pod): boolean {
  const gates = pod.spec.schedulingGates;
  return Array.isArray(gates) && gates.length > 0;
}

/** The reason of the pod's `PodScheduled` condition, when it has one. */
export function scheduledReason(pod: Pod): string | undefined {
  return pod.status?.conditions?.find((c) => c.type === 'PodScheduled')?.reason;
}
