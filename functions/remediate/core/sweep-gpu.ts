/**
 * The sweep's steps for a quarantined GPU (pure): its fence seen and held (fence-check.ts), its
 * repair through the node agent (gpu-repair.ts), an RMA-class GPU's climb, MIG instances back after
 * a reset, and a closed incident's fence lifted.
 */
import { pdbDeadlineOf, type Policy } from './policy.ts';
import { evictable } from './scope.ts';
import type { Incident } from './state.ts';
import type { PodFacts } from './types.ts';
import { notice } from './plan.ts';
import { fenceEventNote, resetSkippedWords } from './words.ts';
import { resetSupportOf, skipsReset } from './reset-support.ts';
import { stepRepair, unfenceDone } from './gpu-repair.ts';
import { stepUnlatch } from './fence.ts';
import { checkFence } from './fence-check.ts';
import { draLifted } from './fence-dra.ts';
import { cardsLifted } from './fence-cgpu.ts';
import { stepMigRestore } from './mig-restore.ts';
import { podsOnCard, resetGate } from './reset-gate.ts';
import { mpsDaemonHolding } from './mps-reset.ts';
import { climb } from './sweep-node.ts';
import type { SweepFacts } from './sweep.ts';
import { MIN, type Work } from './sweep-work.ts';

/**
 * A closed incident's GPU fence is lifted: the agent's word that it left the fence file (bookkeeping
 * only), or NVIDIA's device plugin restarted on the node so it counts the GPU again (gpu-repair.ts).
 */
export function lift(i: Incident, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const done =
    unfenceDone(i, w.results) ?? draLifted(i, w.facts.node, facts.now) ?? cardsLifted(i, w.facts.node, facts.now);
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
export function repairStep(
  i0: Incident,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  retry: (pods: PodFacts[]) => void,
): Incident {
  let i = i0;
  // Every pod on the card, not only ours: a reset kills whatever holds it (reset-gate.ts).
  const left = podsOnCard(i, w.facts.pods);
  if (i.evictAt !== undefined) {
    // letWorkFinish (DRAIN_AND_RESET): its pods end by themselves until the deadline; then they move.
    if (left.length > 0 && facts.now.getTime() < Date.parse(i.evictAt)) return i;
    const why =
      left.length > 0
        ? `${left.length} pod(s) still on ${i.gpu} at the ${i.evictAt} deadline for running work to finish (${left
            .slice(0, 5)
            .map((p) => `${p.namespace}/${p.name}`)
            .join(', ')}): evicting them so the GPU can be reset`
        : `the running work on ${i.gpu} has finished`;
    // The pods' move starts now: the PDB deadline below counts from here.
    i = { ...i, evictAt: undefined, since: facts.now.toISOString() };
    w.reasons.push(why);
    w.touched.push(i);
  }
  // Deadline: a pod a disruption budget (or anything else) keeps on the GPU past
  // `repair.pdbDeadlineMinutes` since it was asked to move no longer holds the reset up, retried
  // silently every minute for ever: a person is told and the incident climbs as a stuck drain does.
  const deadline = pdbDeadlineOf(policy, w.facts.pool.name);
  if (left.length > 0 && !i.repair && facts.now.getTime() - Date.parse(i.since) >= deadline * MIN) {
    const why = `${left.length} pod(s) still on ${i.gpu} ${deadline} min after they were asked to move (${left
      .slice(0, 5)
      .map((p) => `${p.namespace}/${p.name}`)
      .join(', ')}; a disruption budget may be refusing their eviction): the reset cannot wait for them any longer`;
    // climb tells a person whatever it does (escalates, is held back, or ends at awaiting-repair).
    return climb({ ...i, notifiedAt: facts.now.toISOString() }, why, w, facts, policy);
  }
  // No reset where NVIDIA does not support one alone (reset-support.ts): straight to the next rung
  // (a node reboot), saying why, before any reset is asked of the agent.
  const support = resetSupportOf(w.facts.node.labels);
  if (!i.repair && skipsReset(support)) return climb(i, resetSkippedWords(i.gpu, support), w, facts, policy);
  retry(left);
  if (!i.repair) {
    // The reset waits for a verified fence, or for the node taint that replaces it (reset-gate.ts).
    const gate = resetGate(i, w.facts.node, policy);
    if (!gate.ok) {
      if (left.length > 0) return i;
      // Said on every sweep it waits (words alone publish nothing; they ride on what the sweep does,
      // such as the node taint), and recorded once.
      w.reasons.push(gate.why);
      if (i.resetHeldAt !== undefined) return i;
      const held: Incident = { ...i, resetHeldAt: facts.now.toISOString() };
      w.touched.push(held);
      return held;
    }
  }
  const s = stepRepair(i, left.length, w.results, facts.now, policy);
  if (s.kind === 'wait') return i;
  // Bookkeeping only: the new request goes out with the node's state, no Remediation of its own.
  if (s.kind === 'retry') {
    // MPS: the control daemon's server still holds the card after its clients left (mps-reset.ts).
    const mps = mpsDaemonHolding(i, w.results, w.facts.pods);
    if (mps) {
      w.evictions.push(...mps.pods);
      w.reasons.push(mps.why);
    }
    return s.incident;
  }
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
export function holdFence(i: Incident, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const check = checkFence(i, w.state, w.facts.node, w.results, facts.now, policy);
  if (check.kind === 'wait') return i;
  w.reasons.push(check.why);
  if (check.kind === 'drift') {
    // Rate limit: a fence that keeps drifting (a writer rewriting the file every minute) is told once per
    // `fence.driftNoticeMinutes`, not each sweep; it is still restored, and escalated at its deadline.
    const f = check.incident.fence!;
    const ends = i.fence?.driftAt !== undefined && f.driftAt === undefined;
    const every = (policy.fence.driftNoticeMinutes ?? policy.fence.verifyMinutes) * MIN;
    const told = i.fence?.driftToldAt;
    const mute = ends
      ? i.fence?.driftMuted === true
      : told !== undefined && facts.now.getTime() - Date.parse(told) < every;
    const { driftMuted: _was, ...rest } = f;
    const fence = mute
      ? { ...rest, ...(ends ? {} : { driftMuted: true }) }
      : { ...rest, ...(ends ? {} : { driftToldAt: facts.now.toISOString() }) };
    const incident: Incident = { ...check.incident, fence };
    w.touched.push(incident);
    if (mute) return incident;
    w.notices.push(notice(incident.action, w.facts.node, check.why));
    w.nodeEvents.push(fenceEventNote(f.driftAt ? 'lost' : 'restored', check.why));
    return incident;
  }
  if (check.kind === 'fallback') {
    w.notices.push(notice(check.incident.action, w.facts.node, check.why));
    w.nodeEvents.push(fenceEventNote('escalated', check.why));
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
export function replaceGpu(
  i: Incident,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
  retry: (pods: PodFacts[]) => void,
): Incident {
  const f = i.fence;
  const out = f !== undefined && (f.verifiedAt !== undefined || f.fallback !== undefined || f.backend === 'cordon');
  if (!out) {
    retry(evictable(w.facts.pods).filter((p) => i.pods.includes(p.uid)));
    return i;
  }
  return climb(
    i,
    `NVIDIA says ${i.gpu} must be replaced (${i.condition}: RMA class, no reset cures it); it stays fenced`,
    w,
    facts,
    policy,
  );
}

/**
 * The probe passed: the GPU returns, unless the reset emptied a MIG GPU (mig-restore.ts). Then it
 * stays open, probe and all, while mig-manager applies the node's config again; every sweep re-reads
 * the probe's answer, so a fault seen after the reset still fails the repair meanwhile.
 */
function restoreMig(
  open: Incident,
  closed: Incident,
  why: string,
  w: Work,
  facts: SweepFacts,
  policy: Policy,
): Incident {
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
