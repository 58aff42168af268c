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
 * Closed incidents keep `closedAt`, so stale replays never reopen them. Pure. The GPU's steps are in
 * sweep-fence.ts (its fence held, then lifted) and sweep-gpu.ts (its repair); what they hand on to the
 * node's repair (a rung to climb, a reboot or replacement) is carried out once, in sweep-node.ts.
 */
import { checkBlastRadius, takesCapacity } from './blast-radius.ts';
import type { FenceBackend, Policy } from './policy.ts';
import { adoptOrphans } from './reconcile.ts';
import { evictable } from './scope.ts';
import { cmp, isOpen, type Incident, type NodeState } from './state.ts';
import type { Capabilities, NodeFacts, Plan, PodFacts, PoolFacts, ReplaceFacts } from './types.ts';
import { stepReplace } from './replace.ts';
import { notice } from './plan.ts';
import { repairOf } from './words.ts';
import { readResults } from './gpu-repair.ts';
import { fenced, withFence } from './fence.ts';
import { fenceBackendFor } from './fence-cgpu.ts';
import { needsReplace, needsReset } from './recovery.ts';
import { repairStep, replaceGpu } from './sweep-gpu.ts';
import { holdFence, lift } from './sweep-fence.ts';
import { escalate } from './sweep-node.ts';
import { afterReboot, afterRepair } from './sweep-return.ts';
import { MIN, type Round, type Stepped, type Work } from './sweep-work.ts';
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
    const backend = fenceBackendFor(policy, w.facts.pool.name, w.facts.node);
    const incidents = w.state.incidents.map((i) => {
      const s = isOpen(i) ? step(i, backend, w, facts, policy, retries) : i;
      return isOpen(s) ? s : lift(s, w, facts, policy);
    });
    w.state = { ...w.state, incidents };
  }
  grantApprovals(work, facts, policy);
  return { plans: work.map((w) => toPlan(w, facts, policy)).filter((p): p is Plan => p !== undefined), retries };
}

/** Moves one open incident along (see the file comment); what it hands on to the node's repair is carried out after. */
function step(
  open: Incident,
  backend: FenceBackend,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  retries: SweepPlan['retries'],
): Incident {
  // An incident that holds its GPU out gets its fence first (fence.ts), then every fence is held,
  // whatever phase its incident is in: seen, re-verified, restored, reported.
  const i0 = withFence(open, backend, w.facts.node, w.state);
  const i = fenced(i0) ? holdFence(i0, w, facts, policy) : i0;
  const stepped = advance(i, w, facts, policy, retries);
  return escalate(stepped, w, facts, policy);
}

function advance(i: Incident, w: Work, facts: SweepFacts, policy: Policy, retries: SweepPlan['retries']): Stepped {
  const now = facts.now;
  const node = w.facts.node.name;
  const quietSince = Math.max(Date.parse(i.lastAt), Date.parse(i.since), i.resolvedAt ? Date.parse(i.resolvedAt) : 0);
  const quiet = now.getTime() - quietSince >= policy.quietPeriodMinutes * MIN;
  const close = (why: string, x: Incident = i): Incident => {
    w.reasons.push(why);
    const closed: Incident = { ...x, phase: 'closed', closedAt: now.toISOString() };
    w.touched.push(closed);
    if (i.phase === 'quarantined' || i.phase === 'draining' || i.phase === 'awaiting-repair') w.back.push(closed);
    return closed;
  };
  const retry = (pods: PodFacts[]) => {
    for (const p of pods) {
      w.evictions.push(p);
      retries.push({ node, pod: `${p.namespace}/${p.name}`, incident: i.key, since: i.since });
    }
  };
  switch (i.phase) {
    case 'observing':
    case 'acted':
      return now.getTime() - Date.parse(i.lastAt) >= policy.escalation.windowMinutes * MIN
        ? close(`${i.key}: quiet for ${policy.escalation.windowMinutes} min, closed`)
        : i;
    case 'quarantined': {
      const held = i;
      if (needsReset(held)) return repairStep(held, w, facts, policy, retry);
      if (needsReplace(held)) return replaceGpu(held, w, facts, policy, retry);
      // A condition (unlike an XID) is still true until the agent says it resolved, or a person
      // says the node was repaired after the condition was last seen.
      const cleared =
        held.condition === undefined ||
        held.resolvedAt !== undefined ||
        (w.state.repairedAt !== undefined && cmp(w.state.repairedAt, held.lastAt) >= 0);
      if (quiet && cleared)
        return close(
          `${held.key}: quiet for ${policy.quietPeriodMinutes} min after quarantine, the GPU returns to service`,
          held,
        );
      retry(evictable(w.facts.pods).filter((p) => held.pods.includes(p.uid)));
      return held;
    }
    case 'draining': {
      const left = evictable(w.facts.pods);
      const repair = repairOf(i.ladder, i.level);
      if (left.length === 0) return { escalate: 'repair', incident: i, repair, why: `${node} is drained` };
      if (now.getTime() - Date.parse(i.since) < policy.drainTimeoutMinutes * MIN) {
        retry(left);
        return i;
      }
      const names = left
        .slice(0, 5)
        .map((p) => `${p.namespace}/${p.name}`)
        .join(', ');
      const timeout = `${policy.drainTimeoutMinutes} min drain timeout`;
      const stuck = `${left.length} pod(s) still on ${node} after the ${timeout} (${names})`;
      const nextRung = i.ladder[i.level + 1];
      if (
        nextRung &&
        (nextRung === 'reboot-node' || nextRung === 'replace-node') &&
        (repair === nextRung || i.action === 'drain-node')
      ) {
        // Deliberate: a drain stuck past its timeout on a broken node goes on to repair rather than
        // hold a dead GPU forever; the remaining pods die with the reboot. Raise drainTimeoutMinutes to wait longer.
        return {
          escalate: 'repair',
          incident: { ...i, level: i.level + 1, action: nextRung, escalatedAt: now.toISOString() },
          repair: nextRung,
          why: `${stuck}; escalating to ${nextRung}`,
        };
      }
      retry(left);
      if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(i.since)) return i;
      w.notices.push(
        notice(
          i.action,
          w.facts.node,
          `${stuck}; nothing further to escalate to: a person must look (disruption budgets may be blocking)`,
        ),
      );
      w.reasons.push(stuck);
      const notified = { ...i, notifiedAt: now.toISOString() };
      w.touched.push(notified);
      return notified;
    }
    case 'awaiting-repair': {
      // A repair counts when it happened after the fault was last seen (an older repaired-at is a
      // past repair); for an orphan nobody knows when the fault was, so any repair counts.
      const repaired = w.state.repairedAt && (i.trigger === 'orphan' || cmp(w.state.repairedAt, i.lastAt) >= 0);
      // A person's repaired-at also ends a replacement that stalled (no new node, a failed removal).
      if (i.replace && !repaired)
        return {
          escalate: 'replace',
          step: stepReplace(i, i.replace, w.facts.node, w.facts.replace, now, policy, w.round.claimed),
          incident: i,
        };
      if (i.reboot) return afterReboot(i, i.reboot, w, facts, policy, close);
      // Evidence, not time: a GPU returns on a passed probe after the repair (sweep-node.ts afterRepair).
      return repaired ? afterRepair(i, w.state.repairedAt!, w, facts, policy, close) : i;
    }
    default:
      return i; // awaiting-approval: grantApprovals
  }
}

/** Held-back incidents, oldest first across all nodes, get acted on while their pool has room. */
function grantApprovals(work: Work[], facts: SweepFacts, policy: Policy): void {
  const waiting = work.flatMap((w) =>
    w.state.incidents.filter((i) => i.phase === 'awaiting-approval').map((i) => ({ w, i })),
  );
  waiting.sort((a, b) => cmp(a.i.firstAt, b.i.firstAt) || a.w.facts.node.name.localeCompare(b.w.facts.node.name));
  const granted = new Map<string, string[]>();
  for (const { w, i } of waiting) {
    const decision = facts.decisions?.find((d) => d.incident === i.key)?.decision;
    if (decision === 'rejected') {
      const closed: Incident = { ...i, phase: 'closed', closedAt: facts.now.toISOString() };
      w.state = { ...w.state, incidents: w.state.incidents.map((x) => (x === i ? closed : x)) };
      w.reasons.push(`${i.key}: ${i.action} rejected in chat; the incident is closed and left to a person`);
      w.touched.push(closed);
      continue;
    }
    const pool = w.facts.pool;
    const extra = granted.get(pool.name) ?? [];
    const counted: PoolFacts = {
      ...pool,
      quarantinedInWindow: pool.quarantinedInWindow + extra.length,
      quarantinedNodes: [...pool.quarantinedNodes, ...extra],
    };
    const out = w.state.incidents.some(
      (x) =>
        isOpen(x) && x !== i && (x.phase === 'quarantined' || x.phase === 'draining' || x.phase === 'awaiting-repair'),
    );
    if (
      !takesCapacity(i.action) ||
      (decision !== 'approved' && !checkBlastRadius(policy, counted, w.facts.node.name, out).allowed)
    )
      continue;
    const node = w.facts.node.name;
    const drains = i.action !== 'quarantine-gpu';
    const pods = drains
      ? evictable(w.facts.pods)
      : evictable(w.facts.pods).filter((p) =>
          i.workloads.length > 0
            ? i.workloads.includes(p.uid)
            : p.requestsGpu && (p.gpus === undefined || (i.gpu !== undefined && p.gpus.includes(i.gpu))),
        );
    const acted: Incident = {
      ...i,
      phase: drains ? 'draining' : 'quarantined',
      since: facts.now.toISOString(),
      outAt: i.outAt ?? facts.now.toISOString(),
      pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])],
    };
    w.state = { ...w.state, incidents: w.state.incidents.map((x) => (x === i ? acted : x)) };
    w.evictions.push(...pods);
    const text =
      decision === 'approved'
        ? `${i.key}: ${i.action} approved in chat, going ahead`
        : `${i.key}: the pool ${pool.name} has room again, ${i.action} goes ahead (first come, first served)`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
    w.touched.push(acted);
    if (!out && !pool.quarantinedNodes.includes(node)) granted.set(pool.name, [...extra, node]);
  }
}
