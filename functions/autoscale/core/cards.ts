/**
 * ACK cGPU (GPU sharing) fit, card by card. A node in a sharing mode offers its GPUs' memory as
 * `aliyun.com/gpu-mem` (GiB) and, in `core_mem` mode, their compute as
 * `aliyun.com/gpu-core.percentage` (100 per card); the node's totals are the sum over its cards.
 * But a pod's share is carved out of one card: the gpushare scheduler extender lets a pod onto a
 * node only when one card's free memory covers its request, and under binpack it takes the
 * tightest such card (AliyunContainerService/gpushare-scheduler-extender pkg/cache/nodeinfo.go;
 * alibabacloud.com/help/doc-detail/191140.html). So a 20 GiB pod fits no 2×T4 node (16 GiB
 * cards), though the node's 32 GiB total would say it does. Pure.
 */
import type { GpuCard, NodeTemplate, Resources } from './fit.ts';

export const GPU_MEM = 'aliyun.com/gpu-mem';
export const GPU_CORE = 'aliyun.com/gpu-core.percentage';
export const GPU_COUNT = 'aliyun.com/gpu-count';
/** The extender's annotation naming the card a pod was given (pkg/utils/const.go). */
export const GPU_MEM_IDX_ANNOTATION = 'ALIYUN_COM_GPU_MEM_IDX';
/** Core shares are asked in steps of 5 percent (ACK cGPU docs, core_mem mode). */
const CORE_STEP = 5;

/** What a pod needs of one card, or undefined when it asks for no shared GPU. */
export function cardNeed(requests: Resources): GpuCard | undefined {
  const memory = requests[GPU_MEM] ?? 0;
  const core = requests[GPU_CORE] ?? 0;
  return memory > 0 || core > 0 ? { memory, core } : undefined;
}

/** The card binpack gives `need` (the least free memory that still covers it; the first of equals), or -1. */
export function tightestCard(cards: ArrayLike<number>, need: GpuCard): number {
  let pick = -1;
  for (let i = 0; i + 1 < cards.length; i += 2) {
    if (cards[i]! < need.memory || cards[i + 1]! < need.core) continue;
    if (pick < 0 || cards[i]! < cards[pick]!) pick = i;
  }
  return pick < 0 ? -1 : pick / 2;
}

/** Cards as the planner keeps them: free memory and free core of each card, side by side. */
export function cardArray(cards: readonly GpuCard[]): Float64Array {
  return Float64Array.from(cards.flatMap((c) => [c.memory, c.core]));
}

/** Places `n` pods needing `need` on the cards, each on the tightest card that holds it; how many it placed. */
export function placeOnCards(cards: Float64Array, need: GpuCard, n: number): number {
  for (let k = 0; k < n; k++) {
    const i = tightestCard(cards, need);
    if (i < 0) return k;
    cards[2 * i]! -= need.memory;
    cards[2 * i + 1]! -= need.core;
  }
  return n;
}

/** How many of up to `limit` pods needing `need` the cards take (nothing changes). */
export function fitOnCards(cards: Float64Array, need: GpuCard, limit: number): number {
  return placeOnCards(cards.slice(), need, limit);
}

const GiB = (n: number) => `${Math.round(n * 100) / 100} GiB`;

/** Undefined when the pod's shared-GPU request fits one card of the node; otherwise why not. */
export function whyNotOnCards(requests: Resources, node: Pick<NodeTemplate, 'cards'>): string | undefined {
  const need = cardNeed(requests);
  if (!need) return undefined;
  if (need.core % CORE_STEP !== 0) return `${GPU_CORE} ${need.core} is not a multiple of ${CORE_STEP} (ACK cGPU)`;
  if (!node.cards) return undefined;
  if (tightestCard(cardArray(node.cards), need) >= 0) return undefined;
  const free = node.cards.map((c) => (need.core > 0 ? `${GiB(c.memory)}/${c.core}%` : GiB(c.memory))).join(', ');
  const wants = need.core > 0 ? `${GiB(need.memory)} and ${need.core}% of one card` : `${GiB(need.memory)} on one card`;
  return `needs ${wants} (${GPU_MEM}); its cards have ${free} free`;
}

/**
 * The newer ACK scheduler's record of where a pod's shares went: JSON `{container: {cardIndex:
 * amount}}` (kubeflow/arena pkg/apis/types/const.go, utils/pods.go).
 */
export const GPU_ALLOCATION_ANNOTATION = 'scheduler.framework.gpushare.allocation';

/** Memory per card index from the allocation annotation; undefined when absent or unreadable. */
function allocationOf(raw: string | undefined, cards: number): Map<number, number> | undefined {
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const out = new Map<number, number>();
  for (const perCard of Object.values(parsed)) {
    if (typeof perCard !== 'object' || perCard === null) return undefined;
    for (const [idx, amount] of Object.entries(perCard)) {
      if (!/^[0-9]+$/.test(idx) || Number(idx) >= cards || typeof amount !== 'number') return undefined;
      out.set(Number(idx), (out.get(Number(idx)) ?? 0) + amount);
    }
  }
  return out.size > 0 ? out : undefined;
}

/**
 * Each card's free share on a node that runs `pods`. A pod's `aliyun.com/gpu-mem` comes off the
 * cards the newer scheduler's allocation annotation names, else off the card the extender's
 * `ALIYUN_COM_GPU_MEM_IDX` annotation names (its core share off the same cards). A pod with a
 * share and neither annotation readable is taken off every card: where it sits is unknown, and
 * unknown room is no room.
 */
export function cardsFree(
  cards: readonly GpuCard[],
  pods: readonly { requests: Resources; annotations: Readonly<Record<string, string>> }[],
): GpuCard[] {
  const free = cards.map((c) => ({ ...c }));
  const take = (i: number, memory: number, core: number) => {
    free[i]!.memory = Math.max(0, free[i]!.memory - memory);
    free[i]!.core = Math.max(0, free[i]!.core - core);
  };
  for (const p of pods) {
    const need = cardNeed(p.requests);
    if (!need) continue;
    const allocation = allocationOf(p.annotations[GPU_ALLOCATION_ANNOTATION], free.length);
    if (allocation) {
      for (const [i, memory] of allocation) take(i, memory, need.core);
      continue;
    }
    const raw = p.annotations[GPU_MEM_IDX_ANNOTATION];
    const idx = raw !== undefined && /^[0-9]+$/.test(raw) && Number(raw) < free.length ? Number(raw) : -1;
    for (let i = 0; i < free.length; i++) if (idx < 0 || i === idx) take(i, need.memory, need.core);
  }
  return free;
}
