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
 * A node-wide incident (no GPU named) after a reboot is decided per GPU: each GPU the node listed
 * before it (`reboot.gpus`) gets its own probe, and the node returns only when every one passed; one
 * missing or failed keeps it out, and no GPU known at all is no evidence either. After a person's
 * repaired-at the same, over the GPUs the node lists then (`repair.gpus`).
 *
 * The sweep also fails the probe on what it saw itself: another incident of the same GPU whose
 * fault was last seen during the window (an XID or a health condition the functions received while
 * the agent watched). Pure.
 */
import { readGpuDevices, readMigInventory, type GpuActionState } from '../../../events/index.ts';
import { fnv1a } from '../../lib/hash.ts';
import { nodeProbes, probePassed, probeWords, requestId } from './gpu-repair.ts';
import type { Policy } from './policy.ts';
import { cmp, isOpen, type Incident, type NodeState } from './state.ts';
import type { NodeFacts } from './types.ts';

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
  if (!p || p.step !== 'probe' || !i.gpu) return { kind: 'wait' };
  const v = judge(i, i.gpu, results[p.id], p.at, state, now, policy);
  if (v.kind !== 'passed') return v.kind === 'wait' ? v : { ...v, incident: i };
  return {
    kind: 'passed',
    incident: { ...i, repair: undefined, probedAt: v.at },
    why:
      `${i.gpu}'s health probe after ${afterWhat(i)} passed at ${v.at} (NVML lists it, ` +
      `recovery action ${v.recoveryAction}, no remap pending or failed, no XID during the window): back in service`,
  };
}

/** The GPUs a node-wide incident's return must hear from: those the node listed before the reboot. */
export function nodeGpusOf(node: Pick<NodeFacts, 'gpus' | 'annotations'>): string[] {
  const devices = readGpuDevices(node.annotations);
  const mig = readMigInventory(node.annotations).inventory;
  const all = [
    ...(node.gpus ?? []),
    ...(devices?.known ? Object.keys(devices.gpus) : []),
    ...(mig?.gpus.map((g) => g.uuid) ?? []),
  ];
  return [...new Set(all)].sort().slice(0, 16);
}

/**
 * A node-wide incident back from its reboot: one probe per GPU the node had before it
 * (`reboot.gpus`). Undefined when no GPU of the node is known: nothing can be probed, and unknown is
 * never healthy (the caller keeps the node out).
 */
export function askNodeProbes(i: Incident, gpus: readonly string[], backAt: string, now: Date): Incident | undefined {
  if (i.gpu || !i.reboot || gpus.length === 0) return undefined;
  const cause = { kind: 'reboot', backAt } as const;
  return {
    ...i,
    reboot: { ...i.reboot, gpus: [...gpus] },
    repair: { step: 'probe', id: returnProbeId(i, cause), at: now.toISOString() },
  };
}

/**
 * A node-wide incident after a person's `repaired-at`: one probe per GPU the node lists (its agent's
 * allocatable-devices and MIG inventory, its GPU inventory), recorded on the probe (`repair.gpus`).
 * Undefined when no GPU of the node is known: nothing can be probed, and unknown is never healthy.
 */
export function askNodeRepairProbes(
  i: Incident,
  gpus: readonly string[],
  repairedAt: string,
  now: Date,
): Incident | undefined {
  if (i.gpu || gpus.length === 0) return undefined;
  const id = returnProbeId(i, { kind: 'repaired', repairedAt });
  return { ...i, repair: { step: 'probe', id, at: now.toISOString(), gpus: [...gpus] } };
}

/**
 * Each GPU of a node-wide incident returns only on its own passed probe: the first that fails (or
 * is missing) decides at once; all passed returns the node. A GPU missing after the reboot keeps it out.
 */
export function stepNodeProbes(
  i: Incident,
  state: Pick<NodeState, 'incidents'>,
  results: Readonly<Record<string, GpuActionState>>,
  now: Date,
  policy: Pick<Policy, 'repair'>,
): ReturnStep {
  const probes = nodeProbes(i);
  if (probes.length === 0) return { kind: 'wait' };
  const verdicts = probes.map((p) => judge(i, p.gpu, results[p.id], i.repair!.at, state, now, policy));
  const failed = verdicts.filter((v): v is Extract<Verdict, { kind: 'failed' }> => v.kind === 'failed');
  if (failed.length > 0)
    return {
      kind: 'failed',
      incident: i,
      missing: failed.some((v) => v.missing),
      why: failed.map((v) => v.why).join('; '),
    };
  const passed = verdicts.filter((v): v is Extract<Verdict, { kind: 'passed' }> => v.kind === 'passed');
  if (passed.length < verdicts.length) return { kind: 'wait' };
  const last = passed.map((v) => v.at).sort((a, b) => cmp(a, b))[passed.length - 1]!;
  return {
    kind: 'passed',
    incident: { ...i, repair: undefined, probedAt: last },
    why:
      `each of the node's ${passed.length} GPUs passed its own health probe after ${afterWhat(i)} (the last at ` +
      `${last}: NVML lists it, recovery action none, no remap pending or failed, no XID during the window): ` +
      'back in service',
  };
}

/** The return's probe as one step: asked now (`gpus`: how many it probes), no GPU known to ask of, or judged. */
export type ReturnProbe = ReturnStep | { kind: 'asked'; incident: Incident; gpus: number } | { kind: 'unknown' };

/**
 * The probe a return after `cause` waits for: asked when it has not been yet, else its answers judged. A GPU incident
 * probes its GPU; a node-wide one each GPU the node had (after a reboot those recorded before it, else those it lists
 * now; after a person's repaired-at those it lists now), and none known is `unknown`: nothing can be asked.
 */
export function probeReturn(
  i: Incident,
  cause: ReturnCause,
  node: Pick<NodeFacts, 'gpus' | 'annotations'>,
  state: Pick<NodeState, 'incidents'>,
  results: Readonly<Record<string, GpuActionState>>,
  now: Date,
  policy: Pick<Policy, 'repair'>,
): ReturnProbe {
  if (i.gpu) {
    if (!probing(i, cause)) return { kind: 'asked', incident: askReturnProbe(i, cause, now)!, gpus: 1 };
    return stepReturnProbe(i, state, results, now, policy);
  }
  if (probing(i, cause) && nodeProbes(i).length > 0) return stepNodeProbes(i, state, results, now, policy);
  const gpus = cause.kind === 'reboot' ? (i.reboot?.gpus ?? nodeGpusOf(node)) : nodeGpusOf(node);
  const asked =
    cause.kind === 'reboot'
      ? askNodeProbes(i, gpus, cause.backAt, now)
      : askNodeRepairProbes(i, gpus, cause.repairedAt, now);
  return asked ? { kind: 'asked', incident: asked, gpus: gpus.length } : { kind: 'unknown' };
}

type Verdict =
  | { kind: 'wait' }
  | { kind: 'passed'; at: string; recoveryAction: string }
  | { kind: 'failed'; why: string; missing: boolean };

const afterWhat = (i: Incident): string => (i.reboot?.backAt ? 'its reboot' : 'its repair');

/** One GPU's probe answer, judged: evidence only (unknown is never healthy). */
function judge(
  i: Incident,
  gpu: string,
  r: GpuActionState | undefined,
  askedAt: string,
  state: Pick<NodeState, 'incidents'>,
  now: Date,
  policy: Pick<Policy, 'repair'>,
): Verdict {
  const after = afterWhat(i);
  if (r === undefined || r.state === 'requested' || r.state === 'running') {
    if (now.getTime() - Date.parse(askedAt) < policy.repair.answerTimeoutMinutes * MIN) return { kind: 'wait' };
    const answer = r ? `still ${r.state}` : 'no answer at all: is the agent running with its actuator?';
    return {
      kind: 'failed',
      missing: false,
      why:
        `the node agent did not answer the health probe of ${gpu} after ${after} within ` +
        `${policy.repair.answerTimeoutMinutes} min (${answer})`,
    };
  }
  if (r.state === 'failed')
    return {
      kind: 'failed',
      missing: false,
      why: `the health probe of ${gpu} after ${after} failed on the node: ${r.reason ?? 'no reason given'}`,
    };
  // What the functions saw themselves during the window: another fault of this GPU.
  const seen = state.incidents.filter(
    (x) =>
      x.key !== i.key &&
      x.gpu === gpu &&
      isOpen(x) &&
      Date.parse(x.lastAt) >= Date.parse(askedAt) &&
      Date.parse(x.lastAt) <= Date.parse(r.at),
  );
  const probe = r.probe;
  // Unknown is never healthy: no probe, or one that does not say the GPU is counted, does not pass.
  const missing = probe !== undefined && (probe.counted === false || !probe.nvmlAnswers);
  const passed = probePassed(probe, policy);
  if (!passed || probe?.counted !== true || seen.length > 0) {
    const bad = [
      passed ? (probe?.counted === true ? '' : 'the agent did not say whether NVML lists it') : probeWords(r, policy),
      ...seen.map((x) => `${x.key} seen at ${x.lastAt}, during the probe window`),
    ]
      .filter(Boolean)
      .join('; ');
    return { kind: 'failed', missing, why: `the health probe of ${gpu} after ${after} did not pass: ${bad}` };
  }
  return { kind: 'passed', at: r.at, recoveryAction: probe!.recoveryAction };
}
