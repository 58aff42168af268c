/**
 * The sweep's steps for a quarantined GPU (pure): its repair through the node agent (gpu-repair.ts),
 * an RMA-class GPU's climb (handed to sweep-node.ts), MIG instances back after a reset. Its fence,
 * held and lifted, is sweep-fence.ts.
 */
import { pdbDeadlineOf, type Policy } from './policy.ts';
import { evictable } from './scope.ts';
import type { Incident } from './state.ts';
import type { PodFacts } from './types.ts';
import { notice } from './plan.ts';
import { resetSkippedWords } from './words.ts';
import { stepRepair } from './gpu-repair.ts';
import { resetSupportOf, skipsReset } from './reset-support.ts';
import { stepMigRestore } from './mig-restore.ts';
import { podsOnCard, resetGate } from './reset-gate.ts';
import { mpsDaemonHolding } from './mps-reset.ts';
import type { SweepFacts } from './sweep.ts';
import { MIN, type Stepped, type Work } from './sweep-work.ts';

/**
 * A quarantined GPU that NVIDIA answers with a reset (gpu-repair.ts): its fence is verified, its
 * pods move, then the node agent resets and probes it, and only a passed probe returns it. Quiet
 * time restores nothing.
 */
export function repairStep(
  i0: Incident,
  w: Work,
  facts: SweepFacts,
  policy: Pick<Policy, 'repair' | 'pools' | 'taintKey' | 'fence'>,
  retry: (pods: PodFacts[]) => void,
): Stepped {
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
    return { escalate: 'climb', incident: { ...i, notifiedAt: facts.now.toISOString() }, why };
  }
  // No reset where NVIDIA does not support one alone (reset-support.ts): straight to the next rung
  // (a node reboot), saying why, before any reset is asked of the agent.
  const support = resetSupportOf(w.facts.node.labels);
  if (!i.repair && skipsReset(support))
    return { escalate: 'climb', incident: i, why: resetSkippedWords(i.gpu, support) };
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
  if (s.kind === 'failed') return { escalate: 'climb', incident: s.incident, why: s.why };
  if (s.kind === 'restored') return restoreMig(i, s.incident, s.why, w, facts, policy);
  w.reasons.push(s.why);
  w.touched.push(s.incident);
  return s.incident;
}

/**
 * RMA class (recovery.ts needsReplace): no reset cures the GPU. Once its fence is seen (verified,
 * or the node taint holding it), the incident climbs: replace-node (drained first; through the
 * cloud, or a person told), or awaiting-repair for a person when its ladder ends here. Its pods
 * keep moving meanwhile.
 */
export function replaceGpu(i: Incident, pods: readonly PodFacts[], retry: (pods: PodFacts[]) => void): Stepped {
  const f = i.fence;
  const out = f !== undefined && (f.verifiedAt !== undefined || f.fallback !== undefined || f.backend === 'cordon');
  if (!out) {
    retry(evictable(pods).filter((p) => i.pods.includes(p.uid)));
    return i;
  }
  return {
    escalate: 'climb',
    incident: i,
    why: `NVIDIA says ${i.gpu} must be replaced (${i.condition}: RMA class, no reset cures it); it stays fenced`,
  };
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
  policy: Pick<Policy, 'repair'>,
): Stepped {
  const m = stepMigRestore(open, w.facts.node, w.facts.pods, facts.now, policy);
  if (m.kind === 'wait') {
    // Said on every sweep it waits (words alone publish nothing), and recorded on the incident when they change: a
    // person looking at a GPU kept out after a passed probe sees what it waits for, not silence.
    w.reasons.push(m.why);
    if (open.migWait === m.why) return open;
    const waiting: Incident = { ...open, migWait: m.why };
    w.touched.push(waiting);
    return waiting;
  }
  if (m.kind === 'failed')
    return { escalate: 'climb', incident: { ...m.incident, repair: undefined, migWait: undefined }, why: m.why };
  if (m.kind === 'restart') {
    // Through the Eviction API like every pod we move; its DaemonSet recreates it.
    w.evictions.push(...m.pods);
    if (m.pods.length === 0) w.notices.push(notice(open.action, w.facts.node, m.why));
    w.reasons.push(m.why);
    const restarted: Incident = { ...m.incident, migWait: undefined };
    w.touched.push(restarted);
    return restarted;
  }
  const restored: Incident = m.incident.migBackAt ? { ...closed, migBackAt: m.incident.migBackAt } : closed;
  w.reasons.push(m.why ? `${why}; ${m.why}` : why);
  w.touched.push(restored);
  w.back.push(restored);
  return restored;
}
