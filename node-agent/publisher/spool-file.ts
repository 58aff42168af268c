/**
 * The spool file's pieces (spool.ts): the in-memory index entry of a live record, what a dropped one
 * reports, which records make room for a higher class, back-to-back runs for compaction, and the
 * directory fsync that makes a rename durable.
 */
import { open } from 'node:fs/promises';
import type { DroppedEvent } from './spool-port.ts';
import { priorityRank, type Priority } from './types.ts';

/** One live record in the spool file: its place, and what a drop reports of it. */
export interface LiveEntry {
  seq: number;
  priority: Priority;
  detailType: string;
  eventId: string;
  offset: number;
  length: number;
}

export function describe(e: LiveEntry): DroppedEvent {
  return { seq: e.seq, eventId: e.eventId, detailType: e.detailType, priority: e.priority };
}

/** Groups entries that sit back to back in the file so compaction copies big chunks. */
export function contiguousRuns(
  entries: readonly LiveEntry[],
): { offset: number; length: number; entries: LiveEntry[] }[] {
  const runs: { offset: number; length: number; entries: LiveEntry[] }[] = [];
  const MAX_RUN = 1024 * 1024;
  for (const e of entries) {
    const last = runs[runs.length - 1];
    if (last && last.offset + last.length === e.offset && last.length + e.length <= MAX_RUN) {
      last.length += e.length;
      last.entries.push(e);
    } else {
      runs.push({ offset: e.offset, length: e.length, entries: [e] });
    }
  }
  return runs;
}

/** Makes a rename durable: the directory entry itself must reach the disk. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Lowest class first, oldest first; only classes below `priority`. Existing before incoming. */
export function pickVictims(
  live: ReadonlyMap<number, LiveEntry>,
  priority: Priority,
  need: number,
  evicted: Set<number>,
  incoming: LiveEntry[],
): LiveEntry[] {
  const victims: LiveEntry[] = [];
  let freed = 0;
  for (let rank = 0; rank < priorityRank[priority] && freed < need; rank++) {
    for (const e of [...live.values(), ...incoming]) {
      if (freed >= need) break;
      if (priorityRank[e.priority] !== rank || evicted.has(e.seq)) continue;
      victims.push(e);
      freed += e.length;
    }
  }
  return victims;
}
