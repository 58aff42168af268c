/**
 * The node-level half of every plan. Planners change incidents only; this derives what the node
 * must look like from the open incidents (state label, quarantined GPUs, taint, cordon) and the
 * typed node edit that takes it there from what it is now. One place decides it, so the event planner and
 * the sweep can never disagree about what "quarantined" looks like on a node.
 *
 * Per-GPU quarantine and taints: a taint cannot name one GPU, it makes the whole node
 * unschedulable. So quarantining a GPU sets the quarantined-gpus annotation and the state label
 * and moves that GPU's pods; the agent / device plugin drops the GPU from allocatable. The node is
 * tainted only when every GPU it has (known from `NodeFacts.gpus`) is quarantined whole, or when a
 * drain / repair is under way.
 */
import {
  encodeHistory,
  isOpen,
  QUARANTINED_GPUS_ANNOTATION,
  HISTORY_ANNOTATION,
  STATE_LABEL,
  type Incident,
  type NodePhase,
  type NodeState,
} from './state.ts';
import { emptyEdit, isEmptyEdit, type NodeEdit } from '../../lib/plan.ts';
import type { NodeFacts } from './types.ts';
import { carriesGpuActions, type GpuAction, type GpuActionSet } from '../../lib/gpu-actions.ts';
import { gpuActionsOf } from './gpu-repair.ts';
import { deviceTaintChange } from './fence-dra.ts';
import { cardFenceChange } from './fence-cgpu.ts';
import type { Plan } from './types.ts';
import { backendOf, fenced, fencedByTaint, withFence } from './fence.ts';
import type { FenceBackend, Policy } from './policy.ts';

const PHASE_RANK: Record<NodePhase, number> = {
  healthy: 0,
  'awaiting-approval': 1,
  quarantined: 2,
  'awaiting-repair': 3,
  draining: 4,
};

/** The quarantined-gpus entry of an incident: MIG UUID, `GPU-…/gi<n>`, or the GPU UUID. */
export function quarantineIdOf(i: Pick<Incident, 'gpu' | 'mig' | 'qid'>): string | undefined {
  if (i.qid) return i.qid;
  if (!i.gpu) return undefined;
  if (i.mig) return i.mig.uuid ?? `${i.gpu}/gi${i.mig.gi}`;
  return i.gpu;
}

function nodePhaseOf(i: Incident): NodePhase {
  switch (i.phase) {
    case 'draining':
    case 'awaiting-repair':
    case 'quarantined':
    case 'awaiting-approval':
      return i.phase;
    default:
      return 'healthy';
  }
}

function newest(incidents: Incident[]): Incident | undefined {
  return [...incidents].sort((a, b) => Date.parse(a.since) - Date.parse(b.since)).at(-1);
}

/**
 * Derives the node-level fields of `next` from its open incidents. `backend`: how the node's pool
 * fences a GPU, given to each incident that starts holding its GPU out.
 */
export function deriveNode(prev: NodeState, next0: NodeState, node: NodeFacts, backend: FenceBackend): NodeState {
  const next = { ...next0, incidents: next0.incidents.map((i) => withFence(i, backend, node, next0)) };
  const open = next.incidents.filter(isOpen);
  const phase = open.map(nodePhaseOf).reduce<NodePhase>((a, b) => (PHASE_RANK[b] > PHASE_RANK[a] ? b : a), 'healthy');
  const quarantined = open.filter((i) => i.phase === 'quarantined');
  const quarantinedGpus = [
    ...new Set(quarantined.map(quarantineIdOf).filter((q): q is string => q !== undefined)),
  ].sort();
  const out = open.filter((i) => i.phase === 'draining' || i.phase === 'awaiting-repair');
  const gpus = node.gpus ?? [];
  const allGpusOut = gpus.length > 0 && gpus.every((g) => quarantinedGpus.includes(g));
  // A GPU no device plugin can hold out (the `cordon` backend, or a fence that fell back) takes the node.
  const why = newest(out) ?? (allGpusOut ? newest(quarantined) : undefined) ?? newest(open.filter(fencedByTaint));
  // Keep the value the node already has while a taint is still needed: no churn, no flapping.
  const taint = why ? (prev.taint ?? why.trigger) : undefined;
  // We cordon only a node that is schedulable; an admin's cordon stays the admin's.
  const cordoned = out.length > 0 ? prev.cordoned || !node.unschedulable : false;
  const { taint: _t, ...rest } = next;
  return { ...rest, phase, quarantinedGpus, cordoned, ...(taint ? { taint: taintValue(taint) } : {}) };
}

/** Taint and label values must be ≤ 63 characters of [A-Za-z0-9._-]. */
export function taintValue(reason: string): string {
  return (
    reason
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .slice(0, 63)
      .replace(/^[^A-Za-z0-9]+|[^A-Za-z0-9]+$/g, '') || 'unhealthy'
  );
}

/**
 * Everything a plan changes on the node to take it from `prev` to `next`: its edit (labels, taint, cordon, history,
 * the GPU actions it should carry), its DRA DeviceTaintRules, its gpushare card list, and the GPU actions newly asked
 * (for the Remediation's steps). The event planner and the sweep both build their plans' node half here.
 */
export function nodeChanges(
  prev: NodeState,
  next: NodeState,
  node: NodeFacts,
  policy: Pick<Policy, 'taintKey' | 'repair'>,
): Pick<Plan, 'nodeEdit' | 'deviceTaints' | 'cardFences' | 'gpuActions'> {
  // The GPU actions `next` asks of the agent, once: the node edit carries them, and those `prev` did not ask are new.
  const wanted = gpuActionsOf(next, policy);
  const before = new Set(gpuActionsOf(prev, policy).map((r) => r.id));
  const asked = wanted.filter((r) => !before.has(r.id));
  const edit = nodeEdit(prev, next, node, policy.taintKey, wanted);
  const taints = deviceTaintChange(next, node, policy);
  const cards = cardFenceChange(next, node);
  return {
    ...(edit ? { nodeEdit: edit } : {}),
    ...(taints ? { deviceTaints: taints } : {}),
    ...(cards ? { cardFences: cards } : {}),
    ...(asked.length > 0 ? { gpuActions: asked } : {}),
  };
}

/**
 * The node edit that takes the node from `prev` (what it carries now) to `next`, as values, `wanted` the GPU actions
 * it should carry; the history itself rides along as the typed `record` (encoded once, by the applier). Undefined
 * when the node already is `next`.
 */
function nodeEdit(
  prev: NodeState,
  next: NodeState,
  node: NodeFacts,
  taintKey: string,
  wanted: GpuAction[],
): NodeEdit<NodeState> | undefined {
  const edit = emptyEdit<NodeState>(node.name);
  if (next.taint && next.taint !== prev.taint)
    edit.addTaints.push({ key: taintKey, value: next.taint, effect: 'NoSchedule' });
  if (!next.taint && prev.taint) edit.removeTaints.push({ key: taintKey, effect: 'NoSchedule' });
  if (next.cordoned && !node.unschedulable) edit.unschedulable = true;
  if (!next.cordoned && prev.cordoned && node.unschedulable) edit.unschedulable = false;
  if (next.phase !== prev.phase || (node.labels[STATE_LABEL] ?? 'healthy') !== next.phase)
    edit.labels[STATE_LABEL] = next.phase;
  if (JSON.stringify(next.quarantinedGpus) !== JSON.stringify(prev.quarantinedGpus)) {
    edit.annotations[QUARANTINED_GPUS_ANNOTATION] =
      next.quarantinedGpus.length > 0 ? JSON.stringify(next.quarantinedGpus) : null;
  }
  // What the node's agent must do to its GPUs, as the node should carry it (drift corrected too): the
  // kernel's applier merges remediation's set into the node's requests, beside other reflexes'.
  const actions: GpuActionSet = { owner: 'remediate', actions: wanted };
  // Where people look (kubectl describe node): a condition that names the GPUs held out.
  const condition = fencedCondition(next);
  const had = node.conditions?.[FENCED_CONDITION];
  if (condition.status === 'True' || had !== undefined) {
    if (!had || had.status !== condition.status || had.message !== condition.message) edit.condition = condition;
  }
  if (!carriesGpuActions(node.annotations, actions, node.name)) edit.gpuActions = actions;
  if (encodeHistory(next) !== encodeHistory(prev)) edit.record = next;
  return isEmptyEdit(edit) ? undefined : edit;
}

/** The Node condition gpu-reflex keeps: which GPUs it holds out of scheduling, if any. */
export const FENCED_CONDITION = 'GpuReflexGpuFenced';

const HOW: Record<FenceBackend, string> = {
  'ack-file': "the ACK device plugin's unhealthy-devices file",
  'nvidia-plugin': "NVIDIA's device plugin",
  dra: 'a DRA DeviceTaintRule on its device',
  cordon: 'a NoSchedule taint on the node',
  'ack-cgpu': "its card's index in ACK gpushare's unhealthy-gpu ConfigMap",
};

function fencedCondition(state: NodeState): NonNullable<NodeEdit<NodeState>['condition']> {
  const held = state.incidents.filter((i) => isOpen(i) && fenced(i) && i.gpu);
  const gpus = [...new Set(held.map((i) => i.gpu!))].sort();
  if (gpus.length === 0)
    return {
      type: FENCED_CONDITION,
      status: 'False',
      reason: 'NoGpuFenced',
      message: 'gpu-reflex holds no GPU of this node out of scheduling',
    };
  const how = [...new Set(held.map((i) => (fencedByTaint(i) ? HOW.cordon : HOW[backendOf(i)])))].join(' and ');
  return {
    type: FENCED_CONDITION,
    status: 'True',
    reason: held.some(fencedByTaint) ? 'GpuFencedByNodeTaint' : 'GpuFenced',
    message:
      `gpu-reflex holds ${gpus.length === 1 ? 'GPU' : `${gpus.length} GPUs`} out of scheduling (through ${how}) ` +
      `until a reset and a passed health probe: ${gpus.join(', ')}`,
  };
}

/** How the history record is stored on the node: the applier's codec for `NodeEdit.record`. */
export function historyCodec(state: NodeState): { annotations: Record<string, string> } {
  return { annotations: { [HISTORY_ANNOTATION]: encodeHistory(state) } };
}

/**
 * A node that says it is out (label, taint, quarantined GPUs) but whose history does not explain
 * why (history lost or corrupt) gets one `orphan` incident from `now`, so the sweep can restore it
 * after the quiet period like any other: nothing latches.
 */
export function adoptOrphans(state: NodeState, node: string, now: Date): NodeState {
  const open = state.incidents.filter(isOpen);
  const explainedGpus = new Set(open.map(quarantineIdOf));
  const orphanGpus = state.quarantinedGpus.filter((g) => !explainedGpus.has(g));
  const phaseOut = state.phase !== 'healthy' && !open.some((i) => nodePhaseOf(i) === state.phase);
  const taintOut =
    state.taint !== undefined &&
    !open.some((i) => i.phase === 'draining' || i.phase === 'awaiting-repair' || i.phase === 'quarantined');
  if (!phaseOut && !taintOut && orphanGpus.length === 0) return state;

  const at = now.toISOString();
  const base = {
    trigger: 'orphan',
    level: 0,
    firstAt: at,
    lastAt: at,
    outAt: at,
    count: 0,
    workloads: [],
    pods: [],
    since: at,
    eventId: 'orphan',
  };
  const drain = (phase: 'draining' | 'awaiting-repair'): Incident => ({
    ...base,
    key: `${node}/orphan`,
    scope: 'node',
    action: 'drain-node',
    ladder: ['drain-node'],
    phase,
  });
  const quarantine = (qid?: string): Incident => ({
    ...base,
    key: qid ? `${node}/${qid}/orphan` : `${node}/orphan`,
    scope: qid ? 'gpu' : 'node',
    action: 'quarantine-gpu',
    ladder: ['quarantine-gpu'],
    phase: 'quarantined',
    ...(qid ? { qid } : {}),
  });

  let adopted: Incident[];
  if (state.phase === 'draining' || state.phase === 'awaiting-repair') adopted = [drain(state.phase)];
  else if (taintOut && state.phase !== 'quarantined') adopted = [drain('draining')];
  else if (orphanGpus.length > 0) adopted = orphanGpus.map((g) => quarantine(g));
  else if (state.phase === 'quarantined') adopted = [quarantine()];
  // A held-back node (awaiting-approval) was never taken out: it simply reads as healthy again.
  else return { ...state, phase: 'healthy' };

  const keys = new Set(adopted.map((i) => i.key));
  return {
    ...state,
    incidents: [...state.incidents.filter((i) => !keys.has(i.key)), ...adopted],
    warnings: [
      ...state.warnings,
      `node ${node} was out of service without a history: ` +
        'adopted as an orphan incident, restored after the quiet period',
    ],
  };
}
