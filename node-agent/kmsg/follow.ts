/**
 * The kernel log followed for XIDs and SXids (agent-runtime.ts runs it when KMSG_PATH can be read):
 * from the record after the cursor an earlier run of the agent saved in this boot (cursor.ts), or,
 * without one, from the agent's start.
 */
import { readFile } from 'node:fs/promises';
import type { Agent } from '../agent.ts';
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
  /** Where `uptime` and `sys/kernel/random/boot_id` are read (default /proc; tests: a temp dir). */
  procDir?: string;
  saveEvery?: number;
}

async function uptimeUs(proc: string): Promise<number> {
  const text = await readFile(`${proc}/uptime`, 'utf8').catch(() => '0');
  return Math.floor(Number.parseFloat(text) * 1e6) || 0;
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
 * re-publish every XID since boot.
 */
function oldNews(after: number | undefined, startedUs: number, log: PublisherLog): (line: string) => boolean {
  let first = true;
  return (line) => {
    const seq = after === undefined ? undefined : kmsgSeq(line);
    if (seq === undefined) return kmsgRecordBefore(line, startedUs);
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

/** What the agent is told of a record beside its line: which record it is (kmsg/record.ts). */
function recordOf(line: string, bootId: string | undefined): KernelRecord {
  const p = kmsgPrefix(line);
  return p && bootId !== undefined ? { key: { bootId, seq: p.seq } } : {};
}

/**
 * Follows the kernel log, handing each new record to the agent; the cursor moves past a record only
 * after the agent took it, and is saved in batches once the publisher's journal holds what it took.
 */
export async function followKernelLog(
  agent: Pick<Agent, 'onKernelLine'>,
  path: string,
  stop: AbortSignal,
  log: PublisherLog,
  catchUp: Pick<KernelLogCatchUp, 'sleep' | 'stopped'>,
  o: FollowOptions = {},
): Promise<void> {
  const proc = o.procDir ?? '/proc';
  const startedUs = await uptimeUs(proc);
  const boot = await bootId(proc);
  const cursor = new KernelLogCursor(o.cursor, boot, log);
  const skip = oldNews(cursor.resumeAfter, startedUs, log);
  const saveEvery = o.saveEvery ?? KMSG_CURSOR_SAVE_EVERY;
  // In order, each once the records handed on up to its mark are in the publisher's journal; never throws.
  let saving: Promise<void> = Promise.resolve();
  const save = () => {
    const upTo = cursor.mark();
    saving = saving.then(async () => {
      await o.durable?.().catch(() => undefined);
      cursor.save(upTo);
    });
  };
  // Where the follower sleeps it has read all there was: one save per burst of records.
  const sleep = (ms: number, signal?: AbortSignal) => {
    const slept = catchUp.sleep(ms, signal);
    save();
    return slept;
  };
  try {
    for await (const line of readLogLines(path, { follow: true, signal: stop, sleep })) {
      if (!skip(line)) {
        try {
          agent.onKernelLine(line, recordOf(line, boot));
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
    save();
  }
}
