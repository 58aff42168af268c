/**
 * Evidence, not time, after every repair (issue #27). After a reboot (the node shows a new boot id
 * and is Ready) and after a person's `gpu-reflex.io/repaired-at`, a GPU incident returns only on a
 * passed health probe by the node agent — the same probe as after a reset (gpu-repair.ts): NVML
 * answers and still lists the GPU under its UUID (a GPU missing after the reboot is not counted),
 * recovery action none (unknown is not none), no row remap pending or failed, no uncorrected ECC
 * error and no XID on it during the window. Quiet time restores nothing: a GPU nothing runs on is
 * always quiet (fencing.md, corrections 2026-12-01: "After a reboot the same probe as after a reset
 * decides the return").
 *
 * The sweep also fails the probe on what it saw itself: another incident of the same GPU whose
 * fault was last seen during the window (an XID or a health condition the functions received while
 * the agent watched). Pure.
 */
import type { GpuActionState } from '../../../events/index.ts';
import { fnv1a } from '../../lib/hash.ts';
import { probeWords, requestId } from './gpu-repair.ts';
import type { Policy } from './policy.ts';
import { isOpen, type Incident, type NodeState } from './state.ts';

/** What repair the probe follows: the reboot (from its `backAt`) or a person's repair (its `repaired-at`). */
export type ReturnCause = { kind: 'reboot'; backAt: string } | { kind: 'repaired'; repairedAt: string };

export type ReturnStep =
  | { kind: 'wait' }
  | { kind: 'passed'; incident: Incident; why: string }
  | { kind: 'failed'; incident: Incident; why: string; missing: boolean };

const MIN = 60_000;

/** One probe per incident and repair: a later reboot or a newer repaired-at asks again. */
export function returnProbeId(i: Pick<Incident, 'key' | 'firstAt'>, cause: ReturnCause): string {
  const since = cause.kind === 'reboot' ? cause.backAt : cause.repairedAt;
  return `${requestId('probe', i)}.${cause.kind}.${fnv1a(since)}`;
}

/** The probe asked for, or undefined when this incident names no GPU (a node-wide fault). */
export function askReturnProbe(i: Incident, cause: ReturnCause, now: Date): Incident | undefined {
  if (!i.gpu) return undefined;
  return { ...i, repair: { step: 'probe', id: returnProbeId(i, cause), at: now.toISOString() } };
}

/** Whether this incident's return probe for `cause` has been asked for. */
export function probing(i: Incident, cause: ReturnCause): boolean {
  return i.repair?.step === 'probe' && i.repair.id === returnProbeId(i, cause);
}

export function stepReturnProbe(
  i: Incident,
  state: Pick<NodeState, 'incidents'>,
  results: Readonly<Record<string, GpuActionState>>,
  now: Date,
  policy: Pick<Policy, 'repair'>,
): ReturnStep {
  const p = i.repair;
  if (!p || p.step !== 'probe') return { kind: 'wait' };
  const r = results[p.id];
  const after = i.reboot?.backAt ? 'its reboot' : 'its repair';
  if (r === undefined || r.state === 'requested' || r.state === 'running') {
    if (now.getTime() - Date.parse(p.at) < policy.repair.answerTimeoutMinutes * MIN) return { kind: 'wait' };
    return {
      kind: 'failed',
      incident: i,
      missing: false,
      why: `the node agent did not answer the health probe of ${i.gpu} after ${after} within ${policy.repair.answerTimeoutMinutes} min (${r ? `still ${r.state}` : 'no answer at all: is the agent running with its actuator?'})`,
    };
  }
  if (r.state === 'failed')
    return {
      kind: 'failed',
      incident: i,
      missing: false,
      why: `the health probe of ${i.gpu} after ${after} failed on the node: ${r.reason ?? 'no reason given'}`,
    };
  // What the functions saw themselves during the window: another fault of this GPU.
  const seen = state.incidents.filter(
    (x) =>
      x.key !== i.key &&
      x.gpu === i.gpu &&
      isOpen(x) &&
      Date.parse(x.lastAt) >= Date.parse(p.at) &&
      Date.parse(x.lastAt) <= Date.parse(r.at),
  );
  const probe = r.probe;
  // Unknown is never healthy: no probe, or one that does not say the GPU is counted, does not pass.
  const missing = probe !== undefined && (probe.counted === false || !probe.nvmlAnswers);
  if (!probe?.passed || probe.counted !== true || seen.length > 0) {
    const bad = [
      probe?.passed ? (probe.counted === true ? '' : 'the agent did not say whether NVML lists it') : probeWords(r),
      ...seen.map((x) => `${x.key} seen at ${x.lastAt}, during the probe window`),
    ]
      .filter(Boolean)
      .join('; ');
    return {
      kind: 'failed',
      incident: i,
      missing,
      why: `the health probe of ${i.gpu} after ${after} did not pass: ${bad}`,
    };
  }
  return {
    kind: 'passed',
    incident: { ...i, repair: undefined, probedAt: r.at },
    why: `${i.gpu}'s health probe after ${after} passed at ${r.at} (NVML lists it, recovery action ${probe.recoveryAction}, no remap pending or failed, no XID during the window): back in service`,
  };
}
