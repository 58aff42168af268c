/**
 * Shared-GPU pods that an existing cGPU node can take now are no reason to buy a node: the
 * gpushare extender will bind them there. cluster-autoscaler drops such pods from its scale-up
 * input the same way (kubernetes/autoscaler cluster-autoscaler/core/podlistprocessor
 * filter_out_schedulable.go). The room is read card by card (core/cards.ts `cardsFree`): a node
 * with 12 GiB free in all, 6 on each of two cards, has no room for an 8 GiB share.
 *
 * Only pods asking for `aliyun.com/gpu-mem` or `aliyun.com/gpu-core.percentage` are checked:
 * whole-GPU pods keep waiting `pendingSeconds` for the scheduler as before.
 */
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { parseQuantity } from '../adapters/kube/quantity.ts';
import { cardArray, cardNeed, cardsFree, tightestCard } from './core/cards.ts';
import { whyNot, type GpuCard } from './core/fit.ts';
import type { PendingPod } from './core/planner.ts';
import { cardsOfNode } from './core/template.ts';

/** What a node has left: allocatable less the requests of the pods bound to it, and its cards' free share. */
interface Room {
  node: NodeInfo;
  free: Record<string, number>;
  cards: GpuCard[];
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
  if (!cards) return undefined;
  const on = pods.filter((p) => p.nodeName === node.name && holds(p));
  const used = on.map((p) => ({ requests: p.requests ?? p.extendedResources, annotations: p.annotations }));
  for (const u of used) for (const [k, v] of Object.entries(u.requests)) free[k] = (free[k] ?? 0) - v;
  free.pods = (free.pods ?? 110) - on.length;
  return { node, free, cards: cardsFree(cards, used) };
}

/**
 * Splits the pending pods into those to plan for and the shared-GPU pods an existing node has
 * room for now (each such pod takes its room, so two pods do not count one card twice).
 */
export function withoutRoomOnExisting(
  pending: readonly PendingPod[],
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
): { plan: PendingPod[]; fitsExisting: { pod: string; node: string }[] } {
  const shared = pending.filter((p) => cardNeed(p.requests) !== undefined);
  if (shared.length === 0) return { plan: [...pending], fitsExisting: [] };
  const rooms = nodes.map((n) => roomOf(n, pods)).filter((r): r is Room => r !== undefined);
  const fitsExisting: { pod: string; node: string }[] = [];
  const placed = new Set<string>();
  for (const p of shared) {
    const room = rooms.find(
      (r) =>
        whyNot(p, {
          labels: r.node.labels,
          taints: r.node.taints,
          allocatable: r.free,
          name: r.node.name,
          cards: r.cards,
        }) === undefined,
    );
    if (!room) continue;
    for (const [k, v] of Object.entries(p.requests)) room.free[k] = (room.free[k] ?? 0) - v;
    room.free.pods = (room.free.pods ?? 0) - 1;
    // The extender's binpack: the tightest card that holds it (whyNot said one does).
    const need = cardNeed(p.requests)!;
    const i = tightestCard(cardArray(room.cards), need);
    room.cards[i] = { memory: room.cards[i]!.memory - need.memory, core: room.cards[i]!.core - need.core };
    placed.add(p.key);
    fitsExisting.push({ pod: p.key, node: room.node.name });
  }
  return { plan: pending.filter((p) => !placed.has(p.key)), fitsExisting };
}
