/**
 * What one sweep carries per node while it moves the node's incidents along (sweep.ts and its
 * steps, sweep-gpu.ts and sweep-node.ts): the facts, the state so far, and what the plan will do.
 */
import type { CloudAction, KubeEventNote, Notice } from '../../lib/plan.ts';
import type { GpuActionState } from '../../../events/index.ts';
import type { FenceBackend } from './policy.ts';
import type { Incident, NodeState } from './state.ts';
import type { PodFacts } from './types.ts';
import type { SweepNodeFacts } from './sweep.ts';
import type { ReplaceStep } from './replace.ts';

export interface Work {
  facts: SweepNodeFacts;
  /** How this node's GPUs are fenced (fence-cgpu.ts fenceBackendFor): decided once a round, used by each stage. */
  backend: FenceBackend;
  /** The node agent's answers to our GPU actions (gpu-repair.ts). */
  results: Readonly<Record<string, GpuActionState>>;
  state: NodeState;
  evictions: PodFacts[];
  notices: Notice[];
  cloud: CloudAction[];
  /** Kubernetes Events for the node (a fence that drifted, was restored, fell back). */
  nodeEvents: KubeEventNote[];
  reasons: string[];
  touched: Incident[];
  /** Incidents that had GPUs or the node out of service and are now closed. */
  back: Incident[];
  /** A restored GPU's fence is being lifted (NVIDIA's device plugin restarted): part of its restore. */
  unlatching: boolean;
  /** Shared by all nodes this round: replacements' grows per pool, and new nodes already claimed. */
  round: Round;
}

export interface Round {
  grows: Map<string, number>;
  claimed: Set<string>;
}

/**
 * What a step hands on to the node's repair (sweep-node.ts `escalate`) instead of calling it: a rung
 * to climb (a GPU repair failed), a node repair to start (drained, or not cured by a reboot), or a
 * replacement's next step. The step that decides it says why; the repair is carried out once, after it.
 */
export type Escalation =
  | { escalate: 'climb'; incident: Incident; why: string }
  | { escalate: 'repair'; incident: Incident; repair: 'reboot-node' | 'replace-node' | undefined; why: string }
  | { escalate: 'replace'; step: ReplaceStep; incident: Incident };

/** A step's outcome: the incident as it now stands, or an escalation to carry out. */
export type Stepped = Incident | Escalation;

export const MIN = 60_000;
