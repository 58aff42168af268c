/**
 * One open incident's step in the sweep (pure), by its phase (see sweep.ts): closed when quiet, a
 * quarantined GPU's repair (sweep-gpu.ts), a drain retried, timed out or done, a node back from its
 * repair (sweep-return.ts, replace.ts). A step decides; what it hands on to the node's repair (a rung to
 * climb, a reboot or replacement) is carried out after it, once (sweep-node.ts `escalate`).
 */
import type { Policy } from './policy.ts';
import { evictable } from './scope.ts';
import { cmp, type Incident } from './state.ts';
import type { PodFacts } from './types.ts';
import { stepReplace } from './replace.ts';
import { notice } from './plan.ts';
import { repairOf } from './words.ts';
import { needsReplace, needsReset } from './recovery.ts';
import { repairStep, replaceGpu } from './sweep-gpu.ts';
import { escalate } from './sweep-node.ts';
import { returnStep } from './sweep-return.ts';
import type { SweepFacts, SweepPlan } from './sweep.ts';
import { MIN, type Stepped, type Work } from './sweep-work.ts';

/** Moves one open incident along (see sweep.ts); what it hands on to the node's repair is carried out after. */
export function step(i: Incident, w: Work, facts: SweepFacts, policy: Policy, retries: SweepPlan['retries']): Incident {
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
      if (needsReplace(held)) return replaceGpu(held, w.facts.pods, retry);
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
      // Evidence, not time: a GPU returns on a passed probe after its reboot or a person's repair (sweep-return.ts).
      return i.reboot || repaired ? returnStep(i, w, facts, policy, close) : i;
    }
    default:
      return i; // awaiting-approval: grantApprovals
  }
}
