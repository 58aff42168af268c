/**
 * Pods that an existing node has room for now are no reason to buy a node: the scheduler will bind
 * them there at its next try (room freed since it marked them Unschedulable). cluster-autoscaler
 * drops such pods from its scale-up input the same way (kubernetes/autoscaler cluster-autoscaler/
 * core/podlistprocessor filter_out_schedulable.go), placing each in turn so two pods do not count
 * one node's room twice. Nodes on their way are the planner's in-flight count (core/planner.ts).
 *
 * The fit is core/fit.ts's: selectors, required node affinity, taints, every requested resource
 * against allocatable less the bound pods' requests, and on cGPU nodes card by card (core/cards.ts
 * `cardsFree`: a node with 12 GiB free in all, 6 on each of two cards, has no room for an 8 GiB
 * share). Required pod anti-affinity on `kubernetes.io/hostname` is kept both ways, as the
 * scheduler's InterPodAffinity filter does (anti-affinity.ts): a pod does not fit a node running a
 * pod it, or that pod, is anti-affine to (pods placed by this pass included). Inter-pod affinity,
 * other topology keys and topology spread are not modelled: a pod they keep off a node with room is
 * still logged as fitting it.
 */
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { apartAllows } from './anti-affinity.ts';
import { cardArray, cardNeed, cardsFree, tightestCard } from './core/cards.ts';
import { whyNot, type GpuCard } from './core/fit.ts';
import type { PendingPod } from './core/planner.ts';
import { cardsOfNode } from './core/template.ts';

/** What a node has left: allocatable less the requests of the pods bound to it, and its cards' free share. */
interface Room {
  node: NodeInfo;
  /** The pods there, and those this pass placed there (for anti-affinity). */
  pods: PodInfo[];
  free: Record<string, number>;
  cards?: GpuCard[];
}

const holds = (p: PodInfo) => !p.terminating && p.phase !== 'Succeeded' && p.phase !== 'Failed';

function roomOf(node: NodeInfo, pods: readonly PodInfo[]): Room | undefined {
  if (node.ready !== true || node.unschedulable) return undefined;
  const free: Record<string, number> = {};
  for (const [k, v] of Object.entries(node.allocatable)) {
    try {
      free[k] = parseQuantity(v);
    } catch {
      // An unreadable quantity offers nothing.
    }
  }
  const cards = cardsOfNode(free);
  const on = pods.filter((p) => p.nodeName === node.name && holds(p));
  const used = on.map((p) => ({ requests: p.requests ?? p.extendedResources, annotations: p.annotations }));
  for (const u of used) for (const [k, v] of Object.entries(u.requests)) free[k] = (free[k] ?? 0) - v;
  // The kubelet's default maxPods when the node says none (kubelet config `maxPods`).
  free.pods = (free.pods ?? 110) - on.length;
  return { node, pods: on, free, ...(cards ? { cards: cardsFree(cards, used) } : {}) };
}

/**
 * Splits the pending pods into those to plan for and those an existing node has room for now (each
 * such pod takes its room, so two pods do not count one node or card twice).
 */
export function withoutRoomOnExisting(
  pending: readonly PendingPod[],
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
): { plan: PendingPod[]; fitsExisting: { pod: string; node: string }[] } {
  if (pending.length === 0) return { plan: [], fitsExisting: [] };
  const rooms = nodes.map((n) => roomOf(n, pods)).filter((r): r is Room => r !== undefined);
  const fitsExisting: { pod: string; node: string }[] = [];
  const placed = new Set<string>();
  const infoOf = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  for (const p of pending) {
    const info = infoOf.get(p.key);
    const room = rooms.find(
      (r) =>
        (!info || apartAllows(info, r.pods)) &&
        whyNot(p, {
          labels: r.node.labels,
          taints: r.node.taints,
          allocatable: r.free,
          name: r.node.name,
          ...(r.cards ? { cards: r.cards } : {}),
        }) === undefined,
    );
    if (!room) continue;
    for (const [k, v] of Object.entries(p.requests)) room.free[k] = (room.free[k] ?? 0) - v;
    room.free.pods = (room.free.pods ?? 0) - 1;
    // The extender's binpack: the tightest card that holds it (whyNot said one does).
    const need = cardNeed(p.requests);
    if (need && room.cards) {
      const i = tightestCard(cardArray(room.cards), need);
      room.cards[i] = { memory: room.cards[i]!.memory - need.memory, core: room.cards[i]!.core - need.core };
    }
    placed.add(p.key);
    if (info) room.pods.push(info);
    fitsExisting.push({ pod: p.key, node: room.node.name });
  }
  return { plan: pending.filter((p) => !placed.has(p.key)), fitsExisting };
}
