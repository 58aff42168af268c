/**
 * Fencing and repairing one GPU through its node's agent (issue #11). The functions cannot touch
 * a GPU; the node agent can (events/catalog/gpu-action.ts is the contract). So the node carries,
 * derived from its open incidents like every other part of its state (reconcile.ts), remediation's
 * GPU actions (owner `remediate` on the kernel's channel, functions/lib/gpu-actions.ts, merged into
 * gpu-reflex.io/gpu-actions beside any other reflex's):
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
import type { DcgmDiagLevel, GpuActionKind, GpuActionState, GpuDiag, GpuProbe } from '../../../events/index.ts';
import { readGpuAnswers, type GpuAction } from '../../lib/gpu-actions.ts';
import type { Policy } from './policy.ts';
import { fnv1a } from '../../lib/hash.ts';
import { backendOf, fenced } from './fence.ts';
import { isOpen, type Incident, type NodeState } from './state.ts';

/** Request ids: action + a hash of the incident episode (key and when it was first seen). */
export function requestId(action: GpuActionKind, i: Pick<Incident, 'key' | 'firstAt'>): string {
  return `${action}.${fnv1a(`${i.key}@${i.firstAt}`)}`;
}

/**
 * A node-wide incident's return probe after a reboot asks one probe per GPU the node had before it
 * (`reboot.gpus`; after a person's repaired-at, `repair.gpus`): each under the incident's probe id and the
 * GPU's place in that list.
 */
export function nodeProbes(i: Pick<Incident, 'repair' | 'reboot' | 'gpu'>): { gpu: string; id: string }[] {
  // After a person's repaired-at the GPUs probed are on the probe itself (`repair.gpus`), after a reboot on it.
  const gpus = i.repair?.gpus ?? i.reboot?.gpus;
  if (i.gpu || i.repair?.step !== 'probe' || !gpus) return [];
  const id = i.repair.id;
  return gpus.map((gpu, k) => ({ gpu, id: `${id}.${k}` }));
}

/** The DCGM diagnostic level a return probe asks for (policy `repair.dcgmDiag`), or none. */
export function diagAsked(policy: Pick<Policy, 'repair'>): DcgmDiagLevel | undefined {
  const level = policy.repair.dcgmDiag ?? 0;
  return level === 1 || level === 2 || level === 3 ? level : undefined;
}

/**
 * How much longer than `answerTimeoutMinutes` a probe with a diagnostic may take: each run level's duration as
 * NVIDIA gives it (DCGM user guide, "DCGM Diagnostics": r1 seconds, r2 about two minutes, r3 about half an hour),
 * with room to spare.
 */
const DIAG_SECONDS: Record<DcgmDiagLevel, number> = { 1: 5 * 60, 2: 15 * 60, 3: 60 * 60 };

/**
 * A probe's verdict: the agent's own (every NVML field healthy) and, where the policy asks for DCGM's
 * diagnostic, that diagnostic's `pass` at that level or deeper. An agent that ignored `diag` (too old to know
 * it) has no diagnostic to show: that never passes.
 */
export function probePassed(probe: GpuProbe | undefined, policy: Pick<Policy, 'repair'>): boolean {
  if (!probe?.passed) return false;
  const level = diagAsked(policy);
  return level === undefined || (probe.diag?.result === 'pass' && probe.diag.level >= level);
}

/** The GPU actions the node's agent must carry out for this state, in a stable order. */
export function gpuActionsOf(state: NodeState, policy: Pick<Policy, 'repair'>): GpuAction[] {
  const out: GpuAction[] = [];
  const diag = diagAsked(policy);
  // A diagnostic runs for minutes: the agent's answer may come that much later.
  const timeoutSeconds = policy.repair.answerTimeoutMinutes * 60 + (diag ? DIAG_SECONDS[diag] : 0);
  const probe = { probeSeconds: policy.repair.probeSeconds, ...(diag ? { diag } : {}) };
  for (const i of state.incidents) {
    if (!i.gpu && isOpen(i) && i.repair) {
      for (const p of nodeProbes(i))
        out.push({ ...p, incident: i.key, timeoutSeconds, action: 'probe', requestedAt: i.repair.at, ...probe });
    }
    if (!i.gpu) continue;
    const base = { gpu: i.gpu, incident: i.key, timeoutSeconds };
    const file = backendOf(i) === 'ack-file';
    if (isOpen(i) && fenced(i) && file)
      out.push({ ...base, id: requestId('fence', i), action: 'fence', requestedAt: i.outAt! });
    if (isOpen(i) && i.repair) {
      out.push({
        ...base,
        id: i.repair.id,
        action: i.repair.step,
        requestedAt: i.repair.at,
        ...(i.repair.step === 'probe' ? probe : {}),
      });
    }
    if (!isOpen(i) && fenced(i) && file && !i.unfencedAt)
      out.push({ ...base, id: requestId('unfence', i), action: 'unfence', requestedAt: i.closedAt ?? i.lastAt });
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/**
 * The agent's answers to remediation's requests (the kernel's one result path: never another owner's);
 * a corrupt annotation reads as no answers, with a warning.
 */
export function readResults(annotations: Readonly<Record<string, string>>): {
  results: Record<string, GpuActionState>;
  warning?: string;
} {
  return readGpuAnswers(annotations, 'remediate');
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
export function stepRepair(
  i: Incident,
  podsLeft: number,
  results: Readonly<Record<string, GpuActionState>>,
  now: Date,
  policy: Pick<Policy, 'repair'>,
): RepairStep {
  const at = now.toISOString();
  if (!i.repair) {
    if (podsLeft > 0) return { kind: 'wait', incident: i };
    const id = requestId('reset', i);
    return {
      kind: 'moved',
      incident: { ...i, repair: { step: 'reset', id, at } },
      why: `${i.gpu} has none of its pods left: reset requested from the node agent (${id})`,
    };
  }
  const r = results[i.repair.id];
  if (r === undefined || r.state === 'requested' || r.state === 'running') {
    if (now.getTime() - Date.parse(i.repair.at) < policy.repair.answerTimeoutMinutes * MIN)
      return { kind: 'wait', incident: i };
    const answer = r ? `still ${r.state}` : 'no answer at all: is the agent running with its actuator?';
    const why =
      `the node agent did not answer the ${i.repair.step} of ${i.gpu} within ` +
      `${policy.repair.answerTimeoutMinutes} min (${answer})`;
    return { kind: 'failed', incident: { ...i, repair: undefined }, why };
  }
  // Still held (a pod in its grace period, a process the pod left behind): not a failed reset yet.
  // Asked again every BUSY_RETRY_MS under a new id, until the answer timeout from the first ask.
  if (r.state === 'failed' && r.reason === 'busy' && i.repair.step === 'reset') {
    const since = i.repair.since ?? i.repair.at;
    if (now.getTime() - Date.parse(since) < policy.repair.answerTimeoutMinutes * MIN) {
      if (now.getTime() - Date.parse(i.repair.at) < BUSY_RETRY_MS) return { kind: 'wait', incident: i };
      const attempt = (i.repair.attempt ?? 1) + 1;
      return {
        kind: 'retry',
        incident: {
          ...i,
          repair: { step: 'reset', id: `${requestId('reset', i)}.${attempt}`, at: at, since, attempt },
        },
      };
    }
  }
  if (r.state === 'failed') {
    const holders = r.holders?.length ? ` (held by ${r.holders.slice(0, 5).join(', ')})` : '';
    return {
      kind: 'failed',
      incident: { ...i, repair: undefined },
      why: `the ${i.repair.step} of ${i.gpu} failed on the node: ${r.reason ?? 'no reason given'}${holders}`,
    };
  }
  // The fault came back after the reset (the agent saw it later than the reset): the reset did
  // not cure it, so it is a failed repair, whatever a probe may say next.
  const resetAt = i.repair.step === 'reset' ? r.at : i.resetAt;
  if (resetAt !== undefined && Date.parse(i.lastAt) > Date.parse(resetAt)) {
    return {
      kind: 'failed',
      incident: { ...i, repair: undefined },
      why: `${i.gpu} faulted again at ${i.lastAt}, after its reset at ${resetAt}`,
    };
  }
  if (i.repair.step === 'reset') {
    const id = requestId('probe', i);
    return {
      kind: 'moved',
      incident: { ...i, resetAt: r.at, repair: { step: 'probe', id, at } },
      why: `${i.gpu} was reset at ${r.at}: health probe requested (${id}, ${policy.repair.probeSeconds} s)`,
    };
  }
  if (!probePassed(r.probe, policy) || !r.probe) {
    return {
      kind: 'failed',
      incident: { ...i, repair: undefined },
      why: `the health probe of ${i.gpu} after its reset did not pass: ${probeWords(r, policy)}`,
    };
  }
  const closed: Incident = { ...i, repair: undefined, probedAt: r.at, phase: 'closed', closedAt: at };
  return {
    kind: 'restored',
    incident: closed,
    why:
      `${i.gpu} was reset at ${i.resetAt ?? '?'} and its health probe passed at ${r.at} ` +
      `(recovery action ${r.probe.recoveryAction}, no remap pending or failed, counters still): back in service`,
  };
}

/** The unfence of a closed incident is done once the agent says so. */
export function unfenceDone(i: Incident, results: Readonly<Record<string, GpuActionState>>): Incident | undefined {
  if (isOpen(i) || !fenced(i) || i.unfencedAt || backendOf(i) !== 'ack-file') return undefined;
  const r = results[requestId('unfence', i)];
  return r?.state === 'done' ? { ...i, unfencedAt: r.at } : undefined;
}

/** What a probe that did not pass found, in words (after a reset, a reboot or a person's repair). */
export function probeWords(r: GpuActionState, policy?: Pick<Policy, 'repair'>): string {
  const p = r.probe;
  if (!p) return r.reason ?? 'no probe result';
  const level = policy ? diagAsked(policy) : undefined;
  const bad = [
    ...(level === undefined ? [] : [diagWords(p.diag, level)]),
    p.counted === false && 'NVML does not list it any more (missing since the reboot)',
    !p.nvmlAnswers && 'NVML does not answer for it',
    p.recoveryAction !== 'none' && `recovery action ${p.recoveryAction}`,
    p.remapPending && 'a row remap is pending',
    p.remapFailed && 'a row remap failed',
    p.eccUncorrectedDelta > 0 && `${p.eccUncorrectedDelta} uncorrected ECC error(s) during the probe`,
    p.xidsDuringProbe.length > 0 && `XID ${p.xidsDuringProbe.join(', ')} during the probe`,
  ].filter((x): x is string => typeof x === 'string');
  return bad.join('; ') || (r.reason ?? 'the probe says it did not pass');
}

/** What DCGM's diagnostic said, where it does not let the GPU back; undefined where it does. */
function diagWords(d: GpuDiag | undefined, level: DcgmDiagLevel): string | undefined {
  if (!d) return `no DCGM diagnostic (level ${level} asked; an agent from before diagnostics ignores it)`;
  if (d.result === 'pass' && d.level >= level) return undefined;
  if (d.result === 'pass') return `DCGM diagnostic ran at level ${d.level}, not the ${level} asked`;
  if (d.result === 'fail')
    return `DCGM diagnostic level ${d.level} failed${d.failed.length > 0 ? `: ${d.failed.join(', ')}` : ''}`;
  return `no DCGM verdict (level ${d.level}): ${d.reason ?? 'unavailable'}`;
}
