/**
 * planSweep: the scheduled sweep (every minute) over every node that carries gpu-reflex state.
 * Every state has a way out, so nothing latches:
 *
 * - observing / acted      → closed once quiet for the escalation window
 * - quarantined            → evictions retried; restored once quiet for the quiet period (health
 *                            conditions also need their `resolved`, or a repaired-at after them)
 * - draining               → evictions retried; drained → awaiting-repair (+ reboot/replace when a
 *                            cloud adapter can, else a person is told); stuck past the drain
 *                            timeout → the next rung of `then`, or a person is told
 * - awaiting-repair        → after our reboot: back (new boot id, Ready), then a passed health
 *                            probe of its GPU → restored (return-probe.ts; a node-wide incident:
 *                            a passed probe of each GPU it had); a replacement (replace.ts):
 *                            new node Ready → old one removed;
 *                            else once `gpu-reflex.io/repaired-at` is set, the same probe (or quiet)
 * - awaiting-approval      → acted on by itself when the pool's window has room again (first come,
 *                            first served by when the fault was first seen), or when approved
 *
 * Closed incidents keep `closedAt`, so stale replays never reopen them. Pure. This file only runs the
 * pipeline, each stage once per incident, in order: the fence taken and held (sweep-fence.ts), the
 * incident's step (sweep-step.ts: its phase, with the GPU's repair in sweep-gpu.ts and the node's return
 * in sweep-return.ts; what a step hands on to the node's repair, a rung to climb, a reboot or replacement,
 * carried out once in sweep-node.ts), the fence lifted once it closes; then held-back incidents granted
 * where their pool has room (sweep-approvals.ts), and each node's plan (sweep-to-plan.ts).
 */
import type { Policy } from './policy.ts';
import { adoptOrphans } from './reconcile.ts';
import type { Capabilities, NodeFacts, Plan, PodFacts, PoolFacts, ReplaceFacts } from './types.ts';
import { readResults } from './gpu-repair.ts';
import { fenceBackendFor } from './fence-cgpu.ts';
import { isOpen, type NodeState } from './state.ts';
import { holdFence, lift } from './sweep-fence.ts';
import { step } from './sweep-step.ts';
import { grantApprovals } from './sweep-approvals.ts';
import type { Round, Work } from './sweep-work.ts';
import { toPlan } from './sweep-to-plan.ts';

export interface SweepNodeFacts {
  node: NodeFacts;
  state: NodeState;
  pool: PoolFacts;
  pods: PodFacts[];
  /** What can repair this node, where it differs from the sweep's (its pool's own auto repair). */
  capabilities?: Capabilities;
  /** Its ACK node pool, read for a node whose incident is at replace-node (replace.ts). */
  replace?: ReplaceFacts;
}

export interface SweepFacts {
  now: Date;
  nodes: SweepNodeFacts[];
  capabilities?: Capabilities;
  /**
   * Decisions people made in chat on held-back incidents (by incident key): `approved` acts
   * whatever the window says, `rejected` closes the incident (a person owns it now), `expired`
   * changes nothing (the sweep still acts once the window has room).
   */
  decisions?: { incident: string; decision: 'approved' | 'rejected' | 'expired' }[];
}

export interface SweepPlan {
  /** One plan per node that needs something done, in node-name order. */
  plans: Plan[];
  /** Evictions retried this round (blocked before by a disruption budget, or still pending). */
  retries: { node: string; pod: string; incident: string; since: string }[];
}

export function planSweep(facts: SweepFacts, policy: Policy): SweepPlan {
  const now = facts.now;
  const retries: SweepPlan['retries'] = [];
  const round: Round = { grows: new Map(), claimed: new Set() };
  const work: Work[] = [...facts.nodes]
    .sort((a, b) => a.node.name.localeCompare(b.node.name))
    .map((f) => {
      const read = readResults(f.node.annotations);
      return {
        facts: f,
        backend: fenceBackendFor(policy, f.pool.name, f.node),
        results: read.results,
        state: adoptOrphans(f.state, f.node.name, now),
        evictions: [],
        notices: [],
        cloud: [],
        nodeEvents: [],
        reasons: read.warning ? [read.warning] : [],
        touched: [],
        back: [],
        unlatching: false,
        round,
      };
    });

  for (const w of work) {
    // Each open incident: its fence taken and held (sweep-fence.ts), then its step (sweep-step.ts);
    // once closed, its fence lifted.
    const incidents = w.state.incidents.map((i) => {
      const held = isOpen(i) ? holdFence(i, w, facts, policy) : i;
      const s = isOpen(i) ? step(held, w, facts, policy, retries) : held;
      return isOpen(s) ? s : lift(s, w, facts, policy);
    });
    w.state = { ...w.state, incidents };
  }
  grantApprovals(work, facts, policy);
  return { plans: work.map((w) => toPlan(w, facts, policy)).filter((p): p is Plan => p !== undefined), retries };
}
