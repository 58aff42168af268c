/**
 * idle-gpus on its hourly schedule: the weekly cost report (policy `weeklyReport`, opt-in), each team
 * told once per week. A team's notice is claimed in the state store before it is sent (compare-and-swap:
 * of two containers one sends), marked sent after; a failed send gives the claim back, and a claim whose
 * sender died lapses after CLAIM_MS, so the next tick sends it: told at least once, never lost.
 */
import { createHash } from 'node:crypto';
import type { Notifier } from '../adapters/chat/notifier.ts';
import type { Clock } from '../adapters/clock.ts';
import type { NodeOps, PodOps, StateStore } from '../adapters/kube/ports.ts';
import type { Logger } from '../adapters/logger.ts';
import { readCost } from './read-cost.ts';
import type { IdlePolicy } from './core/policy.ts';
import { lastDue, WEEK_MS, weeklyNotices } from './core/weekly.ts';

export const WEEKLY_SHARD = 'idle-weekly';
const WEEK_KEY = 'weekly.week';
const CLAIM_MS = 10 * 60_000;

export interface WeeklyDeps {
  nodes: Pick<NodeOps, 'list'>;
  pods: Pick<PodOps, 'list'>;
  state: StateStore;
  notifier: Notifier;
  clock: Clock;
  logger: Logger;
  policy: IdlePolicy;
}

type Mark = { due: string; state: 'sending' | 'sent'; until?: number };

/** A team's mark in the store (a ConfigMap key is [-._a-zA-Z0-9]: the team's name is hashed). */
export const weeklyKey = (team: string) => `weekly.${createHash('sha256').update(team).digest('hex').slice(0, 32)}`;

export async function sendWeeklyReport(deps: WeeklyDeps): Promise<{ due?: string; sent: string[]; why?: string }> {
  const w = deps.policy.weeklyReport;
  if (!w) return { sent: [], why: 'no weeklyReport in the idle policy: off' };
  const now = deps.clock.now();
  const dueMs = lastDue(now, w.day, w.hourUtc);
  const due = new Date(dueMs).toISOString();
  const store = deps.state.shard?.(WEEKLY_SHARD) ?? deps.state;
  const marks = await store.getAll();
  // Every team of this week told: the hourly ticks until the next one read nothing more.
  if (marks[WEEK_KEY] === due) return { due, sent: [] };
  const rep = await readCost(deps, deps.policy, WEEK_MS, dueMs);
  const sent: string[] = [];
  const notices = weeklyNotices(rep, deps.policy);
  let told = 0;
  for (const { team, notice } of notices) {
    const key = weeklyKey(team);
    const done = (m: unknown) => {
      const mark = m as Mark | undefined;
      return mark?.due === due && (mark.state === 'sent' || (mark.until ?? 0) > now);
    };
    const mark = marks[key] as Mark | undefined;
    if (mark?.due === due && mark.state === 'sent') told++;
    if (done(mark)) continue;
    let claimed = false;
    await store.update(key, (cur) => {
      if (done(cur)) return cur as Mark;
      claimed = true;
      return { due, state: 'sending', until: now + CLAIM_MS };
    });
    if (!claimed) continue;
    try {
      await deps.notifier.notify(notice);
    } catch (err) {
      deps.logger.warn('weekly cost report not sent: the next tick tries again', { team, error: err });
      await store.update(key, () => undefined);
      continue;
    }
    await store.update(key, () => ({ due, state: 'sent' }));
    sent.push(team);
    told++;
  }
  // Every team told: the week is closed (a team another container is sending, or whose send failed,
  // keeps it open for the next tick).
  if (told === notices.length) await store.update(WEEK_KEY, () => due);
  return { due, sent };
}
