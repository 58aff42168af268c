/**
 * Fencing and repairing one GPU through its node's agent (issue #11). The functions cannot touch
 * a GPU; the node agent can (events/catalog/gpu-action.ts is the contract). So the node carries,
 * derived from its open incidents like every other part of its state (reconcile.ts):
 *
 *   gpu-reflex.io/gpu-actions = the GPU actions this node's agent must carry out:
 *     fence   — while a whole-GPU incident holds the GPU out (the agent adds it to the device
 *               plugin's unhealthy-devices file, so the GPU leaves the node's allocatable);
 *     reset   — once no pod of ours is left on the GPU;
 *     probe   — once the reset is done: NVML answers, recovery action none, no remap pending or
 *               failed, counters still for `probeSeconds`;
 *     unfence — once the incident closed on a passed probe, until the agent says it is done.
 *
 * and the agent answers in gpu-reflex.io/gpu-action-results, which the sweep reads. A GPU whose
 * fault NVIDIA answers with a reset returns to service only on that evidence: a done reset and a
 * passed probe after the fault. Quiet time restores nothing (a GPU nothing runs on is always quiet).
 * A failed reset or probe, or no answer within `answerTimeoutMinutes`, climbs the incident's ladder
 * (reboot, then replace: with no cloud adapter, awaiting-repair and a person is told). Pure.
 */
import { z } from 'zod';
import { GPU_ACTION_RESULTS_ANNOTATION, GpuActionStatesSchema, type GpuActionRequest, type GpuActionState, type HealthCondition } from '../../../events/index.ts';
import type { DeviceTaint } from '../../lib/plan.ts';
import type { FenceBackend, Policy } from './policy.ts';
import { fnv1a } from '../../lib/hash.ts';
import { isOpen, type FenceFallback, type Incident, type NodeState } from './state.ts';
import type { NodeFacts, PodFacts } from './types.ts';

/** Health conditions whose recovery is a GPU reset (the rest clear when the agent says so). */
const RESET_CONDITIONS: ReadonlySet<HealthCondition> = new Set<HealthCondition>(['ecc-uncorrected', 'nvlink-down', 'recovery-action']);

/**
 * A whole-GPU incident the agent fences and that returns only after a reset and a probe: an XID
 * quarantine (the RESET_GPU bucket and every XID that climbs to a GPU quarantine), a reset
 * condition, or a quarantined GPU whose history was lost. MIG-instance incidents are the
 * application's (restart), and conditions such as temperature clear when the agent resolves them.
 */
export function needsReset(i: Incident): boolean {
  if (i.scope !== 'gpu' || !i.gpu || i.action !== 'quarantine-gpu') return false;
  if (quiesces(i)) return false;
  if (i.trigger === 'orphan') return true;
  return i.condition === undefined || RESET_CONDITIONS.has(i.condition);
}

/**
 * NVML's DRAIN_P2P (field 230, or XID 154 naming it): quiesce peer-to-peer traffic — the GPU is
 * fenced and its pods move, which stops its P2P work — then the driver's answer is read again. No
 * reset unless the driver then asks for one (the incident's recovery action changes to gpu-reset);
 * when it answers none, the GPU returns like any fenced quarantine that needs no reset.
 */
export function quiesces(i: Incident): boolean {
  return i.scope === 'gpu' && !!i.gpu && i.action === 'quarantine-gpu' && i.recoveryAction === 'drain-p2p' && (i.condition === 'recovery-action' || i.xid === 154);
}

/**
 * Whether the agent keeps the incident's GPU fenced: a whole-GPU quarantine that needs a reset (or
 * quiesces P2P traffic), from the moment it took the GPU out, and still while it climbs on to a node repair.
 */
export function fenced(i: Incident): boolean {
  if (i.outAt === undefined) return false;
  if (i.action === 'quarantine-gpu') return needsReset(i) || quiesces(i);
  const wasQuarantined = i.ladder.slice(0, i.level).includes('quarantine-gpu');
  return wasQuarantined && needsReset({ ...i, action: 'quarantine-gpu' });
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
 * condition). Incidents that fence nothing, or already carry their fence, are returned as they are.
 */
export function withFence(i: Incident, backend: FenceBackend): Incident {
  if (i.fence || !isOpen(i) || !fenced(i)) return i;
  if (backend === 'nvidia-plugin' && !pluginFences(i)) return { ...i, fence: { backend, fallback: 'not-fenced-by-plugin', fallbackAt: i.outAt! } };
  return { ...i, fence: { backend } };
}

/** The backend an incident's GPU is fenced by (incidents from before backends existed: the ACK file). */
export function backendOf(i: Incident): FenceBackend {
  return i.fence?.backend ?? 'ack-file';
}

/** An open incident whose GPU is held out by a node taint rather than a per-GPU fence. */
export function fencedByTaint(i: Incident): boolean {
  return isOpen(i) && fenced(i) && (backendOf(i) === 'cordon' || i.fence?.fallback !== undefined);
}

/** Request ids: action + a hash of the incident episode (key and when it was first seen). */
export function requestId(action: GpuActionRequest['action'], i: Pick<Incident, 'key' | 'firstAt'>): string {
  return `${action}.${fnv1a(`${i.key}@${i.firstAt}`)}`;
}

/** The GPU actions the node's agent must carry out for this state, in a stable order. */
export function gpuActionsOf(state: NodeState, policy: Pick<Policy, 'repair'>): GpuActionRequest[] {
  const out: GpuActionRequest[] = [];
  const timeoutSeconds = policy.repair.answerTimeoutMinutes * 60;
  for (const i of state.incidents) {
    if (!i.gpu) continue;
    const base = { gpuUuid: i.gpu, incident: i.key, timeoutSeconds };
    const file = backendOf(i) === 'ack-file';
    if (isOpen(i) && fenced(i) && file) out.push({ ...base, id: requestId('fence', i), action: 'fence', requestedAt: i.outAt! });
    if (isOpen(i) && i.repair) {
      out.push({ ...base, id: i.repair.id, action: i.repair.step, requestedAt: i.repair.at, ...(i.repair.step === 'probe' ? { probeSeconds: policy.repair.probeSeconds } : {}) });
    }
    if (!isOpen(i) && fenced(i) && file && !i.unfencedAt) out.push({ ...base, id: requestId('unfence', i), action: 'unfence', requestedAt: i.closedAt ?? i.lastAt });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The agent's answers on the node (a corrupt annotation reads as no answers, with a warning). */
export function readResults(annotations: Readonly<Record<string, string>>): { results: Record<string, GpuActionState>; warning?: string } {
  const raw = annotations[GPU_ACTION_RESULTS_ANNOTATION];
  if (raw === undefined) return { results: {} };
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { results: {}, warning: `${GPU_ACTION_RESULTS_ANNOTATION} is not JSON: ignoring the agent's answers` };
  }
  const parsed = GpuActionStatesSchema.safeParse(json);
  if (!parsed.success) return { results: {}, warning: `${GPU_ACTION_RESULTS_ANNOTATION} does not match the contract (${z.prettifyError(parsed.error).split('\n')[0]}): ignoring the agent's answers` };
  return { results: parsed.data };
}

/** What one sweep makes of a repairing incident. */
export type RepairStep =
  | { kind: 'wait'; incident: Incident }
  | { kind: 'moved'; incident: Incident; why: string }
  /** Asked again, quietly (the GPU was still busy: a pod in its termination grace still holds it). */
  | { kind: 'retry'; incident: Incident }
  | { kind: 'restored'; incident: Incident; why: string }
  | { kind: 'failed'; incident: Incident; why: string };

const MIN = 60_000;
/** How long a reset refused as busy waits before it is asked again. */
const BUSY_RETRY_MS = 30_000;

/**
 * One step of a quarantined GPU's repair: ask for the reset once its pods are gone, then the
 * probe once the reset is done, and restore on a passed probe. `podsLeft`: our pods still on it.
 */
export function stepRepair(i: Incident, podsLeft: number, results: Readonly<Record<string, GpuActionState>>, now: Date, policy: Pick<Policy, 'repair'>): RepairStep {
  const at = now.toISOString();
  if (!i.repair) {
    if (podsLeft > 0) return { kind: 'wait', incident: i };
    const id = requestId('reset', i);
    return { kind: 'moved', incident: { ...i, repair: { step: 'reset', id, at } }, why: `${i.gpu} has none of its pods left: reset requested from the node agent (${id})` };
  }
  const r = results[i.repair.id];
  if (r === undefined || r.state === 'requested' || r.state === 'running') {
    if (now.getTime() - Date.parse(i.repair.at) < policy.repair.answerTimeoutMinutes * MIN) return { kind: 'wait', incident: i };
    const why = `the node agent did not answer the ${i.repair.step} of ${i.gpu} within ${policy.repair.answerTimeoutMinutes} min (${r ? `still ${r.state}` : 'no answer at all: is the agent running with its actuator?'})`;
    return { kind: 'failed', incident: { ...i, repair: undefined }, why };
  }
  // Still held (a pod in its grace period, a process the pod left behind): not a failed reset yet.
  // Asked again every BUSY_RETRY_MS under a new id, until the answer timeout from the first ask.
  if (r.state === 'failed' && r.reason === 'busy' && i.repair.step === 'reset') {
    const since = i.repair.since ?? i.repair.at;
    if (now.getTime() - Date.parse(since) < policy.repair.answerTimeoutMinutes * MIN) {
      if (now.getTime() - Date.parse(i.repair.at) < BUSY_RETRY_MS) return { kind: 'wait', incident: i };
      const attempt = (i.repair.attempt ?? 1) + 1;
      return { kind: 'retry', incident: { ...i, repair: { step: 'reset', id: `${requestId('reset', i)}.${attempt}`, at: at, since, attempt } } };
    }
  }
  if (r.state === 'failed') {
    const holders = r.holders?.length ? ` (held by ${r.holders.slice(0, 5).join(', ')})` : '';
    return { kind: 'failed', incident: { ...i, repair: undefined }, why: `the ${i.repair.step} of ${i.gpu} failed on the node: ${r.reason ?? 'no reason given'}${holders}` };
  }
  // The fault came back after the reset (the agent saw it later than the reset): the reset did
  // not cure it, so it is a failed repair, whatever a probe may say next.
  const resetAt = i.repair.step === 'reset' ? r.at : i.resetAt;
  if (resetAt !== undefined && Date.parse(i.lastAt) > Date.parse(resetAt)) {
    return { kind: 'failed', incident: { ...i, repair: undefined }, why: `${i.gpu} faulted again at ${i.lastAt}, after its reset at ${resetAt}` };
  }
  if (i.repair.step === 'reset') {
    const id = requestId('probe', i);
    return { kind: 'moved', incident: { ...i, resetAt: r.at, repair: { step: 'probe', id, at } }, why: `${i.gpu} was reset at ${r.at}: health probe requested (${id}, ${policy.repair.probeSeconds} s)` };
  }
  if (!r.probe?.passed) {
    return { kind: 'failed', incident: { ...i, repair: undefined }, why: `the health probe of ${i.gpu} after its reset did not pass: ${probeWords(r)}` };
  }
  const closed: Incident = { ...i, repair: undefined, probedAt: r.at, phase: 'closed', closedAt: at };
  return { kind: 'restored', incident: closed, why: `${i.gpu} was reset at ${i.resetAt ?? '?'} and its health probe passed at ${r.at} (recovery action ${r.probe.recoveryAction}, no remap pending or failed, counters still): back in service` };
}

/** The unfence of a closed incident is done once the agent says so. */
export function unfenceDone(i: Incident, results: Readonly<Record<string, GpuActionState>>): Incident | undefined {
  if (isOpen(i) || !fenced(i) || i.unfencedAt || backendOf(i) !== 'ack-file') return undefined;
  const r = results[requestId('unfence', i)];
  return r?.state === 'done' ? { ...i, unfencedAt: r.at } : undefined;
}

function probeWords(r: GpuActionState): string {
  const p = r.probe;
  if (!p) return r.reason ?? 'no probe result';
  const bad = [
    !p.nvmlAnswers && 'NVML does not answer for it',
    p.recoveryAction !== 'none' && `recovery action ${p.recoveryAction}`,
    p.remapPending && 'a row remap is pending',
    p.remapFailed && 'a row remap failed',
    p.eccUncorrectedDelta > 0 && `${p.eccUncorrectedDelta} uncorrected ECC error(s) during the probe`,
    p.xidsDuringProbe.length > 0 && `XID ${p.xidsDuringProbe.join(', ')} during the probe`,
  ].filter((x): x is string => typeof x === 'string');
  return bad.join('; ') || (r.reason ?? 'the probe says it did not pass');
}

/** Extended resources a device plugin reports GPUs under: whole GPUs and MIG instances. */
const GPU_DEVICE = /^nvidia\.com\/(gpu|mig-.+)$/;

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
function pluginFencedGpus(state: Pick<NodeState, 'incidents'>, except?: Incident): Set<string> {
  const gpus = new Set<string>();
  for (const x of state.incidents) {
    if (x.key === except?.key || !isOpen(x) || !fenced(x) || !x.gpu || x.fence?.fallback !== undefined) continue;
    const b = backendOf(x);
    if (b === 'ack-file' || b === 'nvidia-plugin') gpus.add(x.gpu);
  }
  return gpus;
}

export type FenceCheck =
  | { kind: 'wait' }
  | { kind: 'verified'; incident: Incident; why: string }
  | { kind: 'fallback'; incident: Incident; why: string };

const MINUTE = 60_000;

/**
 * Is the GPU really out of scheduling? A device-plugin fence (ACK file, NVIDIA's latch) is seen
 * in the node's allocatable: as many GPU devices missing from it as GPUs held out. Not seen within
 * `fence.verifyMinutes` of the quarantine: escalated one scope up (the node is tainted NoSchedule)
 * and said so. A node that reports no GPU capacity cannot show the fence: the same.
 */
export function checkFence(i: Incident, state: Pick<NodeState, 'incidents'>, node: Pick<NodeFacts, 'name' | 'capacity' | 'allocatable' | 'dra'>, now: Date, policy: Pick<Policy, 'fence'>): FenceCheck {
  const f = i.fence;
  if (!f || f.verifiedAt || f.fallback || f.backend === 'cordon' || !isOpen(i) || !fenced(i)) return { kind: 'wait' };
  if (f.backend === 'dra') return checkDra(i, node, now, policy);
  const want = pluginFencedGpus(state).size;
  const out = devicesOut(node);
  const at = now.toISOString();
  const seen = out === undefined ? 'the node reports no nvidia.com GPU capacity' : `${out} GPU device(s) missing from its allocatable, ${want} expected`;
  if (out !== undefined && out >= want) {
    return { kind: 'verified', incident: { ...i, fence: { ...f, verifiedAt: at } }, why: `${i.gpu} is fenced (${f.backend === 'ack-file' ? "ACK device plugin's unhealthy-devices file" : "NVIDIA device plugin's own health check"}): ${seen}` };
  }
  if (now.getTime() - Date.parse(i.outAt ?? i.since) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  const fallback: FenceFallback = 'not-verified';
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback, fallbackAt: at } },
    why: `${i.gpu} was not fenced within ${policy.fence.verifyMinutes} min (${f.backend}: ${seen}): the node is tainted NoSchedule instead, until the GPU is repaired`,
  };
}

/**
 * The DRA fence is our own object: verified once the DeviceTaintRule naming the GPU's device is
 * there. A GPU no ResourceSlice of the node lists cannot be named by a rule: the node is tainted at
 * once. DRA not read for this node (no DRA port in this deployment): waits, then falls back.
 */
function checkDra(i: Incident, node: Pick<NodeFacts, 'name' | 'dra'>, now: Date, policy: Pick<Policy, 'fence'>): FenceCheck {
  const f = i.fence!;
  const at = now.toISOString();
  const driver = policy.fence.dra.driver;
  if (node.dra && i.gpu && !node.dra.devices[i.gpu]) {
    return {
      kind: 'fallback',
      incident: { ...i, fence: { ...f, fallback: 'no-dra-device', fallbackAt: at } },
      why: `no ResourceSlice of ${node.name} lists ${i.gpu} under the DRA driver ${driver}, so no DeviceTaintRule can hold it out: the node is tainted NoSchedule instead, until the GPU is repaired`,
    };
  }
  const name = deviceTaintName(node.name, i.gpu ?? '');
  if (node.dra?.rules.includes(name)) {
    const d = node.dra.devices[i.gpu!]!;
    return { kind: 'verified', incident: { ...i, fence: { ...f, verifiedAt: at } }, why: `${i.gpu} is fenced: DeviceTaintRule ${name} (NoSchedule) holds out DRA device ${d.driver}/${d.pool}/${d.device}` };
  }
  if (now.getTime() - Date.parse(i.outAt ?? i.since) < policy.fence.verifyMinutes * MINUTE) return { kind: 'wait' };
  const seen = node.dra ? `DeviceTaintRule ${name} is not there` : 'DRA was not read for this node (no DeviceTaintRule access in this deployment)';
  return {
    kind: 'fallback',
    incident: { ...i, fence: { ...f, fallback: 'not-verified', fallbackAt: at } },
    why: `${i.gpu} was not fenced within ${policy.fence.verifyMinutes} min (dra: ${seen}): the node is tainted NoSchedule instead, until the GPU is repaired`,
  };
}

/** The DeviceTaintRule gpu-reflex keeps for one GPU of one node: the same name on every redelivery. */
export function deviceTaintName(node: string, gpu: string): string {
  return `gpu-reflex-${fnv1a(node)}-${fnv1a(gpu)}`;
}

/** An incident whose GPU a DeviceTaintRule should hold out now. */
function draHeld(i: Incident): boolean {
  return isOpen(i) && fenced(i) && backendOf(i) === 'dra' && i.fence?.fallback === undefined && i.gpu !== undefined;
}

/**
 * The DeviceTaintRules the node should have for this state, against those it has: a rule for each
 * GPU a `dra` incident holds out (its device found in the node's ResourceSlices), none for the
 * rest. Undefined when nothing changes, or when DRA was not read for the node.
 */
export function deviceTaintChange(state: Pick<NodeState, 'incidents'>, node: Pick<NodeFacts, 'name' | 'dra'>, policy: Pick<Policy, 'taintKey'>): { add: DeviceTaint[]; remove: { name: string; gpuUuid: string }[] } | undefined {
  if (!node.dra) return undefined;
  const want = new Map<string, DeviceTaint>();
  for (const i of state.incidents) {
    if (!draHeld(i)) continue;
    const device = node.dra.devices[i.gpu!];
    if (!device) continue;
    const name = deviceTaintName(node.name, i.gpu!);
    const value = (i.xid !== undefined ? `xid-${i.xid}` : (i.condition ?? i.trigger)).replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 63);
    want.set(name, { ...device, name, node: node.name, gpuUuid: i.gpu!, taint: { key: policy.taintKey, value, effect: 'NoSchedule' } });
  }
  const have = new Set(node.dra.rules);
  const add = [...want.values()].filter((t) => !have.has(t.name));
  const gpuOf = new Map(state.incidents.filter((i) => i.gpu).map((i) => [deviceTaintName(node.name, i.gpu!), i.gpu!]));
  const remove = [...have].filter((n) => !want.has(n)).sort().map((name) => ({ name, gpuUuid: gpuOf.get(name) ?? 'unknown' }));
  return add.length > 0 || remove.length > 0 ? { add, remove } : undefined;
}

/** A closed `dra` incident's fence is lifted once its DeviceTaintRule is gone from the node. */
export function draLifted(i: Incident, node: Pick<NodeFacts, 'name' | 'dra'>, now: Date): Incident | undefined {
  if (isOpen(i) || !fenced(i) || i.unfencedAt || backendOf(i) !== 'dra' || !i.gpu || !node.dra) return undefined;
  if (i.fence?.fallback !== undefined) return { ...i, unfencedAt: now.toISOString() };
  return node.dra.rules.includes(deviceTaintName(node.name, i.gpu)) ? undefined : { ...i, unfencedAt: now.toISOString() };
}

/** NVIDIA's device plugin pods on the node (the policy's namespace and labels). */
export function pluginPods(pods: readonly PodFacts[], policy: Pick<Policy, 'fence'>): PodFacts[] {
  const { namespace, selector } = policy.fence.nvidiaPlugin;
  return pods.filter((p) => p.namespace === namespace && Object.entries(selector).every(([k, v]) => p.labels?.[k] === v));
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
export function stepUnlatch(i: Incident, state: Pick<NodeState, 'incidents'>, node: Pick<NodeFacts, 'capacity' | 'allocatable'>, pods: readonly PodFacts[], now: Date, policy: Pick<Policy, 'fence'>): UnlatchStep {
  const f = i.fence;
  if (isOpen(i) || !fenced(i) || i.unfencedAt || !f || f.backend !== 'nvidia-plugin' || f.fallback === 'not-fenced-by-plugin') return { kind: 'none' };
  const at = now.toISOString();
  const stillOut = pluginFencedGpus(state, i).size;
  const out = devicesOut(node);
  if (f.restartedAt && out !== undefined && out <= stillOut) {
    return { kind: 'unfenced', incident: { ...i, unfencedAt: at }, why: `${i.gpu} is schedulable again: NVIDIA's device plugin counts it after its restart` };
  }
  if (f.restartedAt && now.getTime() - Date.parse(f.restartedAt) < policy.fence.verifyMinutes * MINUTE) return { kind: 'none' };
  // Another GPU of the node still held out (by the latch, or by a taint the new plugin pod would
  // have to tolerate): the restart waits for it.
  if (state.incidents.some((x) => x.key !== i.key && isOpen(x) && fenced(x))) return { kind: 'none' };
  const plugin = pluginPods(pods, policy);
  const where = `${policy.fence.nvidiaPlugin.namespace} (${Object.entries(policy.fence.nvidiaPlugin.selector).map(([k, v]) => `${k}=${v}`).join(',')})`;
  const why = plugin.length > 0
    ? `${i.gpu} passed its reset and probe; NVIDIA's device plugin keeps it unhealthy until it restarts: restarting ${plugin.map((p) => `${p.namespace}/${p.name}`).join(', ')}${f.restartedAt ? ` again (the GPU was not back ${policy.fence.verifyMinutes} min after ${f.restartedAt})` : ''}`
    : `${i.gpu} passed its reset and probe, but no NVIDIA device plugin pod was found on the node in ${where}: the GPU stays unschedulable until that plugin restarts (check fence.nvidiaPlugin)`;
  return { kind: 'restart', incident: { ...i, fence: { ...f, restartedAt: at } }, pods: plugin, why };
}

/** How an incident's GPU is being kept out of scheduling, in words (the Remediation's reason). */
export function fenceWords(i: Incident, policy: Pick<Policy, 'fence'>): string {
  const f = i.fence;
  if (!f) return '';
  const what = i.xid !== undefined ? `XID ${i.xid}` : (i.condition ?? i.trigger);
  if (f.fallback === 'not-fenced-by-plugin') return `NVIDIA's device plugin does not take the GPU out for ${what} by itself, so the node is tainted NoSchedule while ${i.gpu} is out (fence fallback).`;
  if (f.backend === 'cordon') return `This pool fences by node taint (fence backend cordon): the node is tainted NoSchedule while ${i.gpu} is out.`;
  if (f.fallback === 'no-dra-device') return `No ResourceSlice of the node lists ${i.gpu} under the DRA driver ${policy.fence.dra.driver}, so the node is tainted NoSchedule while it is out (fence fallback).`;
  if (f.backend === 'dra') return `${i.gpu} is fenced by a DRA DeviceTaintRule (NoSchedule) on its device; it must be there within ${policy.fence.verifyMinutes} min, else the node is tainted.`;
  if (f.backend === 'nvidia-plugin') return `NVIDIA's device plugin takes ${i.gpu} out for ${what} by itself; the node's allocatable must show it within ${policy.fence.verifyMinutes} min, else the node is tainted.`;
  return `${i.gpu} is fenced through the ACK device plugin's unhealthy-devices file (the node agent writes it); the node's allocatable must show it within ${policy.fence.verifyMinutes} min, else the node is tainted.`;
}
