/**
 * Escalation: when a fault climbs its ladder [action, ...then].
 *
 * - Repetition: the same trigger on the same GPU (or MIG instance) `count` times within
 *   `windowMinutes`, across at least `distinctWorkloads` different pods, moves one rung up.
 *   Different workloads are what separate a broken GPU from a buggy program: one job that keeps
 *   faulting (XID 13/31) is the job's problem, so repeats by the same pod never escalate, and
 *   occurrences with no pod attribution count as no workload at all. On a shared card an occurrence
 *   nothing ties to one pod arrives as one unknown workload of the card (sharing.ts `blameOf`), so
 *   co-tenants never count as different workloads (issue #32). Counting restarts after
 *   each escalation. Rules without `escalate` (XID 45 always) never escalate by repetition.
 * - Recurrence: a fault that returns within `recurrenceHours` after an incident on the same key
 *   that took capacity (`outAt`) was restored starts one rung higher ("reset; if it persists, reboot; if it
 *   persists after reboot, replace").
 */
import type { RemediationAction } from '../../../events/index.ts';
import type { Rule } from './policy.ts';
import type { Incident, Occurrence } from './state.ts';

export interface LevelDecision {
  level: number;
  escalated: boolean;
  /** Words for the reason, empty when nothing escalated. */
  why: string;
  /** How far an open incident is toward its next rung, when it can still escalate. */
  progress?: EscalationProgress;
}

/** "Counted: 2 of 3 toward escalation" as data, for reports and the timeline to render. */
export interface EscalationProgress {
  seen: number;
  needed: number;
  workloads: number;
  neededWorkloads: number;
  windowMinutes: number;
  /** The rung it escalates to once both counts are reached. */
  next: string;
}

export function ladderOf(rule: Rule): RemediationAction[] {
  return [rule.action, ...rule.then.filter((a, i, all) => a !== rule.action && all.indexOf(a) === i)];
}

/** Occurrences of `key` within `minutes` before `at` (inclusive), not before `since`. */
export function occurrencesInWindow(
  recent: readonly Occurrence[],
  key: string,
  at: Date,
  minutes: number,
  since?: string,
): Occurrence[] {
  const from = Math.max(at.getTime() - minutes * 60_000, since ? Date.parse(since) + 1 : -Infinity);
  return recent.filter((o) => o.key === key && Date.parse(o.at) >= from && Date.parse(o.at) <= at.getTime());
}

/** Decides the rung for an occurrence at `at`, given the open incident (if any) and the last closed one. */
export function decideLevel(
  rule: Rule,
  ladder: readonly RemediationAction[],
  open: Incident | undefined,
  lastClosed: Incident | undefined,
  recent: readonly Occurrence[],
  key: string,
  at: Date,
  recurrenceHours: number,
): LevelDecision {
  const top = ladder.length - 1;
  if (!open) {
    const closedAt = lastClosed?.closedAt ? Date.parse(lastClosed.closedAt) : NaN;
    if (
      lastClosed?.outAt !== undefined &&
      at.getTime() > closedAt &&
      at.getTime() - closedAt <= recurrenceHours * 3_600_000
    ) {
      const level = Math.min(lastClosed.level + 1, top);
      if (level > 0)
        return {
          level,
          escalated: true,
          why:
            `it returned ${minutesBetween(closedAt, at)} min after the last restore (at ` +
            `${lastClosed.action}), so it goes one step further`,
        };
    }
    return { level: 0, escalated: false, why: '' };
  }
  const level = Math.min(open.level, top);
  if (!rule.escalate || level >= top) return { level, escalated: false, why: '' };
  const seen = occurrencesInWindow(recent, key, at, rule.escalate.windowMinutes, open.escalatedAt);
  const workloads = new Set(seen.flatMap((o) => o.pods));
  // An aggregated event (node-agent/xid-aggregate.ts) is `count` occurrences.
  const times = seen.reduce((n, o) => n + (o.count ?? 1), 0);
  if (times >= rule.escalate.count && workloads.size >= rule.escalate.distinctWorkloads) {
    return {
      level: level + 1,
      escalated: true,
      why:
        `seen ${times} times within ${rule.escalate.windowMinutes} min across ${workloads.size} ` +
        `different workloads (rule: ${rule.escalate.count} times, ` +
        `${rule.escalate.distinctWorkloads} workloads), so it escalates from ${ladder[level]} to ${ladder[level + 1]}`,
    };
  }
  const progress: EscalationProgress = {
    seen: times,
    needed: rule.escalate.count,
    workloads: workloads.size,
    neededWorkloads: rule.escalate.distinctWorkloads,
    windowMinutes: rule.escalate.windowMinutes,
    next: ladder[level + 1]!,
  };
  return { level, escalated: false, why: '', progress };
}

function minutesBetween(fromMs: number, to: Date): number {
  return Math.round((to.getTime() - fromMs) / 60_000);
}
