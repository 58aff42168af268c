/**
 * A failed GPU repair climbs its ladder (pure): the next rung as a node drain, within the blast radius
 * like any drain (held back for a person where the window is full), or, at the top, a person told.
 * Carried out by sweep-node.ts `escalate` for the step that handed it on.
 */
import { checkBlastRadius } from './blast-radius.ts';
import type { Policy } from './policy.ts';
import { evictable } from './scope.ts';
import { isOpen, type Incident } from './state.ts';
import { notice } from './plan.ts';
import type { SweepFacts } from './sweep.ts';
import type { Work } from './sweep-work.ts';

/**
 * A GPU repair failed: the incident climbs its ladder (reboot, then replace) as a node drain,
 * within the blast radius like any drain; at the top of the ladder a person is told.
 */
export function climb(i: Incident, why: string, w: Work, facts: SweepFacts, policy: Policy): Incident {
  const node = w.facts.node;
  const now = facts.now.toISOString();
  const next = i.ladder[i.level + 1];
  if (!next || next === 'quarantine-gpu' || next === 'observe' || next === 'restart-workload' || next === 'ignore') {
    const text =
      `${why}; nothing further up its ladder: awaiting-repair, a person must repair ${i.gpu ?? node.name}, ` +
      'then annotate gpu-reflex.io/repaired-at=<time>';
    const waiting: Incident = { ...i, phase: 'awaiting-repair', since: now, notifiedAt: now };
    w.notices.push(notice(i.action, node, text));
    w.reasons.push(text);
    w.touched.push(waiting);
    return waiting;
  }
  const out = w.state.incidents.some(
    (x) => isOpen(x) && x.key !== i.key && (x.phase === 'draining' || x.phase === 'awaiting-repair'),
  );
  const verdict = checkBlastRadius(policy, w.facts.pool, node.name, out);
  const escalated: Incident = { ...i, action: next, level: i.level + 1, escalatedAt: now, since: now };
  if (!verdict.allowed) {
    const held: Incident = { ...escalated, phase: 'awaiting-approval' };
    const text =
      `${why}; ${next} on node ${node.name} is held back: ${verdict.words}. ` +
      'A person must approve; the sweep acts once the window has room';
    w.notices.push(notice(next, node, text));
    w.reasons.push(text);
    w.touched.push(held);
    return held;
  }
  const pods = evictable(w.facts.pods);
  const draining: Incident = {
    ...escalated,
    phase: 'draining',
    pods: [...new Set([...i.pods, ...pods.map((p) => p.uid)])],
  };
  w.evictions.push(...pods);
  const text = `${why}; escalating to ${next}: draining node ${node.name} first`;
  w.notices.push(notice(next, node, text));
  w.reasons.push(text);
  w.touched.push(draining);
  return draining;
}
