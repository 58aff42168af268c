/**
 * What one sweep carries per node while it moves the node's incidents along (sweep.ts and its
 * steps, sweep-gpu.ts and sweep-node.ts): the facts, the state so far, and what the plan will do.
 */
import type { CloudAction, KubeEventNote, Notice } from '../../lib/plan.ts';
import type { GpuActionState } from '../../../events/index.ts';
import type { Incident, NodeState } from './state.ts';
import type { PodFacts } from './types.ts';
import type { SweepNodeFacts } from './sweep.ts';

export interface Work {
  facts: SweepNodeFacts;
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

export const MIN = 60_000;
