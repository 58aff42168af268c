/**
 * The ACK cGPU fence (pure, docs/sharing.md "ACK cGPU"). A node that shares its GPUs through ACK's
 * gpushare stack advertises `aliyun.com/gpu-mem` and `aliyun.com/gpu-count`, and pods are placed on
 * a card by its scheduler extender, not by a device plugin's healthy devices. ACK documents
 * `unhealthyDevices.json` for exclusive GPU scheduling only, and the gpushare device plugin never
 * reads it (AliyunContainerService/gpushare-device-plugin@45fb8b88 pkg/gpu/nvidia: no such read):
 * on a sharing node that file would fence nothing. What the extender does honour is ConfigMap
 * `kube-system/unhealthy-gpu-<node>`, key `gpus`, the card indices it skips
 * (gpushare-scheduler-extender@c0b61411 pkg/cache/nodeinfo.go getUnhealthyGPUs). So there the fence
 * is the card's index in that ConfigMap, merged with other writers' entries, verified when the
 * ConfigMap lists it, held and written again like the other backends, and unlisted on restore
 * (never an entry that was there before us).
 */
import { fenceBackendOf, type FenceBackend, type Policy } from './policy.ts';
import { isOpen, type FenceState, type Incident, type NodeState } from './state.ts';
import type { NodeFacts } from './types.ts';
import { backendOf, fenced } from './fence.ts';
import type { FenceCheck } from './fence-check.ts';
import type { CardFence } from '../../lib/plan.ts';

const MINUTE = 60_000;

/** `ack.node.gpu.schedule` values that share a node's GPUs (alibabacloud.com/help/doc-detail/191140.html). */
const SHARING_MODES: ReadonlySet<string> = new Set(['cgpu', 'core_mem', 'share', 'mps']);
export const GPU_SCHEDULE_LABEL = 'ack.node.gpu.schedule';

/** A node whose GPUs ACK shares: its scheduling label says so, or it advertises gpushare memory. */
export function sharesCards(node: Pick<NodeFacts, 'labels' | 'capacity' | 'allocatable'>): boolean {
  if (SHARING_MODES.has(node.labels[GPU_SCHEDULE_LABEL] ?? '')) return true;
  return Number((node.capacity ?? node.allocatable)?.['aliyun.com/gpu-mem'] ?? 0) > 0;
}

/**
 * The fence backend for one node: the pool's, except that the ACK file becomes the gpushare
 * ConfigMap on a node that shares its GPUs (the file is for exclusive GPUs: see the file comment).
 */
export function fenceBackendFor(
  policy: Pick<Policy, 'fence' | 'pools'>,
  pool: string,
  node: Pick<NodeFacts, 'labels' | 'capacity' | 'allocatable'>,
): FenceBackend {
  const b = fenceBackendOf(policy, pool);
  return b === 'ack-file' && sharesCards(node) ? 'ack-cgpu' : b;
}

/** The open incidents whose card the ConfigMap should list now. */
function held(i: Incident): boolean {
  return isOpen(i) && fenced(i) && backendOf(i) === 'ack-cgpu' && i.gpuIndex !== undefined;
}

/** Whether the card was listed before our fence (then another writer's entry: never ours to remove). */
export function listedBefore(i: Incident, node: Pick<NodeFacts, 'cards'>): boolean | undefined {
  return i.gpuIndex === undefined || !node.cards ? undefined : node.cards.listed.includes(i.gpuIndex);
}

/**
 * Verified by identity: the ConfigMap lists this card. A card with no index cannot be named: the
 * node is tainted at once. The ConfigMap not read (no access in this deployment): waits, then falls back.
 */
export function checkCards(
  i: Incident,
  node: Pick<NodeFacts, 'name' | 'cards'>,
  now: Date,
  policy: Pick<Policy, 'fence'>,
): FenceCheck {
  const f = i.fence!;
  const at = now.toISOString();
  const cm = `kube-system/unhealthy-gpu-${node.name}`;
  if (i.gpuIndex === undefined)
    return fallBack(i, f, at, `${i.gpu} has no card index on record, so ${cm} cannot name it`);
  const card = `card ${i.gpuIndex} (${i.gpu})`;
  const listed = node.cards?.listed.includes(i.gpuIndex);
  if (f.verifiedAt === undefined) {
    if (listed)
      return {
        kind: 'verified',
        incident: { ...i, fence: { ...f, verifiedAt: at } },
        why: `${card} is fenced: ${cm} lists it, and ACK's gpushare extender places no pod on it`,
      };
    if (now.getTime() - Date.parse(i.outAt ?? i.since) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
    const seen = node.cards ? `${cm} does not list it` : `${cm} was not read (no access in this deployment)`;
    return fallBack(i, f, at, `${card} was not fenced within ${policy.fence.verifyMinutes} min (ack-cgpu: ${seen})`);
  }
  if (!node.cards) return { kind: 'wait' };
  if (listed) {
    if (f.driftAt === undefined) return { kind: 'wait' };
    const { driftAt: _gone, ...rest } = f;
    return {
      kind: 'drift',
      incident: { ...i, fence: rest },
      why: `the fence of ${card} holds again: ${cm} lists it (it was missing from ${f.driftAt})`,
    };
  }
  if (f.driftAt === undefined)
    return {
      kind: 'drift',
      incident: { ...i, fence: { ...f, driftAt: at } },
      why: `the fence of ${card} no longer holds: someone took it out of ${cm}; listing it again`,
    };
  if (now.getTime() - Date.parse(f.driftAt) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  return fallBack(
    i,
    f,
    at,
    `${card} has been missing from ${cm} since ${f.driftAt} and could not be listed again ` +
      `within ${policy.fence.verifyMinutes} min`,
  );
}

function fallBack(i: Incident, f: FenceState, at: string, why: string): FenceCheck {
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
    why: `${why}: the node is tainted NoSchedule instead, until the GPU is repaired`,
  };
}

/**
 * The cards the node's ConfigMap should list for this state, against those it lists: each card an
 * open `ack-cgpu` incident holds out (fallen back or not: the entry still keeps pods off it), and
 * none of those our closed incidents listed, unless an open one still holds the card or the entry
 * was another writer's before us. Undefined when nothing changes, or the ConfigMap was not read.
 */
export function cardFenceChange(
  state: Pick<NodeState, 'incidents'>,
  node: Pick<NodeFacts, 'name' | 'cards'>,
): CardFence | undefined {
  if (!node.cards) return undefined;
  const listed = new Set(node.cards.listed);
  const want = new Set(state.incidents.filter(held).map((i) => i.gpuIndex!));
  const ours = state.incidents.filter(
    (i) =>
      !isOpen(i) &&
      fenced(i) &&
      !i.unfencedAt &&
      backendOf(i) === 'ack-cgpu' &&
      i.gpuIndex !== undefined &&
      i.fence?.listedBefore !== true,
  );
  const add = [...want].filter((c) => !listed.has(c)).sort((a, b) => a - b);
  const remove = [...new Set(ours.map((i) => i.gpuIndex!))]
    .filter((c) => listed.has(c) && !want.has(c))
    .sort((a, b) => a - b);
  return add.length > 0 || remove.length > 0 ? { node: node.name, add, remove } : undefined;
}

/** A closed `ack-cgpu` incident's fence is lifted once the ConfigMap no longer lists its card (or never was ours). */
export function cardsLifted(i: Incident, node: Pick<NodeFacts, 'cards'>, now: Date): Incident | undefined {
  if (isOpen(i) || !fenced(i) || i.unfencedAt || backendOf(i) !== 'ack-cgpu' || !node.cards) return undefined;
  const gone = i.gpuIndex === undefined || i.fence?.listedBefore === true || !node.cards.listed.includes(i.gpuIndex);
  return gone ? { ...i, unfencedAt: now.toISOString() } : undefined;
}
