/**
 * The weekly cost report (pure): when the last one was due, and what each team is told — its GPU-hours
 * and cost of the week before that instant, per namespace, the idle share apart (core/cost.ts).
 */
import type { Notice } from '../../adapters/chat/notifier.ts';
import { gpuHoursWords, idleHours, unknownEndWords, type CostReport, type CostRow } from './cost.ts';
import { WEEKDAYS, type IdlePolicy } from './policy.ts';

const HOUR = 3_600_000;
export const WEEK_MS = 7 * 24 * HOUR;

/** The latest instant at or before `now` that is `day` at `hourUtc`:00 UTC. */
export function lastDue(now: number, day: (typeof WEEKDAYS)[number], hourUtc: number): number {
  const d = new Date(now);
  const today = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate(), hourUtc);
  const back = (d.getUTCDay() - WEEKDAYS.indexOf(day) + 7) % 7;
  const due = today - back * 24 * HOUR;
  return due > now ? due - WEEK_MS : due;
}

const money = (v: number | undefined, r: CostRow, currency: string) =>
  r.unmeasuredPods !== undefined
    ? 'cost unknown'
    : v === undefined
      ? `unpriced (${r.unpricedGpuHours} GPU-h)`
      : `${v.toFixed(2)} ${currency}`;

/** One notice per team the policy reports on, with a line per namespace; teams without GPU pods get none. */
export function weeklyNotices(rep: CostReport, policy: IdlePolicy): { team: string; notice: Notice }[] {
  const wanted = policy.weeklyReport?.teams;
  const untimed = rep.unknownEndByTeam ?? {};
  const teams = [...new Set([...rep.rows.map((r) => r.team), ...Object.keys(untimed)])]
    .filter((t) => !wanted || wanted.includes(t))
    .sort();
  return teams.map((team) => {
    const rows = rep.rows.filter((r) => r.team === team);
    // Its ended pods the API gives no end time for: named, never left out in silence (nor a team told nothing).
    const notCounted = untimed[team] ? [unknownEndWords(untimed[team])] : [];
    const title = `gpu-reflex: team ${team}'s GPU cost, ${rep.from.slice(0, 10)} → ${rep.to.slice(0, 10)}`;
    if (rows.length === 0)
      return { team, notice: { title, text: `GPU-hours unknown: ${notCounted.join('')}`, severity: 'info' as const } };
    const hours = rows.reduce((a, r) => a + r.gpuHours, 0);
    const idle = rows.reduce((a, r) => a + r.idleGpuHours, 0);
    // A namespace whose idle share could not be read makes the team's unknown too, never a smaller sum; so does
    // one with pods whose share of a GPU is unknown (core/cost.ts CostRow.unmeasuredPods), for every sum.
    const unmeasured = rows.reduce((a, r) => a + (r.unmeasuredPods ?? 0), 0);
    const idleKnown = rows.every((r) => r.idleUnreadGpuHours === undefined) && unmeasured === 0;
    const priced = rows.every((r) => r.cost !== undefined);
    const cost = rows.reduce((a, r) => a + (r.cost ?? 0), 0);
    const idleCost = rows.reduce((a, r) => a + (r.idleCost ?? 0), 0);
    const total =
      unmeasured > 0
        ? `cost unknown: ${unmeasured} pod(s) hold a share of a GPU their requests do not say ` +
          '(ACK cGPU GPU memory, a DRA claim)'
        : priced
          ? `${cost.toFixed(2)} ${rep.currency}, of which idle ` +
            (idleKnown ? `${idleCost.toFixed(2)} ${rep.currency}` : 'unknown')
          : 'cost: some GPU-hours have no price (the idle policy’s prices)';
    const lines = rows.map(
      (r) =>
        `• ${r.namespace}: ${r.pods} pod(s), ${gpuHoursWords(r)} GPU-h (idle ${idleHours(r)}), ` +
        `${money(r.cost, r, rep.currency)}`,
    );
    return {
      team,
      notice: {
        title,
        text: [
          `${unmeasured > 0 ? 'unknown' : hours.toFixed(2)} GPU-hours ` +
            `(idle ${idleKnown ? idle.toFixed(2) : 'unknown'}): ${total}`,
          ...lines,
          ...notCounted,
        ].join('\n'),
        severity: 'info',
      },
    };
  });
}
