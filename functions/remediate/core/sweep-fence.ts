/**
 * The sweep's fence steps for one incident (pure): while it is open its fence is seen and held
 * (fence-check.ts: verified by identity, restored when it drifts, the node taint when it cannot be
 * seen); once it closes the fence is lifted (the agent's word, the DRA rule or ACK's card gone, or
 * NVIDIA's device plugin restarted: fence.ts).
 */
import type { Policy } from './policy.ts';
import type { Incident } from './state.ts';
import { notice } from './plan.ts';
import { fenceEventNote } from './words.ts';
import { unfenceDone } from './gpu-repair.ts';
import { fenced, stepUnlatch, withFence } from './fence.ts';
import { checkFence } from './fence-check.ts';
import { draLifted } from './fence-dra.ts';
import { cardsLifted } from './fence-cgpu.ts';
import type { SweepFacts } from './sweep.ts';
import { MIN, type Work } from './sweep-work.ts';

/**
 * Is the GPU really out of scheduling, and still (fence-check.ts)? Verified, it is said so; not seen
 * within `fence.verifyMinutes`, the node is tainted instead and a person is told; a held fence that
 * drifts (or was written back by the agent) is told too.
 */
export function holdFence(open: Incident, w: Work, facts: SweepFacts, policy: Pick<Policy, 'fence'>): Incident {
  // An incident that holds its GPU out gets its fence first (fence.ts withFence); every fence is then
  // held, whatever phase its incident is in: seen, re-verified, restored, reported.
  const i = withFence(open, w.backend, w.facts.node, w.state);
  if (!fenced(i)) return i;
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
 * A closed incident's GPU fence is lifted: the agent's word that it left the fence file (bookkeeping
 * only), or NVIDIA's device plugin restarted on the node so it counts the GPU again (gpu-repair.ts).
 */
export function lift(i: Incident, w: Work, facts: SweepFacts, policy: Pick<Policy, 'fence'>): Incident {
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
