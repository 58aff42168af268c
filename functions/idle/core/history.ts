/**
 * The closed idle runs kept on the node (pure): when a run ends, its track leaves the record, and without this its
 * idle time would leave the cost report with it — a pod idle all Tuesday and busy since would read 0 idle hours in
 * Monday's weekly report. So an ended run's [since, lastEnd] is split at UTC midnights into per-pod, per-day
 * buckets (`history` of lib/idle-record.ts), kept as long as the weekly report looks back, and small: node
 * annotations share 256 KiB with everything else on the node.
 */
import type { IdleHistoryEntry, IdleRecord, IdleTrack } from '../../lib/idle-record.ts';

export const DAY_MS = 24 * 3_600_000;
/** The weekly report looks back 7 days; one more keeps the day a report starts in whatever hour it runs. */
export const HISTORY_RETENTION_MS = 8 * DAY_MS;
/**
 * The history's encoded budget. An entry is about 150 bytes (namespace, pod, a 36-character UID, day, ms): 16 KiB
 * is ~110 pod-days, 8 GPUs × 9 days with a pod or two changing each day; tracks (up to 56 MIG devices at ~350 bytes,
 * ~20 KiB) and what else lives on the node (kubectl's last-applied configuration, other controllers) share the
 * 256 KiB, and the whole annotation is patched at every window of an idle run.
 */
export const HISTORY_BUDGET_BYTES = 16 * 1024;

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
export const dayStart = (day: string) => Date.parse(`${day}T00:00:00.000Z`);
const keyOf = (e: { namespace: string; pod: string; uid?: string; share?: number }) =>
  `${e.namespace}/${e.pod} ${e.uid ?? ''} ${e.share ?? 1}`;

/** The ended runs' idle time added to their pod's day buckets. */
function addClosed(history: readonly IdleHistoryEntry[], closed: readonly IdleTrack[]): IdleHistoryEntry[] {
  const out = history.map((e) => ({ ...e }));
  for (const t of closed) {
    for (let d = Math.floor(t.since / DAY_MS) * DAY_MS; d < t.lastEnd; d += DAY_MS) {
      const ms = Math.min(t.lastEnd, d + DAY_MS) - Math.max(t.since, d);
      if (ms <= 0) continue;
      const entry = {
        namespace: t.namespace,
        pod: t.pod,
        ...(t.uid !== undefined ? { uid: t.uid } : {}),
        ...(t.share !== undefined ? { share: t.share } : {}),
        day: dayOf(d),
      };
      const found = out.find((e) => e.day === entry.day && keyOf(e) === keyOf(entry));
      if (found) found.ms += ms;
      else out.push({ ...entry, ms });
    }
  }
  // One order whatever the order of closing: the record compares equal when nothing changed.
  return out.sort((a, b) => (a.day === b.day ? keyOf(a).localeCompare(keyOf(b)) : a.day < b.day ? -1 : 1));
}

/**
 * The record after the window ending at `now`: the runs the planner did not carry on (`closed`) moved to the
 * history, days past retention dropped, and the oldest days dropped beyond the budget — `historyFrom` then says
 * from when it is whole (the cost report reads the idle share before it as unknown).
 */
export function withHistory(
  prev: IdleRecord,
  tracks: IdleTrack[],
  closed: readonly IdleTrack[],
  now: number,
): IdleRecord {
  let history = closed.length > 0 ? addClosed(prev.history ?? [], closed) : [...(prev.history ?? [])];
  const horizon = now - HISTORY_RETENTION_MS;
  history = history.filter((e) => dayStart(e.day) + DAY_MS >= horizon);
  let historyFrom = prev.historyFrom !== undefined && prev.historyFrom >= horizon ? prev.historyFrom : undefined;
  while (history.length > 0 && Buffer.byteLength(JSON.stringify(history)) > HISTORY_BUDGET_BYTES) {
    const oldest = history[0]!.day;
    history = history.filter((e) => e.day !== oldest);
    historyFrom = Math.max(historyFrom ?? 0, dayStart(oldest) + DAY_MS);
  }
  const closedTo = Math.max(prev.closedTo ?? 0, ...closed.map((t) => t.lastEnd));
  const kept = history.length > 0 || historyFrom !== undefined;
  return {
    tracks,
    ...(history.length > 0 ? { history } : {}),
    ...(historyFrom !== undefined ? { historyFrom } : {}),
    // Nothing kept: nothing to count twice, and the record reads back as it is written (no annotation).
    ...(kept && closedTo > 0 ? { closedTo } : {}),
  };
}

/** Idle device-ms × share per `namespace/pod` in [from, to): a day the period only partly covers, pro rata. */
export function historyIdleMs(record: IdleRecord, from: number, to: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const e of record.history ?? []) {
    const d = dayStart(e.day);
    const part = Math.max(0, Math.min(d + DAY_MS, to) - Math.max(d, from)) / DAY_MS;
    if (part === 0) continue;
    const key = `${e.namespace}/${e.pod}`;
    out.set(key, (out.get(key) ?? 0) + e.ms * part * (e.share ?? 1));
  }
  return out;
}
