/**
 * The kernel log followed for XIDs and SXids (agent-runtime.ts runs it when KMSG_PATH can be read):
 * from the record after the cursor an earlier run of the agent saved in this boot (cursor.ts), or,
 * without one, from the agent's start.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from '../agent.ts';
import { systemClock } from '../clock.ts';
import type { PublisherLog } from '../publisher/types.ts';
import { KernelLogCursor, kmsgSeq, type CursorStore } from './cursor.ts';
import { readLogLines, type KernelLogCatchUp } from './read-log.ts';
import { kmsgPrefix, type KernelRecord } from './record.ts';

/** /dev/kmsg records carry microseconds since boot: `6,1234,5678901,-;NVRM: Xid ...`. */
export function kmsgRecordBefore(line: string, sinceBootUs: number): boolean {
  const m = /^\d+,\d+,(\d+),[^;]*;/.exec(line);
  return m !== null && Number(m[1]) < sinceBootUs;
}

/** A flood's cursor is saved at least this often (records); otherwise where the follower read all there was. */
export const KMSG_CURSOR_SAVE_EVERY = 256;

export interface FollowOptions {
  /** Where the cursor is kept (beside the spool); absent: none (`--dry-run`), each start skips what predates it. */
  cursor?: CursorStore;
  /**
   * Resolves once what the agent published so far would survive a kill (the publisher's write-ahead journal,
   * Publisher.journaledSoFar); the cursor is saved only then. Absent: at once.
   */
  durable?: () => Promise<unknown>;
  /**
   * Resolves once the agent has published what it held at stop (agent-runtime.ts: after `agent.flush()`); the save
   * at stop waits for it, so the cursor passes held XID repeats only once they were published. Absent: at once.
   */
  flushed?: Promise<unknown>;
  /** Where `uptime` and `sys/kernel/random/boot_id` are read (default /proc; tests: a temp dir). */
  procDir?: string;
  saveEvery?: number;
  /** The agent's clock (ms since the epoch), for when a record found at start was logged (default: the system's). */
  now?: () => number;
}

/** /proc/uptime in µs; undefined when it cannot be read. */
async function uptimeUs(proc: string): Promise<number | undefined> {
  const text = await readFile(`${proc}/uptime`, 'utf8').catch(() => '');
  const us = Math.floor(Number.parseFloat(text) * 1e6);
  return Number.isFinite(us) && us >= 0 ? us : undefined;
}

async function bootId(proc: string): Promise<string | undefined> {
  const text = await readFile(`${proc}/sys/kernel/random/boot_id`, 'utf8').catch(() => '');
  return text.trim() || undefined;
}

/**
 * Which records are old news. /dev/kmsg starts with the whole ring buffer: with a cursor of this boot,
 * the records up to it were dealt with by an earlier run and those after it were logged since (some
 * while no agent ran): only these are published. Without one (a first start, another boot, no cursor
 * file), records from before the agent started predate it and are skipped, or every restart would
 * re-publish every XID since boot. When /proc/uptime cannot be read either, when the agent started is unknown
 * (not 0, which would make the whole ring buffer new: every XID since boot published again at each restart, each
 * stamped now, as if the GPU had just failed again): the records found at start (those read before the follower
 * first caught up, `caughtUp`) are skipped, as records older than a known start would be.
 */
function oldNews(
  after: number | undefined,
  startedUs: number | undefined,
  caughtUp: () => boolean,
  log: PublisherLog,
): (line: string) => boolean {
  let first = true;
  return (line) => {
    const seq = after === undefined ? undefined : kmsgSeq(line);
    if (seq === undefined) return startedUs === undefined ? !caughtUp() : kmsgRecordBefore(line, startedUs);
    if (seq <= after!) return true;
    // The ring buffer overwrote records logged while no agent read it: said once, they cannot be had.
    if (first && seq > after! + 1)
      log.warn('kernel-log records lost while no agent read them (the ring buffer overwrote them)', {
        after,
        next: seq,
      });
    first = false;
    return false;
  };
}

/**
 * What the agent is told of a record beside its line: which record it is, and, for one logged before the follower
 * started (some while no agent ran, published after a restart), when: the boot's wall time (now − uptime, both read
 * at start) plus the record's time since boot. A record logged since is read within a poll (or a catch-up) of being
 * logged, and goes by the agent's clock, as NVML's sightings of the same XIDs do; so does every record when
 * /proc/uptime cannot be read (no boot time to add to).
 *
 * How far off the derived time can be:
 * - suspend: the record's stamp is "the monotonic timestamp" (Documentation/ABI/testing/dev-kmsg), which stops
 *   while the machine is suspended, and /proc/uptime counts the time suspended (CLOCK_BOOTTIME): a record logged
 *   after a resume is placed earlier by the time suspended since boot (dmesg(1) warns of the same for `-T`). GPU
 *   servers do not suspend;
 * - clock steps: the wall clock is read now, not when the record was logged; an NTP step (or a clock set by hand)
 *   in between moves the record by that step;
 * - drift: the stamp is the kernel's local_clock() (kernel/printk/printk.c), not steered by NTP as uptime is;
 *   the two part by that clock's frequency error over the uptime (a crystal's tens of ppm: up to a few seconds a
 *   day, minutes on a node up for months, as `dmesg -T` drifts). Records keep their spacing: a window counting
 *   them sees them as the kernel logged them, not as one burst at the agent's start.
 */
function recordOf(
  line: string,
  bootId: string | undefined,
  startedUs: number | undefined,
  bootAtMs: number | undefined,
): KernelRecord {
  const p = kmsgPrefix(line);
  if (!p) return {};
  const caughtUp = startedUs !== undefined && bootAtMs !== undefined && p.usec < startedUs;
  return {
    ...(bootId === undefined ? {} : { key: { bootId, seq: p.seq } }),
    ...(caughtUp ? { loggedAtMs: Math.round(bootAtMs + p.usec / 1000) } : {}),
  };
}

/**
 * Follows the kernel log, handing each new record to the agent; the cursor moves past a record only
 * after the agent took it, and is saved in batches once the publisher's journal holds what it took.
 */
export async function followKernelLog(
  agent: Pick<Agent, 'onKernelLine'> & Partial<Pick<Agent, 'heldKernelRecord'>>,
  path: string,
  stop: AbortSignal,
  log: PublisherLog,
  catchUp: Pick<KernelLogCatchUp, 'sleep' | 'stopped'>,
  o: FollowOptions = {},
): Promise<void> {
  const proc = o.procDir ?? '/proc';
  const uptime = await uptimeUs(proc);
  const bootAtMs = uptime === undefined ? undefined : (o.now ?? systemClock.now)() - uptime / 1000;
  const boot = await bootId(proc);
  const cursor = new KernelLogCursor(o.cursor, boot, log);
  // Where the follower first sleeps it has read the ring buffer it found at start.
  let caughtUp = false;
  if (uptime === undefined && cursor.resumeAfter === undefined)
    log.warn('/proc/uptime not readable: the kernel-log records found at start are skipped as older than the agent', {
      proc,
    });
  const skip = oldNews(cursor.resumeAfter, uptime, () => caughtUp, log);
  const saveEvery = o.saveEvery ?? KMSG_CURSOR_SAVE_EVERY;
  // In order, each once the records handed on up to its mark are in the publisher's journal; never throws. Not past
  // a record whose XID repeat the agent still holds (xid-aggregate.ts): held, it is in no journal, only in memory,
  // and a kill would lose it; the next run reads it again instead. Read just before the journal is asked: a repeat
  // released since the mark was published before, so the journal's answer covers it.
  let saving: Promise<void> = Promise.resolve();
  const save = (after?: Promise<unknown>) => {
    const upTo = cursor.mark();
    saving = saving.then(async () => {
      await after?.catch(() => undefined);
      const held = agent.heldKernelRecord?.();
      await o.durable?.().catch(() => undefined);
      // (Held from record 0, the first of the boot: nothing before it to save.)
      cursor.save(held === undefined || upTo === undefined ? upTo : held > 0 ? Math.min(upTo, held - 1) : undefined);
    });
  };
  // Where the follower sleeps it has read all there was: one save per burst of records.
  const sleep = (ms: number, signal?: AbortSignal) => {
    caughtUp = true;
    const slept = catchUp.sleep(ms, signal);
    save();
    return slept;
  };
  try {
    for await (const line of readLogLines(path, { follow: true, signal: stop, sleep })) {
      if (!skip(line)) {
        try {
          agent.onKernelLine(line, recordOf(line, boot, uptime, bootAtMs));
        } catch (err) {
          // One line the agent cannot turn into an event must not stop the follower.
          log.error('kernel-log line not published', {
            line: line.slice(0, 300),
            error: err instanceof Error ? err.message : String(err),
          });
        }
      }
      cursor.passed(line);
      if (cursor.unsaved >= saveEvery) save();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    log.warn('kernel log not readable; XIDs come from NVML only', {
      path,
      error: code ?? String(err),
      ...(code === 'EACCES' || code === 'EPERM' ? { hint: 'reading /dev/kmsg needs CAP_SYSLOG' } : {}),
    });
  } finally {
    catchUp.stopped();
    // Not awaited: the stop goes on to the publisher's close, which spills what it holds and waits for its journal
    // itself; the cursor follows the journal, and a kill before it only means those records are published again.
    // After the agent's flush (where given): what it held goes out then, and the cursor may pass it only after.
    save(o.flushed);
  }
}
