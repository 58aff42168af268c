/**
 * Which incidents hold their GPU out of scheduling, through which backend, and whether the node
 * shows it (pure). The backends (policy-schema.ts `FENCE_BACKENDS`): the ACK device plugin's file (the node
 * agent writes it), NVIDIA's device plugin latch (it fences critical XIDs by itself), a DRA
 * DeviceTaintRule (fence-dra.ts), or a node taint. A fence is real only when the node shows it;
 * one that does not within `fence.verifyMinutes` is escalated one scope up (the node is tainted).
 */
import { readMigInventory } from '../../../events/index.ts';
import type { FenceBackend, Policy } from './policy.ts';
import { isOpen, type Incident, type NodeState } from './state.ts';
import type { NodeFacts, PodFacts } from './types.ts';
import { listedBefore } from './fence-cgpu.ts';
import { sharingOf } from './sharing.ts';

/**
 * Whether the incident holds its GPU out of scheduling: every whole-GPU quarantine, whatever raised
 * it (an XID, a health condition, a person), from the moment it took the GPU out, and still while it
 * climbs on to a node repair. "No new work lands on it" is only true of a fenced GPU (issue #27).
 * MIG-instance incidents are not fenced here: the fence files and the plugin latch name whole GPUs.
 */
export function fenced(i: Incident): boolean {
  if (i.outAt === undefined || i.scope !== 'gpu' || !i.gpu) return false;
  return i.action === 'quarantine-gpu' || i.ladder.slice(0, i.level).includes('quarantine-gpu');
}

/** XIDs NVIDIA's device plugin does not mark a GPU unhealthy for (its default skip list). */
export const NVIDIA_PLUGIN_SKIPPED_XIDS: ReadonlySet<number> = new Set([13, 31, 43, 45, 68, 109]);
const PLUGIN_SKIPS = NVIDIA_PLUGIN_SKIPPED_XIDS;

/** Whether NVIDIA's device plugin fences this incident's GPU by itself (a critical XID it watches). */
export function pluginFences(i: Pick<Incident, 'xid' | 'condition' | 'trigger'>): boolean {
  return i.xid !== undefined && i.condition === undefined && i.trigger !== 'orphan' && !PLUGIN_SKIPS.has(i.xid);
}

/**
 * The fence an incident gets when it first holds its GPU out: the pool's backend, escalated to a
 * node taint at once where that backend cannot fence this fault (NVIDIA's plugin and a health
 * condition). `node`: the node as read before the fence, to record how many GPU devices were already
 * out of its allocatable for other reasons (`outBefore`: ACK's own isolation, a latch on an XID we only
 * observe, a GPU missing at boot), so that a count never takes them for ours (fence-check.ts).
 * Incidents that fence nothing, or already carry their fence, are returned as they are.
 */
export function withFence(
  i: Incident,
  backend: FenceBackend,
  node?: Pick<NodeFacts, 'capacity' | 'allocatable' | 'annotations' | 'cards' | 'labels'>,
  state?: Pick<NodeState, 'incidents'>,
): Incident {
  if (i.fence || !isOpen(i) || !fenced(i)) return i;
  if (backend === 'ack-cgpu') {
    // Counted by identity, not by allocatable: what matters is whether the card was listed before us.
    const before = node ? listedBefore(i, node) : undefined;
    return { ...i, fence: { backend, ...(before !== undefined ? { listedBefore: before } : {}) } };
  }
  if (backend === 'nvidia-plugin' && !pluginFences(i))
    return { ...i, fence: { backend, fallback: 'not-fenced-by-plugin', fallbackAt: i.outAt! } };
  // NVIDIA's plugin keys health by the parent GPU's UUID: on a MIG GPU its latch takes one instance
  // out and leaves the rest schedulable (k8s-device-plugin internal/rm/health.go; fencing.md,
  // corrections 2026-12-01). No fence, then: the node taint at once, and the plugin restart after
  // the repair still undoes the one it latched.
  if (backend === 'nvidia-plugin' && node && i.gpu && migInstancesOf(node, i.gpu) > 1)
    return { ...i, fence: { backend, fallback: 'plugin-latches-one-mig-device', fallbackAt: i.outAt! } };
  const out = node ? devicesOut(node) : undefined;
  // NVIDIA's plugin latches the GPU on the very XID that raised this incident, often before the
  // node is read: what is out then may already be this GPU, so its devices are not counted as others'.
  const self = node && backend === 'nvidia-plugin' && i.gpu ? devicesOfGpu(node, i.gpu) : 0;
  const ours =
    self + (node && state ? [...pluginFencedGpus(state, i)].reduce((n, g) => n + devicesOfGpu(node, g), 0) : 0);
  return { ...i, fence: { backend, ...(out !== undefined ? { outBefore: Math.max(0, out - ours) } : {}) } };
}

/**
 * How many devices one GPU gives the node's allocatable: its MIG instances, as the node agent's
 * inventory lists them (NVIDIA's plugin advertises each as its own `nvidia.com/mig-<profile>`
 * device), else one whole GPU — times the replicas of a shared GPU: time-slicing and MPS advertise
 * `replicas` devices per GPU, `<UUID>::<i>` (k8s-device-plugin internal/rm/device_map.go
 * `updateDeviceMapWithReplicas`), so a card is out only when all of them are (issue #32).
 */
export function devicesOfGpu(node: Pick<NodeFacts, 'annotations' | 'labels' | 'capacity'>, gpu: string): number {
  return migInstancesOf(node, gpu) * sharingOf(node).replicas;
}

/** The MIG instances of one GPU as the agent's inventory lists them (1: a whole GPU). */
export function migInstancesOf(node: Pick<NodeFacts, 'annotations'>, gpu: string): number {
  const listed = readMigInventory(node.annotations).inventory?.gpus.find((g) => g.uuid === gpu);
  return listed && listed.instances.length > 0 ? listed.instances.length : 1;
}

/** The backend an incident's GPU is fenced by (incidents from before backends existed: the ACK file). */
export function backendOf(i: Incident): FenceBackend {
  return i.fence?.backend ?? 'ack-file';
}

/** An open incident whose GPU is held out by a node taint rather than a per-GPU fence. */
export function fencedByTaint(i: Incident): boolean {
  return isOpen(i) && fenced(i) && (backendOf(i) === 'cordon' || i.fence?.fallback !== undefined);
}

/**
 * Extended resources a device plugin reports GPUs under: whole GPUs, MIG instances, and their renamed
 * shared replicas (`nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb.shared`: api/config/v1/replicas.go).
 */
const GPU_DEVICE = /^nvidia\.com\/(gpu|gpu\.shared|mig-.+)$/;

/** Devices the node's capacity has and its allocatable does not (what the device plugin holds out). */
export function devicesOut(node: Pick<NodeFacts, 'capacity' | 'allocatable'>): number | undefined {
  if (!node.capacity || !node.allocatable) return undefined;
  let out = 0;
  let seen = false;
  for (const [k, v] of Object.entries(node.capacity)) {
    if (!GPU_DEVICE.test(k)) continue;
    seen = true;
    out += Math.max(0, (Number(v) || 0) - (Number(node.allocatable[k]) || 0));
  }
  return seen ? out : undefined;
}

/** Open incidents of a state whose GPU a device plugin should be holding out now (one per GPU). */
export function pluginFencedGpus(state: Pick<NodeState, 'incidents'>, except?: Incident): Set<string> {
  const gpus = new Set<string>();
  for (const x of state.incidents) {
    if (x.key === except?.key || !isOpen(x) || !fenced(x) || !x.gpu || x.fence?.fallback !== undefined) continue;
    const b = backendOf(x);
    if (b === 'ack-file' || b === 'nvidia-plugin') gpus.add(x.gpu);
  }
  return gpus;
}

const MINUTE = 60_000;

/** NVIDIA's device plugin pods on the node (the policy's namespace and labels). */
export function pluginPods(pods: readonly PodFacts[], policy: Pick<Policy, 'fence'>): PodFacts[] {
  const { namespace, selector } = policy.fence.nvidiaPlugin;
  return pods.filter(
    (p) => p.namespace === namespace && Object.entries(selector).every(([k, v]) => p.labels?.[k] === v),
  );
}

export type UnlatchStep =
  | { kind: 'none' }
  /** Restart NVIDIA's device plugin on the node: its latch is undone only by a restart. */
  | { kind: 'restart'; incident: Incident; pods: PodFacts[]; why: string }
  | { kind: 'unfenced'; incident: Incident; why: string };

/**
 * After a verified restore on a node whose GPUs NVIDIA's device plugin fences: the plugin keeps the
 * GPU unhealthy until it restarts, so its pod on the node is deleted (its DaemonSet recreates it and
 * it enumerates the GPUs afresh). Never while another GPU of the node is still held out by that
 * latch (a restart would return it too): then it waits for that one. Done once the allocatable
 * is back; asked again each `fence.verifyMinutes` until it is.
 */
export function stepUnlatch(
  i: Incident,
  state: Pick<NodeState, 'incidents'>,
  node: Pick<NodeFacts, 'capacity' | 'allocatable'>,
  pods: readonly PodFacts[],
  now: Date,
  policy: Pick<Policy, 'fence'>,
): UnlatchStep {
  const f = i.fence;
  if (
    isOpen(i) ||
    !fenced(i) ||
    i.unfencedAt ||
    !f ||
    f.backend !== 'nvidia-plugin' ||
    f.fallback === 'not-fenced-by-plugin'
  )
    return { kind: 'none' };
  const at = now.toISOString();
  const stillOut = pluginFencedGpus(state, i).size;
  const out = devicesOut(node);
  if (f.restartedAt && out !== undefined && out <= stillOut) {
    return {
      kind: 'unfenced',
      incident: { ...i, unfencedAt: at },
      why: `${i.gpu} is schedulable again: NVIDIA's device plugin counts it after its restart`,
    };
  }
  if (f.restartedAt && now.getTime() - Date.parse(f.restartedAt) < policy.fence.verifyMinutes * MINUTE)
    return { kind: 'none' };
  // Another GPU of the node still held out (by the latch, or by a taint the new plugin pod would
  // have to tolerate): the restart waits for it.
  if (state.incidents.some((x) => x.key !== i.key && isOpen(x) && fenced(x))) return { kind: 'none' };
  const plugin = pluginPods(pods, policy);
  const where = `${policy.fence.nvidiaPlugin.namespace} (${Object.entries(policy.fence.nvidiaPlugin.selector)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')})`;
  const again = f.restartedAt
    ? ` again (the GPU was not back ${policy.fence.verifyMinutes} min after ${f.restartedAt})`
    : '';
  const why =
    plugin.length > 0
      ? `${i.gpu} passed its reset and probe; NVIDIA's device plugin keeps it unhealthy until it ` +
        `restarts: restarting ${plugin.map((p) => `${p.namespace}/${p.name}`).join(', ')}${again}`
      : `${i.gpu} passed its reset and probe, but no NVIDIA device plugin pod was found on the node ` +
        `in ${where}: the GPU stays unschedulable until that plugin restarts (check fence.nvidiaPlugin)`;
  return { kind: 'restart', incident: { ...i, fence: { ...f, restartedAt: at } }, pods: plugin, why };
}
