/**
 * The spool: an append-only file of events the bus has not taken yet, oldest first.
 *
 * - Every append is one write and one fsync, however many events it carries (the publisher hands
 *   over everything that arrived while the previous fsync ran).
 * - Delivered events are marked by appending an `ack` line (not fsynced: losing one in a power
 *   cut only means re-sending a batch, which consumers dedupe on detail.eventId).
 * - Compaction rewrites the live records to `<path>.tmp`, fsyncs it, renames it over the spool
 *   and fsyncs the directory, so a crash leaves either the old or the new file, never a mix.
 * - The bound (`maxBytes`) is enforced on append: bulk is dropped first, then normal. Critical
 *   is never dropped: if only critical remains, the spool grows past its bound and says so.
 *
 * Only an index (seq, priority, offset, length) stays in memory; records are re-read from disk
 * when replayed, so a full 64 MiB spool does not cost 64 MiB of heap.
 *
 * The port the publisher uses: spool-port.ts; the file helpers (index entries, runs, directory sync):
 * spool-file.ts.
 */
import { mkdir, open, readFile, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { encodeEvent, encodeLine, decodeLine, scanLines } from './spool-codec.ts';
import { silentLog, type PublisherLog, type QueuedRecord } from './types.ts';
import { contiguousRuns, describe, pickVictims, syncDir, type LiveEntry } from './spool-file.ts';
import type { AppendOutcome, DroppedEvent, SpoolOptions, SpoolPort, SpoolRecovery } from './spool-port.ts';

export type { AppendOutcome, DroppedEvent, SpoolOptions, SpoolPort, SpoolRecovery } from './spool-port.ts';

/** Compact once acked garbage is at least this big and at least as big as the live part. */
const COMPACT_MIN_GARBAGE = 64 * 1024;

export class Spool implements SpoolPort {
  private live = new Map<number, LiveEntry>();
  private liveBytesCount = 0;
  private fileBytes = 0;
  private maxSeq = -1;

  private constructor(
    private readonly path: string,
    private readonly maxBytes: number,
    private readonly log: PublisherLog,
    private fh: FileHandle,
  ) {}

  /** Opens (or creates) the spool, skipping torn and corrupt lines, and compacts it if needed. */
  static async open(options: SpoolOptions): Promise<{ spool: Spool; recovered: SpoolRecovery }> {
    const log = options.log ?? silentLog;
    await mkdir(dirname(options.path), { recursive: true });
    let buf: Buffer;
    try {
      buf = await readFile(options.path);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      buf = Buffer.alloc(0);
    }
    const scan = scanLines(buf);
    const spool = new Spool(options.path, options.maxBytes, log, await open(options.path, 'a+'));
    spool.fileBytes = buf.length;
    for (const { offset, length, line } of scan.lines) {
      if (line.kind === 'event') {
        const r = line.record;
        spool.maxSeq = Math.max(spool.maxSeq, r.seq);
        spool.addLive({
          seq: r.seq,
          priority: r.priority,
          detailType: r.detailType,
          eventId: r.eventId,
          offset,
          length,
        });
      } else if (line.kind === 'ack') {
        for (const seq of line.seqs) spool.removeLive(seq);
      }
    }
    if (scan.corrupt > 0 || scan.tornBytes > 0) {
      log.warn('spool had damaged lines; skipped them', {
        path: options.path,
        corruptLines: scan.corrupt,
        tornBytes: scan.tornBytes,
      });
    }
    // Start from a clean file: no torn tail for the next append to glue onto, no acked garbage.
    if (spool.fileBytes !== spool.liveBytesCount) await spool.rewrite([...spool.live.values()], []);
    return { spool, recovered: { events: spool.live.size, corruptLines: scan.corrupt, tornBytes: scan.tornBytes } };
  }

  get events(): number {
    return this.live.size;
  }

  /** Size of the file on disk (live records plus acked garbage not compacted yet). */
  get bytes(): number {
    return this.fileBytes;
  }

  /** Highest seq ever written here, so a restarted publisher numbers new events after it. */
  get lastSeq(): number {
    return this.maxSeq;
  }

  /** Appends in order, applying the bound. One fsync for the whole call. */
  async append(records: readonly QueuedRecord[]): Promise<AppendOutcome> {
    const dropped: DroppedEvent[] = [];
    let overBound = false;
    const incoming: { entry: LiveEntry; buf: Buffer }[] = [];
    const evicted = new Set<number>();
    let planned = this.liveBytesCount;
    for (const record of records) {
      const buf = encodeEvent(record);
      const entry: LiveEntry = {
        seq: record.seq,
        priority: record.priority,
        detailType: record.detailType,
        eventId: record.eventId,
        offset: -1,
        length: buf.length,
      };
      const need = planned + buf.length - this.maxBytes;
      if (need > 0) {
        const victims = pickVictims(
          this.live,
          record.priority,
          need,
          evicted,
          incoming.map((i) => i.entry),
        );
        const freed = victims.reduce((n, v) => n + v.length, 0);
        if (freed < need && record.priority !== 'critical') {
          dropped.push(describe(entry));
          continue;
        }
        for (const v of victims) {
          dropped.push(describe(v));
          if (v.offset >= 0) evicted.add(v.seq);
          else
            incoming.splice(
              incoming.findIndex((i) => i.entry === v),
              1,
            );
        }
        planned -= freed;
        if (freed < need) {
          overBound = true;
          this.log.error('SPOOL OVER ITS BOUND: only critical events left, keeping them all', {
            path: this.path,
            maxBytes: this.maxBytes,
            bytes: planned + buf.length,
          });
        }
      }
      incoming.push({ entry, buf });
      planned += buf.length;
      this.maxSeq = Math.max(this.maxSeq, record.seq);
    }
    const newBytes = incoming.reduce((n, i) => n + i.buf.length, 0);
    const hasGarbage = this.fileBytes > this.liveBytesCount;
    if (evicted.size > 0 || (hasGarbage && this.fileBytes + newBytes > this.maxBytes)) {
      const keep = [...this.live.values()].filter((e) => !evicted.has(e.seq));
      await this.rewrite(keep, incoming);
    } else if (incoming.length > 0) {
      const offset = this.fileBytes;
      await this.appendBytes(Buffer.concat(incoming.map((i) => i.buf)), true);
      let at = offset;
      for (const i of incoming) {
        this.addLive({ ...i.entry, offset: at });
        at += i.buf.length;
      }
      this.fileBytes += newBytes;
    }
    return { dropped, overBound };
  }

  /** The oldest `max` live records, in order, read back from disk (one read per contiguous run). */
  async readHead(max: number): Promise<QueuedRecord[]> {
    const head: LiveEntry[] = [];
    for (const entry of this.live.values()) {
      if (head.length >= max) break;
      head.push(entry);
    }
    const out: QueuedRecord[] = [];
    for (const run of contiguousRuns(head)) {
      const buf = Buffer.alloc(run.length);
      await this.fh.read(buf, 0, run.length, run.offset);
      for (const entry of run.entries) {
        const at = entry.offset - run.offset;
        const line = decodeLine(buf.subarray(at, at + entry.length - 1));
        if (line?.kind !== 'event' || line.record.seq !== entry.seq)
          throw new Error(`spool ${this.path}: record ${entry.seq} changed on disk at offset ${entry.offset}`);
        out.push(line.record);
      }
    }
    return out;
  }

  /** Marks records delivered. Compacts when the file is mostly delivered records. */
  async ack(seqs: readonly number[]): Promise<void> {
    const known = seqs.filter((s) => this.live.has(s));
    if (known.length === 0) return;
    for (const s of known) this.removeLive(s);
    if (this.live.size === 0) {
      await this.rewrite([], []);
      return;
    }
    const buf = encodeLine({ kind: 'ack', seqs: known });
    try {
      await this.appendBytes(buf, false);
    } catch (err) {
      // Not fatal: the records were delivered; without the ack a restart re-sends them once.
      this.log.warn('could not write spool ack; a restart may re-send these events', {
        path: this.path,
        error: String(err),
      });
      return;
    }
    this.fileBytes += buf.length;
    const garbage = this.fileBytes - this.liveBytesCount;
    if (garbage >= COMPACT_MIN_GARBAGE && garbage >= this.liveBytesCount)
      await this.rewrite([...this.live.values()], []);
  }

  async close(): Promise<void> {
    await this.fh.sync();
    await this.fh.close();
  }

  /**
   * A failed write (disk full) may leave part of a line behind; cut the file back so offsets stay
   * true and the next line does not glue onto the fragment.
   */
  private async appendBytes(buf: Buffer, fsync: boolean): Promise<void> {
    try {
      await this.fh.write(buf);
      if (fsync) await this.fh.sync();
    } catch (err) {
      await this.fh.truncate(this.fileBytes).catch(() => {});
      throw err;
    }
  }

  /** Writes `keep` (copied from the current file) and `extra` to a new file and swaps it in. */
  private async rewrite(
    keep: readonly LiveEntry[],
    extra: readonly { entry: LiveEntry; buf: Buffer }[],
  ): Promise<void> {
    const tmpPath = `${this.path}.tmp`;
    const tmp = await open(tmpPath, 'w');
    const next = new Map<number, LiveEntry>();
    let at = 0;
    try {
      for (const run of contiguousRuns(keep)) {
        const buf = Buffer.alloc(run.length);
        await this.fh.read(buf, 0, run.length, run.offset);
        await tmp.write(buf);
        for (const e of run.entries) {
          next.set(e.seq, { ...e, offset: at + (e.offset - run.offset) });
        }
        at += run.length;
      }
      for (const { entry, buf } of extra) {
        await tmp.write(buf);
        next.set(entry.seq, { ...entry, offset: at });
        at += buf.length;
      }
      await tmp.sync();
    } finally {
      await tmp.close();
    }
    await rename(tmpPath, this.path);
    await syncDir(dirname(this.path));
    await this.fh.close();
    this.fh = await open(this.path, 'a+');
    this.live = new Map();
    this.liveBytesCount = 0;
    for (const e of next.values()) this.addLive(e);
    this.fileBytes = at;
  }

  private addLive(e: LiveEntry): void {
    this.removeLive(e.seq);
    this.live.set(e.seq, e);
    this.liveBytesCount += e.length;
  }

  private removeLive(seq: number): void {
    const e = this.live.get(seq);
    if (!e) return;
    this.live.delete(seq);
    this.liveBytesCount -= e.length;
  }
}
