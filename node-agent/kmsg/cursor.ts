/**
 * Where the kernel-log follower (follow.ts) got to, kept across agent restarts beside the spool
 * (`<SPOOL_PATH>.kmsg.json`, KMSG_CURSOR_PATH): the boot (`/proc/sys/kernel/random/boot_id`) and the
 * sequence number of the last /dev/kmsg record the follower dealt with — handed to the agent, whose
 * publisher has its own spool, or skipped as older than the agent. /dev/kmsg numbers its records in
 * order, per boot, so a restarted agent publishes exactly the records after it: the XIDs the kernel
 * logged while no agent ran (a rolling update's gap, an OOM kill) are no longer lost.
 *
 * Saved only after the records it covers were handed on and the publisher's write-ahead journal holds
 * them (never one lost because the cursor ran ahead), and in batches (follow.ts: where the follower has
 * read all there was, every `saveEvery` records of a flood, at stop), so a flood is not one file write
 * per line. The price: records handed on after the last save are published again by the next run if
 * the agent is killed (SIGKILL, OOM) in between — at most a batch; a stop (SIGTERM) saves first. A
 * duplicate over a loss: evidence, not silence; and one consumers drop, as its events keep their ids (an event of
 * a record is named by the record, record.ts).
 */
import { readFileSync } from 'node:fs';
import { replaceFile } from '../agent-start-checks.ts';
import type { PublisherLog } from '../publisher/types.ts';

/** Where the cursor's text lives; tests pass their own. */
export interface CursorStore {
  /** The saved text; undefined when there is none (a first start). Throws when it is there but cannot be read. */
  read(): string | undefined;
  /** Replaces it (atomically: never half a cursor). Throws when it cannot be written. */
  write(text: string): void;
}

/** The cursor in a file, replaced atomically (a temporary file renamed over it). */
export function cursorFile(path: string): CursorStore {
  return {
    read: () => {
      try {
        return readFileSync(path, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw err;
      }
    },
    write: (text) => replaceFile(path, text),
  };
}

/** A /dev/kmsg record's sequence number (`prio,seq,usec,flags;text`); undefined for any other line. */
export function kmsgSeq(line: string): number | undefined {
  const m = /^\d+,(\d+),\d+,[^;]*;/.exec(line);
  return m ? Number(m[1]) : undefined;
}

const CURSOR_UNREAD =
  'kernel-log cursor not readable: the records the kernel logged while no agent ran are skipped as older than ' +
  'the agent; XIDs among them are not published';

export class KernelLogCursor {
  /** The last record dealt with (this boot), and the one saved; undefined: none yet. */
  private seq: number | undefined;
  private saved: number | undefined;
  private moved = 0;
  private failing = false;

  /** `bootId` undefined (unreadable): nothing is resumed or saved, each start skips what predates it. */
  constructor(
    private readonly store: CursorStore | undefined,
    private readonly bootId: string | undefined,
    private readonly log: PublisherLog,
  ) {
    this.seq = this.saved = this.load();
  }

  /** The last record an earlier run dealt with in this boot; undefined: none (no cursor, another boot). */
  get resumeAfter(): number | undefined {
    return this.saved;
  }

  /** Records dealt with since the last `mark`. */
  get unsaved(): number {
    return this.moved;
  }

  /** Where the cursor is now, for a `save` once what was handed on up to here is safe. */
  mark(): number | undefined {
    this.moved = 0;
    return this.seq;
  }

  /** A record the follower handed on (after the agent took it) or skipped. */
  passed(line: string): void {
    const seq = kmsgSeq(line);
    if (seq === undefined || (this.seq !== undefined && seq <= this.seq)) return;
    this.seq = seq;
    this.moved++;
  }

  /**
   * Writes the cursor at `upTo` (a `mark`) when that is past the saved one; a failed write is logged, once in a
   * row (the next save tries again), never thrown.
   */
  save(upTo: number | undefined): void {
    if (!this.store || this.bootId === undefined || upTo === undefined) return;
    if (this.saved !== undefined && upTo <= this.saved) return;
    try {
      this.store.write(JSON.stringify({ bootId: this.bootId, seq: upTo }));
      this.saved = upTo;
      this.failing = false;
    } catch (err) {
      if (!this.failing)
        this.log.warn('kernel-log cursor not saved', { error: err instanceof Error ? err.message : String(err) });
      this.failing = true;
    }
  }

  /**
   * The saved cursor of this boot. One there that cannot be read or parsed is not a first start in silence: the
   * records logged while no agent ran are skipped as older than the agent (as on a first start), and the log says
   * so, once — XIDs may have gone unreported.
   */
  private load(): number | undefined {
    if (this.bootId === undefined) return undefined;
    let c: { bootId?: unknown; seq?: unknown } | null;
    try {
      const text = this.store?.read();
      if (text === undefined) return undefined;
      c = JSON.parse(text) as { bootId?: unknown; seq?: unknown } | null;
      if (!c || typeof c !== 'object') throw new Error('not {bootId, seq}');
    } catch (err) {
      this.log.warn(CURSOR_UNREAD, { error: err instanceof Error ? err.message : String(err) });
      return undefined;
    }
    // Another boot's numbers say nothing of this one's ring buffer.
    if (c.bootId !== this.bootId) return undefined;
    if (Number.isSafeInteger(c.seq) && (c.seq as number) >= 0) return c.seq as number;
    this.log.warn(CURSOR_UNREAD, { error: 'no sequence number' });
    return undefined;
  }
}
