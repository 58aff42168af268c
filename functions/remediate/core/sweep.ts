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
 * - awaiting-repair        → after our reboot: back (new boot id, Ready), then quiet → restored;
 *                            a replacement (replace.ts): new node Ready → old one removed; else
 *                            restored once `gpu-reflex.io/repaired-at` is set and quiet has passed
 * - awaiting-approval      → acted on by itself when the pool's window has room again (first come,
 *                            first served by when the fault was first seen), or when approved
 *
 * Closed incidents keep `closedAt`, so stale replays never reopen them. Pure.
 */
import { checkBlastRadius, takesCapacity } from './blast-radius.ts';
import type { Policy } from './policy.ts';
import { editsScheduling, type CloudAction, type KubeEventNote, type Notice } from '../../lib/plan.ts';
import { adoptOrphans, newGpuActions, nodeEdit } from './reconcile.ts';
import { evictable } from './scope.ts';
import { cmp, isOpen, type Incident, type NodeState } from './state.ts';
import type { Capabilities, NodeFacts, Plan, PodFacts, PoolFacts, ReplaceFacts } from './types.ts';
import { startReplace, stepReplace, type ReplaceStep } from './replace.ts';
import { notice, withState } from './plan.ts';
import { fenceEventNote, repairOf } from './words.ts';
import { readResults, stepRepair, unfenceDone } from './gpu-repair.ts';
import { fenced, stepUnlatch, withFence } from './fence.ts';
import { checkFence } from './fence-check.ts';
import { deviceTaintChange, draLifted } from './fence-dra.ts';
import { needsReplace, needsReset } from './recovery.ts';
import { fenceBackendOf } from './policy.ts';
import { stepMigRestore } from './mig-restore.ts';
import type { GpuActionState } from '../../../events/index.ts';

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

interface Work {
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

interface Round {
  grows: Map<string, number>;
  claimed: Set<string>;
}

const MIN = 60_000;

export function planSweep(facts: SweepFacts, policy: Policy): SweepPlan {
  const now = facts.now;
  const retries: SweepPlan['retries'] = [];
  const round: Round = { grows: new Map(), claimed: new Set() };
  const work: Work[] = [...facts.nodes]
    .sort((a, b) => a.node.name.localeCompare(b.node.name))
    .map((f) => {
      const read = readResults(f.node.annotations);
      return { facts: f, results: read.results, state: adoptOrphans(f.state, f.node.name, now), evictions: [], notices: [], cloud: [], nodeEvents: [], reasons: read.warning ? [read.warning] : [], touched: [], back: [], unlatching: false, round };
    });

  for (const w of work) {
    const backend = fenceBackendOf(policy, w.facts.pool.name);
    const incidents = w.state.incidents.map((i) => {
      const s = isOpen(i) ? step(withFence(i, backend, w.facts.node, w.state), w, facts, policy, retries) : i;
      return isOpen(s) ? s : lift(s, w, facts, policy);
    });
    w.state = { ...w.state, incidents };
  }
  grantApprovals(work, facts, policy);
  return { plans: work.map((w) => toPlan(w, facts, policy)).filter((p): p is Plan => p !== undefined), retries };
}

/** Moves one open incident along (see the file comment). */
function step(i0: Incident, w: Work, facts: SweepFacts, policy: Policy, retries: SweepPlan['retries']): Incident {
  // Every fence is held, whatever phase its incident is in: seen, re-verified, restored, reported.
  const i = fenced(i0) ? holdFence(i0, w, facts, policy) : i0;
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
      return now.getTime() - Date.parse(i.lastAt) >= policy.escalation.windowMinutes * MIN ? close(`${i.key}: quiet for ${policy.escalation.windowMinutes} min, closed`) : i;
    case 'quarantined': {
      const held = i;
      if (needsReset(held)) return repairStep(held, w, facts, policy, retry);
      if (needsReplace(held)) return replaceGpu(held, w, facts, policy, retry);
      // A condition (unlike an XID) is still true until the agent says it resolved, or a person
      // says the node was repaired after the condition was last seen.
      const cleared = held.condition === undefined || held.resolvedAt !== undefined || (w.state.repairedAt !== undefined && cmp(w.state.repairedAt, held.lastAt) >= 0);
      if (quiet && cleared) return close(`${held.key}: quiet for ${policy.quietPeriodMinutes} min after quarantine, the GPU returns to service`, held);
      retry(evictable(w.facts.pods).filter((p) => held.pods.includes(p.uid)));
      return held;
    }
    case 'draining': {
      const left = evictable(w.facts.pods);
      const repair = repairOf(i.ladder, i.level);
      if (left.length === 0) return toRepair(i, repair, w, facts, `${node} is drained`);
      if (now.getTime() - Date.parse(i.since) < policy.drainTimeoutMinutes * MIN) {
        retry(left);
        return i;
      }
      const stuck = `${left.length} pod(s) still on ${node} after the ${policy.drainTimeoutMinutes} min drain timeout (${left.slice(0, 5).map((p) => `${p.namespace}/${p.name}`).join(', ')})`;
      const nextRung = i.ladder[i.level + 1];
      if (nextRung && (nextRung === 'reboot-node' || nextRung === 'replace-node') && (repair === nextRung || i.action === 'drain-node')) {
        // Deliberate: a drain stuck past its timeout on a broken node goes on to repair rather than
        // hold a dead GPU forever; the remaining pods die with the reboot. Raise drainTimeoutMinutes to wait longer.
        return toRepair({ ...i, level: i.level + 1, action: nextRung, escalatedAt: now.toISOString() }, nextRung, w, facts, `${stuck}; escalating to ${nextRung}`);
      }
      retry(left);
      if (i.notifiedAt && Date.parse(i.notifiedAt) >= Date.parse(i.since)) return i;
      w.notices.push(notice(i.action, w.facts.node, `${stuck}; nothing further to escalate to: a person must look (disruption budgets may be blocking)`));
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
      if (i.replace && !repaired) return replaced(stepReplace(i, i.replace, w.facts.node, w.facts.replace, now, policy, w.round.claimed), i, w);
      if (i.reboot) return afterReboot(i, i.reboot, w, facts, policy, close);
      const sinceRepair = repaired ? now.getTime() - Math.max(Date.parse(w.state.repairedAt!), i.trigger === 'orphan' ? 0 : Date.parse(i.lastAt)) : -1;
      if (repaired && sinceRepair >= policy.quietPeriodMinutes * MIN) return close(`${i.key}: repaired at ${w.state.repairedAt} and quiet for ${policy.quietPeriodMinutes} min, back in service`);
      return i;
    }
    default:
      return i; // awaiting-approval: grantApprovals
  }
}

/**
 * A closed incident's GPU fence is lifted: the agent's word that it left the fence file (bookkeeping
 * only), or NVIDIA's device plugin restarted on the node so it counts the GPU again (gpu-repair.ts).
 */
function lift(i: Incident, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const done = unfenceDone(i, w.results) ?? draLifted(i, w.facts.node, facts.now);
  if (done) return done;
  const u = stepUnlatch(i, w.state, w.facts.node, w.facts.pods, facts.now, policy);
  if (u.kind === 'none') return i;
  w.reasons.push(u.why);
  if (u.kind === 'restart') {
    w.unlatching = true;
    // Through the Eviction API like every pod we move; its DaemonSet recreates it.
    w.evictions.push(...u.pods);
    if (u.pods.length === 0 && !i.fence?.restartedAt) w.notices.push(notice('restore', w.facts.node, u.why));
  }
  return u.incident;
}

/**
 * A quarantined GPU that NVIDIA answers with a reset (gpu-repair.ts): its fence is verified, its
 * pods move, then the node agent resets and probes it, and only a passed probe returns it. Quiet
 * time restores nothing.
 */
function repairStep(i0: Incident, w: Work, facts: SweepFacts, policy: Policy, retry: (pods: PodFacts[]) => void): Incident {
  let i = i0;
  const left = evictable(w.facts.pods).filter((p) => i.pods.includes(p.uid));
  if (i.evictAt !== undefined) {
    // letWorkFinish (DRAIN_AND_RESET): its pods end by themselves until the deadline; then they move.
    if (left.length > 0 && facts.now.getTime() < Date.parse(i.evictAt)) return i;
    const why =
      left.length > 0
        ? `${left.length} pod(s) still on ${i.gpu} at the ${i.evictAt} deadline for running work to finish (${left.slice(0, 5).map((p) => `${p.namespace}/${p.name}`).join(', ')}): evicting them so the GPU can be reset`
        : `the running work on ${i.gpu} has finished`;
    i = { ...i, evictAt: undefined };
    w.reasons.push(why);
    w.touched.push(i);
  }
  retry(left);
  const s = stepRepair(i, left.length, w.results, facts.now, policy);
  if (s.kind === 'wait') return i;
  // Bookkeeping only: the new request goes out with the node's state, no Remediation of its own.
  if (s.kind === 'retry') return s.incident;
  if (s.kind === 'failed') return climb(s.incident, s.why, w, facts, policy);
  if (s.kind === 'restored') return restoreMig(i, s.incident, s.why, w, facts, policy);
  w.reasons.push(s.why);
  w.touched.push(s.incident);
  return s.incident;
}

/**
 * Is the GPU really out of scheduling, and still (fence-check.ts)? Verified, it is said so; not seen
 * within `fence.verifyMinutes`, the node is tainted instead and a person is told; a held fence that
 * drifts (or was written back by the agent) is told too.
 */
function holdFence(i: Incident, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const check = checkFence(i, w.state, w.facts.node, w.results, facts.now, policy);
  if (check.kind === 'wait') return i;
  w.reasons.push(check.why);
  if (check.kind === 'fallback' || check.kind === 'drift') {
    w.notices.push(notice(check.incident.action, w.facts.node, check.why));
    w.nodeEvents.push(fenceEventNote(check.kind === 'fallback' ? 'escalated' : check.incident.fence?.driftAt ? 'lost' : 'restored', check.why));
    w.touched.push(check.incident);
  }
  return check.incident;
}

/**
 * RMA class (recovery.ts needsReplace): no reset cures the GPU. Once its fence is seen (verified,
 * or the node taint holding it), the incident climbs: replace-node (drained first; through the
 * cloud, or a person told), or awaiting-repair for a person when its ladder ends here. Its pods
 * keep moving meanwhile.
 */
function replaceGpu(i: Incident, w: Work, facts: SweepFacts, policy: Policy, retry: (pods: PodFacts[]) => void): Incident {
  const f = i.fence;
  const out = f !== undefined && (f.verifiedAt !== undefined || f.fallback !== undefined || f.backend === 'cordon');
  if (!out) {
    retry(evictable(w.facts.pods).filter((p) => i.pods.includes(p.uid)));
    return i;
  }
  return climb(i, `NVIDIA says ${i.gpu} must be replaced (${i.condition}: RMA class, no reset cures it); it stays fenced`, w, facts, policy);
}

/**
 * The probe passed: the GPU returns, unless the reset emptied a MIG GPU (mig-restore.ts). Then it
 * stays open, probe and all, while mig-manager applies the node's config again; every sweep re-reads
 * the probe's answer, so a fault seen after the reset still fails the repair meanwhile.
 */
function restoreMig(open: Incident, closed: Incident, why: string, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const m = stepMigRestore(open, w.facts.node, w.facts.pods, facts.now, policy);
  if (m.kind === 'wait') return open;
  if (m.kind === 'failed') return climb({ ...m.incident, repair: undefined }, m.why, w, facts, policy);
  if (m.kind === 'restart') {
    // Through the Eviction API like every pod we move; its DaemonSet recreates it.
    w.evictions.push(...m.pods);
    if (m.pods.length === 0) w.notices.push(notice(open.action, w.facts.node, m.why));
    w.reasons.push(m.why);
    w.touched.push(m.incident);
    return m.incident;
  }
  const restored: Incident = m.incident.migBackAt ? { ...closed, migBackAt: m.incident.migBackAt } : closed;
  w.reasons.push(m.why ? `${why}; ${m.why}` : why);
  w.touched.push(restored);
  w.back.push(restored);
  return restored;
}

/**
 * A GPU repair failed: the incident climbs its ladder (reboot, then replace) as a node drain,
 * within the blast radius like any drain; at the top of the ladder a person is told.
 */
function climb(i: Incident, why: string, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const node = w.facts.node;
  const now = facts.now.toISOString();
  const next = i.ladder[i.level + 1];
  if (!next || next === 'quarantine-gpu' || next === 'observe' || next === 'restart-workload' || next === 'ignore') {
    const text = `${why}; nothing further up its ladder: awaiting-repair, a person must repair ${i.gpu ?? node.name}, then annotate gpu-reflex.io/repaired-at=<time>`;
    const waiting: Incident = { ...i, phase: 'awaiting-repair', since: now, notifiedAt: now };
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    w.touched.push(waiting);
    return waiting;
  }
  const out = w.state.incidents.some((x) => isOpen(x) && x.key !== i.key && (x.phase === 'draining' || x.phase === 'awaiting-repair'));
  const verdict = checkBlastRadius(policy, w.facts.pool, node.name, out);
  const escalated: Incident = { ...i, action: next, level: i.level + 1, escalatedAt: now, since: now };
  if (!verdict.allowed) {
    const held: Incident = { ...escalated, phase: 'awaiting-approval' };
    const text = `${why}; ${next} on node ${node.name} is held back: ${verdict.words}. A person must approve; the sweep acts once the window has room`;
    w.notices.push(notice(next, node, text));
    w.reasons.push(text);
    w.touched.push(held);
    return held;
  }
  const pods = evictable(w.facts.pods);
  const draining: Incident = { ...escalated, phase: 'draining', pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])] };
  w.evictions.push(...pods);
  const text = `${why}; escalating to ${next}: draining node ${node.name} first`;
  w.notices.push(notice(next, node, text));
  w.reasons.push(text);
  w.touched.push(draining);
  return draining;
}

function toRepair(i: Incident, repair: 'reboot-node' | 'replace-node' | undefined, w: Work, facts: SweepFacts, why: string): Incident {
  const node = w.facts.node.name;
  const caps = w.facts.capabilities ?? facts.capabilities;
  const now = facts.now.toISOString();
  const { reboot: _done, ...rest } = i;
  if (repair && caps?.repairOwner) {
    // Not ours to repair: no cloud call; the node's return (new boot id, Ready) is watched as after
    // our own reboot, and no return within repair.rebootTimeoutMinutes is told to a person.
    const next: Incident = { ...rest, reboot: { at: now, ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}), by: caps.repairOwner.slice(0, 128) }, phase: 'awaiting-repair', since: now, notifiedAt: now };
    const text = `${why}: ${caps.repairOwner} repairs this node, so gpu-reflex defers (no reboot or replace of its own); it returns after the quiet period once the node is back`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
    w.touched.push(next);
    return next;
  }
  const can = repair === 'reboot-node' ? caps?.reboot : repair === 'replace-node' ? caps?.replace : false;
  if (repair === 'replace-node' && can) {
    const waiting: Incident = { ...rest, phase: 'awaiting-repair', since: now, notifiedAt: now };
    // One replacement per node, however many of its incidents lead to it: a second one follows the first.
    const sibling = [...w.touched, ...w.state.incidents].find((x) => x.key !== i.key && isOpen(x) && x.replace)?.replace;
    if (sibling) return replaced({ kind: 'act', incident: { ...waiting, replace: sibling }, why: `${why}: the replacement under way replaces it`, tell: false }, waiting, w);
    const pool = w.facts.replace?.pool?.id;
    return replaced(startReplace(waiting, w.facts.node, w.facts.replace, facts.now, why, pool ? (w.round.grows.get(pool) ?? 0) : 0), waiting, w);
  }
  const rebooting = repair === 'reboot-node' && can ? { reboot: { at: now, ...(w.facts.node.bootId ? { fromBoot: w.facts.node.bootId } : {}) } } : {};
  const next: Incident = { ...rest, ...rebooting, phase: 'awaiting-repair', since: now, notifiedAt: now };
  if (repair === 'reboot-node' && can) {
    // One reboot per node, however many of its incidents lead to it.
    if (!w.cloud.some((c) => c.kind === 'reboot' && c.node === node)) w.cloud.push({ kind: 'reboot', node });
    w.reasons.push(`${why}: rebooting it; it returns after the quiet period once repaired`);
  } else {
    const what = repair ? `${repair === 'reboot-node' ? 'reboot' : 'replace'} it (${caps?.unreachable ?? 'no cloud adapter can'})` : 'repair it';
    const text = `${why}: awaiting-repair, a person must ${what}, then annotate gpu-reflex.io/repaired-at=<time>`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
  }
  w.touched.push(next);
  return next;
}

/** Carries a replacement's step into the sweep's work: its cloud action, its words, a notice when a person must act. */
function replaced(s: ReplaceStep, i: Incident, w: Work): Incident {
  if (s.kind === 'wait') return i;
  const c = s.cloud;
  if (c?.kind === 'replace' && !w.cloud.some((x) => x.kind === 'replace' && x.step === c.step && x.node === c.node)) {
    w.cloud.push(c);
    if (c.step === 'grow') w.round.grows.set(c.pool, (w.round.grows.get(c.pool) ?? 0) + 1);
  }
  if (s.incident.replace?.newNode) w.round.claimed.add(s.incident.replace.newNode);
  if (s.tell) w.notices.push(notice(s.incident.action, w.facts.node, s.why));
  w.reasons.push(s.why);
  w.touched.push(s.incident);
  return s.incident;
}

/**
 * After a reboot the cloud adapter asked for: the node is back when it shows a new boot id and is
 * Ready; it returns after the quiet period from then. The fault seen again after it came back
 * climbs the ladder (replace-node); no return within `repair.rebootTimeoutMinutes` is told to a
 * person once.
 */
function afterReboot(i: Incident, r: NonNullable<Incident['reboot']>, w: Work, facts: SweepFacts, policy: Policy, close: (why: string) => Incident): Incident {
  const node = w.facts.node;
  const now = facts.now;
  if (!r.backAt) {
    const back = node.bootId !== undefined && node.bootId !== r.fromBoot && node.ready !== false;
    if (back) {
      const next: Incident = { ...i, reboot: { ...r, backAt: now.toISOString() } };
      w.reasons.push(`${node.name} is back from its reboot (new boot id, Ready): it returns after ${policy.quietPeriodMinutes} min without the fault`);
      w.touched.push(next);
      return next;
    }
    const late = now.getTime() - Date.parse(r.at) >= policy.repair.rebootTimeoutMinutes * MIN;
    if (!late || (i.notifiedAt && Date.parse(i.notifiedAt) > Date.parse(r.at))) return i;
    const text = `${node.name} was ${r.by ? `left to ${r.by}` : 'rebooted'} at ${r.at} and has not come back (no new boot id${node.ready === false ? ', not Ready' : ''}) after ${policy.repair.rebootTimeoutMinutes} min: a person must look`;
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    const told: Incident = { ...i, notifiedAt: now.toISOString() };
    w.touched.push(told);
    return told;
  }
  if (cmp(i.lastAt, r.backAt) > 0) {
    const nextRung = i.ladder.indexOf('replace-node', i.level + 1) >= 0 ? 'replace-node' : undefined;
    const why = `${i.key}: the fault came back at ${i.lastAt}, after the reboot (back at ${r.backAt})`;
    if (nextRung) return toRepair({ ...i, level: i.ladder.indexOf(nextRung, i.level + 1), action: nextRung, escalatedAt: now.toISOString() }, nextRung, w, facts, `${why}; escalating to ${nextRung}`);
    return toRepair(i, undefined, w, facts, why);
  }
  if (now.getTime() - Date.parse(r.backAt) >= policy.quietPeriodMinutes * MIN) return close(`${i.key}: ${r.by ? `repaired by ${r.by}` : 'rebooted'} at ${r.at}, back at ${r.backAt} and quiet for ${policy.quietPeriodMinutes} min, back in service`);
  return i;
}

/** Held-back incidents, oldest first across all nodes, get acted on while their pool has room. */
function grantApprovals(work: Work[], facts: SweepFacts, policy: Policy): void {
  const waiting = work.flatMap((w) => w.state.incidents.filter((i) => i.phase === 'awaiting-approval').map((i) => ({ w, i })));
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
    const counted: PoolFacts = { ...pool, quarantinedInWindow: pool.quarantinedInWindow + extra.length, quarantinedNodes: [...pool.quarantinedNodes, ...extra] };
    const out = w.state.incidents.some((x) => isOpen(x) && x !== i && (x.phase === 'quarantined' || x.phase === 'draining' || x.phase === 'awaiting-repair'));
    if (!takesCapacity(i.action) || (decision !== 'approved' && !checkBlastRadius(policy, counted, w.facts.node.name, out).allowed)) continue;
    const node = w.facts.node.name;
    const drains = i.action !== 'quarantine-gpu';
    const pods = drains ? evictable(w.facts.pods) : evictable(w.facts.pods).filter((p) => (i.workloads.length > 0 ? i.workloads.includes(p.uid) : p.requestsGpu && (p.gpus === undefined || (i.gpu !== undefined && p.gpus.includes(i.gpu)))));
    const acted: Incident = { ...i, phase: drains ? 'draining' : 'quarantined', since: facts.now.toISOString(), outAt: i.outAt ?? facts.now.toISOString(), pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])] };
    w.state = { ...w.state, incidents: w.state.incidents.map((x) => (x === i ? acted : x)) };
    w.evictions.push(...pods);
    const text = decision === 'approved' ? `${i.key}: ${i.action} approved in chat, going ahead` : `${i.key}: the pool ${pool.name} has room again, ${i.action} goes ahead (first come, first served)`;
    w.notices.push(notice(i.action, w.facts.node, text));
    w.reasons.push(text);
    w.touched.push(acted);
    if (!out && !pool.quarantinedNodes.includes(node)) granted.set(pool.name, [...extra, node]);
  }
}

function toPlan(w: Work, facts: SweepFacts, policy: Policy): Plan | undefined {
  const { node } = w.facts;
  const prev = w.facts.state;
  let next = withState(prev, w.state, node, fenceBackendOf(policy, w.facts.pool.name));
  // Back in service: it was out (a held-back node never left, so it is not "restored").
  const restored = next.phase === 'healthy' && prev.phase !== 'healthy' && prev.phase !== 'awaiting-approval';
  if (restored) next = { ...next, restoredAt: facts.now.toISOString() };
  const edit = nodeEdit(prev, next, node, policy);
  const taints = deviceTaintChange(next, node, policy);
  const asked = newGpuActions(prev, next, policy);
  const notices = [...w.notices];
  const back = w.back;
  const main = w.touched.at(-1) ?? next.incidents.find(isOpen);
  if (restored || back.length > 0) {
    const what = restored ? `node ${node.name} is back in service` : `${back.map((i) => i.qid ?? i.gpu ?? i.key).join(', ')} back in service on ${node.name}`;
    const onEvidence = back.length > 0 && back.every((i) => i.probedAt !== undefined);
    const mig = back.some((i) => i.migBackAt !== undefined) ? ', its MIG instances applied again by mig-manager' : '';
    notices.push(notice('restore', node, onEvidence ? `${what} after a reset and a passed health probe${mig}` : `${what} after ${policy.quietPeriodMinutes} quiet minutes`, 'info'));
  }
  // One eviction per pod, however many incidents asked for it.
  const evictions = [...new Map(w.evictions.map((p) => [p.uid, { namespace: p.namespace, name: p.name, uid: p.uid }])).values()];
  if (!edit && !taints && evictions.length === 0 && notices.length === 0 && w.cloud.length === 0 && w.nodeEvents.length === 0) return undefined;
  const rejectedOnly = !restored && back.length === 0 && main?.phase === 'closed';
  const action: Plan['action'] = restored || back.length > 0 || (w.unlatching && w.touched.length === 0) ? 'restore' : rejectedOnly ? 'observe' : (main?.action ?? 'observe');
  const repairing = w.touched.some((i) => i.phase === 'awaiting-repair');
  // Only our own bookkeeping changes (history, quarantined-gpus): nothing anyone would notice.
  const onlyBookkeeping = !editsScheduling(edit) && !taints && evictions.length === 0 && notices.length === 0 && w.cloud.length === 0;
  const scope = main?.scope === 'mig-instance' || main?.scope === 'gpu' ? (restored ? 'node' : main.scope) : 'node';
  return {
    kind: onlyBookkeeping ? 'noop' : 'act',
    incident: main?.key ?? `${node.name}/sweep`,
    action,
    scope,
    phase: action === 'restore' ? 'restored' : repairing ? 'awaiting-repair' : onlyBookkeeping ? 'skipped' : 'decided',
    target: {
      node: node.name,
      gpus: (main?.gpu ? [main.gpu] : (node.gpus ?? [])).slice(0, 16),
      migInstances: main?.gpu && main.mig ? [{ gpuUuid: main.gpu, gpuInstanceId: main.mig.gi, ...(main.mig.ci !== undefined ? { computeInstanceId: main.mig.ci } : {}) }] : [],
      pods: evictions,
    },
    ...(edit ? { nodeEdit: edit } : {}),
    ...(taints ? { deviceTaints: taints } : {}),
    ...(asked.length > 0 ? { gpuActions: asked } : {}),
    evictions,
    notices,
    cloud: w.cloud,
    ...(w.nodeEvents.length > 0 ? { nodeEvents: w.nodeEvents } : {}),
    // Two incidents on one node (an XID and its health condition) often say the same thing: once.
    reason: [...new Set(restored ? [`node ${node.name} is back in service: untainted, uncordoned, labelled healthy`, ...w.reasons] : w.reasons)].join('. ') || `sweep of ${node.name}: bookkeeping only`,
    trigger: { eventId: `sweep:${node.name}:${facts.now.getTime()}`, detailType: 'Scheduled Event', node: node.name, observedAt: facts.now.toISOString() },
    nextState: next,
  };
}
