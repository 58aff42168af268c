/**
 * Is this GPU really out of scheduling, and does it stay out (issue #27)? Pure.
 *
 * - **By identity, not count.** The ACK file fence is verified only when the node agent says the
 *   file lists *this* GPU (its answer's `fence.listed`, events/catalog/gpu-action.ts), and the node's
 *   allocatable is missing every device of the GPUs gpu-reflex holds out *on top of* what was already
 *   out before the fence (`outBefore`, and the file entries other writers held: `fence.before`). So
 *   ACK's own isolation of another GPU, NVIDIA's plugin latching a GPU on an XID we only observe, or a
 *   GPU missing at boot never verify our fence. A MIG GPU counts its instances, not one device: NVIDIA's
 *   plugin keys health by the parent GPU's UUID and latches one MIG device per GPU (fencing.md,
 *   corrections 2026-12-01, from k8s-device-plugin's ListAndWatch), which is no fence of the others.
 *   Where only a count exists (NVIDIA's plugin), the count with that baseline is all there is.
 * - **Held.** A verified fence is checked again on every sweep. Not seen any more (the file rewritten
 *   and not yet written back, the plugin restarted by someone, the DeviceTaintRule deleted): reported
 *   at once, restored where gpu-reflex can (the agent writes the file back; the sweep creates the rule
 *   again), and escalated one scope up (the node taint) where it cannot, or when it is still not seen
 *   `fence.verifyMinutes` later. A write-back the agent reports is told too.
 *
 * Unknown is never a fence: no answer from the agent, no GPU capacity on the node, a fence answer
 * without evidence (an agent from before #27) — none of them verifies.
 */
import { GPU_DEVICES_STALE_MS, readGpuDevices, type GpuActionState } from '../../../events/index.ts';
import { backendOf, devicesOfGpu, devicesOut, fenced, pluginFencedGpus } from './fence.ts';
import { checkDra } from './fence-dra.ts';
import { checkCards } from './fence-cgpu.ts';
import { requestId } from './gpu-repair.ts';
import type { Policy } from './policy.ts';
import { isOpen, type FenceState, type Incident, type NodeState } from './state.ts';
import type { NodeFacts } from './types.ts';
import { sharingOf } from './sharing.ts';

export type FenceCheck =
  | { kind: 'wait' }
  | { kind: 'verified'; incident: Incident; why: string }
  /** Escalated one scope up: the node is tainted NoSchedule while the GPU is out; a person is told. */
  | { kind: 'fallback'; incident: Incident; why: string }
  /** A held fence drifted, or was written back: reported (a notice), restored where it can be. */
  | { kind: 'drift'; incident: Incident; why: string };

const MINUTE = 60_000;
type Node = Pick<NodeFacts, 'name' | 'capacity' | 'allocatable' | 'annotations' | 'dra' | 'cards' | 'labels'>;
type Results = Readonly<Record<string, GpuActionState>>;

/** What the node shows of a device-plugin fence now: whether it holds, and in words. */
interface Seen {
  holds: boolean;
  words: string;
  /** The agent could not fence (or re-fence) the GPU: nothing will, so escalate now. */
  failed?: string;
}

export function checkFence(
  i: Incident,
  state: Pick<NodeState, 'incidents'>,
  node: Node,
  results: Results,
  now: Date,
  policy: Pick<Policy, 'fence'>,
): FenceCheck {
  const f = i.fence;
  if (!f || f.fallback || f.backend === 'cordon' || !isOpen(i) || !fenced(i)) return { kind: 'wait' };
  if (f.backend === 'ack-file' || f.backend === 'nvidia-plugin')
    return checkPlugin(i, f, state, node, results, now, policy);
  return f.backend === 'dra' ? checkDra(i, node, now, policy) : checkCards(i, node, now, policy);
}

/** A device plugin's fence (the ACK file, or NVIDIA's plugin's own health check): seen by what the node shows. */
function checkPlugin(
  i: Incident,
  f: FenceState,
  state: Pick<NodeState, 'incidents'>,
  node: Node,
  results: Results,
  now: Date,
  policy: Pick<Policy, 'fence'>,
): FenceCheck {
  const seen = seenOut(i, state, node, results, f.verifiedAt === undefined, now);
  const at = now.toISOString();
  const how =
    f.backend === 'ack-file' ? "ACK device plugin's unhealthy-devices file" : "NVIDIA device plugin's own health check";
  if (f.verifiedAt === undefined) {
    if (seen.holds)
      return {
        kind: 'verified',
        incident: { ...i, fence: { ...f, verifiedAt: at } },
        why: `${i.gpu} is fenced (${how}): ${seen.words}`,
      };
    if (!seen.failed && now.getTime() - Date.parse(i.outAt ?? i.since) < policy.fence.verifyMinutes * MINUTE)
      return { kind: 'wait' };
    const why = seen.failed
      ? `${seen.failed} (${f.backend}: ${seen.words})`
      : `was not fenced within ${policy.fence.verifyMinutes} min (${f.backend}: ${seen.words})`;
    return fallBack(i, f, `${i.gpu} ${why}`, at);
  }
  return held(i, f, seen, results, now, policy, how);
}

/** A verified fence, on a later sweep (see the file comment). */
function held(
  i: Incident,
  f: FenceState,
  seen: Seen,
  results: Results,
  now: Date,
  policy: Pick<Policy, 'fence'>,
  how: string,
): FenceCheck {
  const at = now.toISOString();
  const back = writtenBack(i, results);
  if (seen.holds) {
    if (f.driftAt === undefined && (back === undefined || back === f.restoredSeen)) return { kind: 'wait' };
    const { driftAt: _gone, ...rest } = f;
    const fence = { ...rest, ...(back ? { restoredSeen: back } : {}) };
    const when =
      back && back !== f.restoredSeen
        ? `another writer removed it from the fence file and the node agent wrote it back at ${back}`
        : `it was not seen from ${f.driftAt}`;
    return {
      kind: 'drift',
      incident: { ...i, fence },
      why: `the fence of ${i.gpu} holds again (${how}): ${when}; ${seen.words}`,
    };
  }
  if (seen.failed)
    return fallBack(
      i,
      f,
      `${i.gpu}'s fence no longer holds and cannot be restored: ${seen.failed} (${seen.words})`,
      at,
    );
  // NVIDIA's latch, once undone (its pod restarted by someone), is not ours to set again.
  if (f.backend === 'nvidia-plugin')
    return fallBack(
      i,
      f,
      `${i.gpu}'s fence no longer holds: NVIDIA's device plugin counts it again (restarted by someone?), ` +
        `and gpu-reflex cannot latch it (${seen.words})`,
      at,
    );
  if (f.driftAt === undefined) {
    return {
      kind: 'drift',
      incident: { ...i, fence: { ...f, driftAt: at } },
      why:
        `the fence of ${i.gpu} no longer holds (${seen.words}): the node agent writes it back on its next tick; ` +
        `if it is still not seen in ${policy.fence.verifyMinutes} min, the node is tainted`,
    };
  }
  if (now.getTime() - Date.parse(f.driftAt) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  return fallBack(
    i,
    f,
    `${i.gpu}'s fence has not held since ${f.driftAt} and was not restored within ` +
      `${policy.fence.verifyMinutes} min (${seen.words})`,
    at,
  );
}

function fallBack(i: Incident, f: FenceState, why: string, at: string): FenceCheck {
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
    why: `${why}: the node is tainted NoSchedule instead, until the GPU is repaired`,
  };
}

/** When the agent last wrote the incident's fence back into the file (its answer), if it ever did. */
function writtenBack(i: Incident, results: Results): string | undefined {
  return results[requestId('fence', i)]?.fence?.restoredAt;
}

/**
 * The node's evidence for a device-plugin fence. `first`: the first verification, which must also
 * see past what was out before the fence; later checks need only our own devices missing (what was
 * out before may have come back meanwhile).
 */
function seenOut(
  i: Incident,
  state: Pick<NodeState, 'incidents'>,
  node: Node,
  results: Results,
  first: boolean,
  now: Date,
): Seen {
  const ours = [...pluginFencedGpus(state)];
  const mine = ours.reduce((n, g) => n + devicesOfGpu(node, g), 0);
  const before = first ? foreignOut(state, results) : 0;
  const want = mine + before;
  const out = devicesOut(node);
  // A shared card gives `replicas` devices (time-slicing, MPS): fenced only when all of them are out.
  const sharing = sharingOf(node);
  const unit = sharing.replicas > 1 ? `${sharing.resource} replica(s)` : 'GPU device(s)';
  const allReplicas = sharing.replicas > 1 ? ` (all ${sharing.replicas} replicas of each fenced card)` : '';
  // Devices out before the fence are named apart: another device's isolation is no proof of ours.
  const foreign =
    before > 0
      ? ` (${mine} held out by gpu-reflex, ${before} already out before the fence: ` +
        "another device's isolation is no proof of ours)"
      : '';
  const counted =
    out === undefined
      ? 'the node reports no nvidia.com GPU capacity'
      : `${out} ${unit} missing from its allocatable, ${want} expected${allReplicas}${foreign}`;
  const countHolds = out !== undefined && out >= want;
  if (backendOf(i) !== 'ack-file') {
    const partial =
      sharing.replicas > 1 && out !== undefined && out > before && !countHolds
        ? `the device plugin took only ${out - before} of the ${mine} replica(s) out and leaves the rest schedulable` +
          ` (NVIDIA's plugin before its fix for k8s-device-plugin#1929 marks one replica per Xid)`
        : undefined;
    const id = byDeviceIds(i, node, now);
    const words = [partial, id.words, counted].filter((w) => w !== undefined).join('; ');
    return { holds: id.out, words };
  }
  const r = results[requestId('fence', i)];
  if (r?.state === 'failed')
    return {
      holds: false,
      words: counted,
      failed: `the node agent could not fence it: ${r.reason ?? 'no reason given'}`,
    };
  const listed = r?.state === 'done' && r.fence?.listed === true;
  const identity =
    r === undefined || r.state !== 'done'
      ? 'the node agent has not answered the fence yet'
      : r.fence === undefined
        ? 'the node agent gave no evidence of the file (an agent from before #27)'
        : listed
          ? 'the file lists it'
          : 'the file does not list it';
  return { holds: listed && countHolds, words: `${identity}; ${counted}` };
}

/**
 * GPU devices out of the node's allocatable that are not ours, as recorded when each of our fences
 * began: the most any of them saw (the allocatable then, or the other writers' entries in the file).
 */
function foreignOut(state: Pick<NodeState, 'incidents'>, results: Results): number {
  let most = 0;
  for (const x of state.incidents) {
    if (
      !isOpen(x) ||
      !fenced(x) ||
      x.fence?.fallback !== undefined ||
      (backendOf(x) !== 'ack-file' && backendOf(x) !== 'nvidia-plugin')
    )
      continue;
    const file = results[requestId('fence', x)]?.fence?.before.length ?? 0;
    most = Math.max(most, x.fence?.outBefore ?? 0, file);
  }
  return most;
}

/**
 * NVIDIA's plugin's fence by identity: the kubelet's PodResources `GetAllocatableResources`, as the node
 * agent writes it (events/gpu-devices.ts), lists none of this GPU's device IDs (its UUID, its MIG
 * devices, its replicas `<UUID>::<n>`). The Node's count is said beside it but verifies nothing: any other
 * device out passes a count. Absent or unknown (no socket, device IDs naming no GPU): not verified.
 */
function byDeviceIds(i: Incident, node: Pick<NodeFacts, 'annotations'>, now: Date): { out: boolean; words: string } {
  const d = readGpuDevices(node.annotations);
  if (d === undefined)
    return {
      out: false,
      words: "the node agent has not said which devices the kubelet's PodResources lists allocatable (unknown)",
    };
  // The agent re-confirms while a GPU is out; an old word is a dead agent's, never evidence (events/gpu-devices.ts).
  if (d.checked !== undefined && now.getTime() - Date.parse(d.checked) > GPU_DEVICES_STALE_MS)
    return {
      out: false,
      words:
        `the node agent last confirmed PodResources at ${d.checked}, over ${GPU_DEVICES_STALE_MS / 60_000} min ago ` +
        '(unknown: is it running?)',
    };
  if (!d.known) return { out: false, words: `PodResources unknown at ${d.at} (${d.reason ?? 'no reason given'})` };
  const left = d.gpus[i.gpu ?? ''];
  if (left === undefined) return { out: false, words: `PodResources (${d.at}) does not name ${i.gpu}` };
  return left.length === 0
    ? { out: true, words: `PodResources (${d.at}) lists none of its devices allocatable` }
    : {
        out: false,
        words: `PodResources (${d.at}) still lists ${left.length} of its device(s) allocatable: ${left
          .slice(0, 4)
          .join(', ')}`,
      };
}
