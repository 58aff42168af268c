/**
 * ACK's GPU sharing (cGPU) as the simulated scheduler sees it: the gpushare scheduler extender (EXT:
 * AliyunContainerService/gpushare-scheduler-extender@c0b61411) and the gpushare device plugin (GDP:
 * AliyunContainerService/gpushare-device-plugin@45fb8b88), written again from their sources, not from
 * gpu-reflex's functions (docs/sharing.md "ACK cGPU").
 *
 * - A sharing node advertises `aliyun.com/gpu-mem` (GiB, every card's memory together) and
 *   `aliyun.com/gpu-count` (cards) in its capacity (EXT pkg/utils/node.go IsGPUSharingNode,
 *   GetTotalGPUMemory, GetGPUCountInNode; GDP pkg/gpu/nvidia/podmanager.go patches the count in).
 *   Every card has the same share: total / count (EXT pkg/cache/nodeinfo.go NewNodeInfo).
 * - Fit is per card: some card's free memory must cover the pod's request (EXT nodeinfo.go Assume;
 *   its filter's word for a miss is "Insufficient GPU Memory in one device", pkg/scheduler/predicate.go).
 * - At bind the extender takes the tightest card that fits (nodeinfo.go allocateGPUID: the smallest
 *   free memory that still covers the request) and patches the pod's annotations (pkg/utils/pod.go
 *   PatchPodAnnotationSpec; names in pkg/utils/const.go).
 * - A card's used memory is the `ALIYUN_COM_GPU_MEM_POD` of the pods annotated with its index, except
 *   Succeeded and Failed ones (pkg/cache/deviceinfo.go GetUsedGPUMemory).
 * - Cards listed in ConfigMap `kube-system/unhealthy-gpu-<node>`, key `gpus`, comma-separated, are
 *   left out of what is available (nodeinfo.go getUnhealthyGPUs, pkg/cache/configmap.go).
 */
import { isTerminal } from './pods.ts';
import type { Store } from './store.ts';
import type { KubeObject, Node, Pod } from './types.ts';
import { quantityNanos, schedulerUnits } from './quantity.ts';

export const GPU_MEM = 'aliyun.com/gpu-mem';
export const GPU_COUNT = 'aliyun.com/gpu-count';
/** The extender's pod annotations (EXT pkg/utils/const.go). */
export const MEM_IDX = 'ALIYUN_COM_GPU_MEM_IDX';
export const MEM_POD = 'ALIYUN_COM_GPU_MEM_POD';
export const MEM_DEV = 'ALIYUN_COM_GPU_MEM_DEV';
export const MEM_ASSIGNED = 'ALIYUN_COM_GPU_MEM_ASSIGNED';
export const MEM_ASSUME_TIME = 'ALIYUN_COM_GPU_MEM_ASSUME_TIME';
/** The extender's word when no single card has room (EXT pkg/scheduler/predicate.go checkNode). */
export const NO_CARD_FITS = 'Insufficient GPU Memory in one device';

export const UNHEALTHY_GPU_PREFIX = 'unhealthy-gpu-';

/** The ConfigMap (namespace kube-system) whose `gpus` the extender skips for `node`. */
export function unhealthyConfigMapName(node: string): string {
  return `${UNHEALTHY_GPU_PREFIX}${node}`;
}

const units = (v: string | number | undefined): number =>
  v === undefined ? 0 : schedulerUnits(GPU_MEM, quantityNanos(String(v)) ?? 0n);

/** A sharing node's cards and each one's memory (GiB), or undefined for a node that shares none. */
export function cardsOf(node: Node): { count: number; perCard: number } | undefined {
  const cap = node.status?.capacity ?? node.status?.allocatable ?? {};
  const total = units(cap[GPU_MEM]);
  const count = units(cap[GPU_COUNT]);
  if (total <= 0 || count <= 0) return undefined;
  return { count, perCard: Math.floor(total / count) };
}

/** What a pod asks of `aliyun.com/gpu-mem`, summed over its containers (EXT GetGPUMemoryFromPodResource). */
export function gpuMemRequest(pod: Pod): number {
  let n = 0;
  for (const c of pod.spec.containers ?? [])
    n += units(c.resources?.limits?.[GPU_MEM] ?? c.resources?.requests?.[GPU_MEM]);
  return n;
}

/** The card index the extender wrote on the pod (-1 in EXT when absent or not a number). */
export function cardOfPod(pod: Pod): number | undefined {
  const v = pod.metadata.annotations?.[MEM_IDX];
  return v !== undefined && /^\d+$/.test(v) ? Number(v) : undefined;
}

/**
 * The card indices of a ConfigMap's `gpus`, as the extender parses them: split on commas, each
 * through Go's strconv.Atoi. A piece Atoi refuses (" 1", "") is logged there and its id stays 0, so
 * card 0 is skipped: a writer that adds spaces fences card 0 by accident (nodeinfo.go getUnhealthyGPUs).
 */
export function unhealthyCards(cm: KubeObject | undefined): Set<number> {
  const raw = (cm as { data?: Record<string, string> } | undefined)?.data?.gpus;
  const out = new Set<number>();
  if (raw === undefined) return out;
  for (const piece of raw.split(',')) out.add(/^[+-]?\d+$/.test(piece) ? Number(piece) : 0);
  return out;
}

/**
 * Another writer (a person, another tool) replaces the node's ConfigMap `gpus` whole with `gpus`
 * (undefined: the key is dropped); other keys stay. Scripted adversity (stack.ts).
 */
export function replaceUnhealthyCards(store: Pick<Store, 'get' | 'put'>, node: string, gpus: string | undefined): void {
  const name = unhealthyConfigMapName(node);
  const cm = store.get('configmaps', 'kube-system', name) as
    (KubeObject & { data?: Record<string, string> }) | undefined;
  const { gpus: _old, ...others } = cm?.data ?? {};
  const data = gpus === undefined ? others : { ...others, gpus };
  const metadata = cm?.metadata ?? { name, namespace: 'kube-system', uid: `cm-${name}`, resourceVersion: '' };
  store.put('configmaps', { apiVersion: 'v1', kind: 'ConfigMap', ...cm, metadata, data } as KubeObject);
}

/** The node's unhealthy cards, from its ConfigMap in the store (none when it has none). */
export function unhealthyCardsOf(store: Pick<Store, 'get'>, node: string): Set<number> {
  return unhealthyCards(store.get('configmaps', 'kube-system', unhealthyConfigMapName(node)));
}

/**
 * Each card's free memory (GiB) on a sharing node, unhealthy cards left out (undefined there), or
 * undefined for a node that shares none.
 */
export function cardRoom(
  node: Node,
  podsOnNode: readonly Pod[],
  unhealthy: ReadonlySet<number>,
): (number | undefined)[] | undefined {
  const cards = cardsOf(node);
  if (!cards) return undefined;
  const used = Array.from({ length: cards.count }, () => 0);
  for (const p of podsOnNode) {
    const card = cardOfPod(p);
    if (card === undefined || card >= cards.count || isTerminal(p)) continue;
    used[card]! += Number(p.metadata.annotations?.[MEM_POD] ?? 0) || 0;
  }
  return used.map((u, i) => (unhealthy.has(i) ? undefined : cards.perCard - u));
}

/** The tightest card whose free memory covers `request` (EXT allocateGPUID), or undefined. */
export function tightestCard(room: readonly (number | undefined)[], request: number): number | undefined {
  let best: number | undefined;
  room.forEach((free, i) => {
    if (free === undefined || free < request) return;
    if (best === undefined || room[best]! > free) best = i;
  });
  return best;
}

/** The annotations the extender patches onto a pod it binds to `card` (EXT PatchPodAnnotationSpec). */
export function bindAnnotations(pod: Pod, card: number, perCard: number, nowMs: number): Record<string, string> {
  return {
    [MEM_IDX]: String(card),
    [MEM_POD]: String(gpuMemRequest(pod)),
    [MEM_DEV]: String(perCard),
    [MEM_ASSIGNED]: 'false',
    // Unix nanoseconds (time.Now().UnixNano()); the injected clock has milliseconds.
    [MEM_ASSUME_TIME]: `${BigInt(nowMs) * 1_000_000n}`,
  };
}

/** The plugin's Allocate marks the pod assigned (GDP pkg/gpu/nvidia/podutils.go patchPodAnnotationSpecAssigned). */
export function allocatedAnnotations(nowMs: number): Record<string, string> {
  return { [MEM_ASSIGNED]: 'true', [MEM_ASSUME_TIME]: `${BigInt(nowMs) * 1_000_000n}` };
}
