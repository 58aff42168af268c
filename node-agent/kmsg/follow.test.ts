/**
 * The kernel-log follower across agent restarts: records the kernel logged while no agent ran (a rolling
 * update's gap) are published by the next run, from the cursor the last one kept beside its spool; none twice,
 * none lost. Each run reads a real file standing in for /dev/kmsg, with /proc's uptime and boot id in a temp dir.
 */
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { silentLog, type PublisherLog } from '../publisher/types.ts';
import { cursorFile, type CursorStore } from './cursor.ts';
import { followKernelLog } from './follow.ts';
import { KernelLogCatchUp } from './read-log.ts';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A /dev/kmsg record: sequence number `seq`, logged `sec` seconds after boot. */
const record = (seq: number, sec: number) =>
  `4,${seq},${sec * 1_000_000},-;NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.`;

function node() {
  const dir = mkdtempSync(join(tmpdir(), 'gr-kmsg-'));
  dirs.push(dir);
  const proc = join(dir, 'proc');
  mkdirSync(join(proc, 'sys/kernel/random'), { recursive: true });
  const kmsg = join(dir, 'kmsg');
  writeFileSync(kmsg, '');
  const boot = (id: string, uptimeSec: number) => {
    writeFileSync(join(proc, 'sys/kernel/random/boot_id'), `${id}\n`);
    writeFileSync(join(proc, 'uptime'), `${uptimeSec}.00 1.00\n`);
  };
  const log = (...records: string[]) => appendFileSync(kmsg, records.map((r) => `${r}\n`).join(''));
  return { dir, proc, kmsg, boot, log, cursorPath: join(dir, 'spool.jsonl.kmsg.json') };
}

/** One agent run: reads what the log holds, then stops (as at SIGTERM); returns the lines it handed on. */
async function run(
  n: ReturnType<typeof node>,
  o: {
    cursor?: CursorStore;
    saveEvery?: number;
    onLine?: (line: string) => void;
    durable?: () => Promise<void>;
    /** Before the stop, once the follower has read everything there was (`tap` wakes it to read more). */
    beforeStop?: (tap: KernelLogCatchUp) => Promise<void>;
    log?: PublisherLog;
  } = {},
): Promise<string[]> {
  const seen: string[] = [];
  const tap = new KernelLogCatchUp(new FakeClock());
  const stop = new AbortController();
  const agent = {
    onKernelLine: (line: string) => {
      o.onLine?.(line);
      seen.push(line);
      return [];
    },
  };
  // Where the follower sleeps it has read everything there was (its clock never fires: only the stop wakes it).
  let asleep!: () => void;
  const readAll = new Promise<void>((resolve) => (asleep = resolve));
  const follower = {
    sleep: (ms: number, signal?: AbortSignal) => (asleep(), tap.sleep(ms, signal)),
    stopped: () => tap.stopped(),
  };
  const done = followKernelLog(agent, n.kmsg, stop.signal, o.log ?? silentLog, follower, {
    cursor: o.cursor ?? cursorFile(n.cursorPath),
    procDir: n.proc,
    ...(o.saveEvery ? { saveEvery: o.saveEvery } : {}),
    ...(o.durable ? { durable: o.durable } : {}),
  });
  await readAll;
  await o.beforeStop?.(tap);
  stop.abort();
  await done;
  await new Promise((r) => setImmediate(r)); // the last save, once the (fake or absent) journal has answered
  return seen;
}

const seqs = (lines: string[]) => lines.map((l) => Number(l.split(',')[1]));

describe('the kernel log across agent restarts', () => {
  it('publishes what the kernel logged while no agent ran (same boot, after the cursor), and only that', async () => {
    const n = node();
    n.boot('boot-1', 15);
    n.log(record(1, 10));
    expect(seqs(await run(n))).toEqual([]); // before the first start: skipped, as always
    n.log(record(2, 20));
    n.log(record(3, 30)); // logged while the agent was up...
    n.boot('boot-1', 100); // ...or while it was down: a restart, uptime 100 s
    n.log(record(4, 60), record(5, 90)); // the rollout gap
    expect(seqs(await run(n))).toEqual([2, 3, 4, 5]);
    expect(seqs(await run(n))).toEqual([]); // never twice
    n.log(record(6, 120));
    expect(seqs(await run(n))).toEqual([6]);
  });

  it('keeps the rule of the start on another boot, or with no cursor: what predates the start is skipped', async () => {
    const n = node();
    n.boot('boot-1', 15);
    n.log(record(1, 20));
    expect(seqs(await run(n))).toEqual([1]);
    rmSync(n.kmsg);
    writeFileSync(n.kmsg, ''); // a reboot: a new ring buffer, a new boot id
    n.boot('boot-2', 50);
    n.log(record(1, 5), record(2, 30));
    expect(seqs(await run(n))).toEqual([]);
    n.log(record(3, 60));
    expect(seqs(await run(n))).toEqual([3]); // the new boot's cursor
    rmSync(n.cursorPath);
    n.boot('boot-2', 100);
    n.log(record(4, 80));
    expect(seqs(await run(n))).toEqual([]);
  });

  it('says so when the cursor is there but cannot be read: the records logged while no agent ran are skipped', async () => {
    const n = node();
    n.boot('boot-1', 15);
    n.log(record(1, 20));
    expect(seqs(await run(n))).toEqual([1]);
    n.boot('boot-1', 100);
    n.log(record(2, 60)); // logged while the agent was down
    writeFileSync(n.cursorPath, '{"bootId": "boot-1", "se'); // the cursor cut short
    const warned: string[] = [];
    const log = { ...silentLog, warn: (m: string) => void warned.push(m) };
    expect(seqs(await run(n, { log }))).toEqual([]);
    // Not a first start in silence: XID 79 of record 2 is not published, and the log says why.
    expect(warned.filter((m) => m.includes('kernel-log cursor not readable'))).toHaveLength(1);
  });

  it('skips the ring buffer found at start when /proc/uptime cannot be read and there is no cursor', async () => {
    const n = node();
    n.boot('boot-1', 15);
    rmSync(join(n.proc, 'uptime')); // unreadable: how long the node has been up is unknown
    rmSync(join(n.proc, 'sys/kernel/random/boot_id')); // and which boot this is (so no cursor either)
    n.log(record(1, 10), record(2, 12)); // XIDs of hours ago, dealt with long since
    expect(seqs(await run(n))).toEqual([]); // not published again as if they had just happened
    n.log(record(3, 20));
    const lines = await run(n, {
      beforeStop: async (tap) => {
        n.log(record(4, 30)); // logged while this run follows the log: published
        await tap.catchUp(1000);
      },
    });
    expect(seqs(lines)).toEqual([4]);
    // The boot known, uptime not: the first start skips what it found; a restart resumes from its cursor.
    const m = node();
    m.boot('boot-1', 15);
    rmSync(join(m.proc, 'uptime'));
    m.log(record(1, 10));
    expect(seqs(await run(m))).toEqual([]);
    m.log(record(2, 20));
    expect(seqs(await run(m))).toEqual([2]);
  });

  it('saves the cursor only after a record was handed on, once per read (a flood in batches)', async () => {
    const n = node();
    n.boot('boot-1', 1);
    let saved = '';
    let writes = 0;
    const cursor: CursorStore = {
      read: () => saved || undefined,
      write: (text) => void ((saved = text), writes++),
    };
    const savedSeq = () => (saved ? (JSON.parse(saved) as { seq: number }).seq : 0);
    n.log(...Array.from({ length: 1000 }, (_, i) => record(i + 1, 2)));
    const seen = await run(n, {
      cursor,
      saveEvery: 256,
      onLine: (line) => expect(savedSeq()).toBeLessThan(Number(line.split(',')[1])),
    });
    expect(seen).toHaveLength(1000);
    expect(savedSeq()).toBe(1000);
    expect(writes).toBe(4); // at 256, 512 and 768 records, then where the follower had read all there was
    await run(n, { cursor });
    expect(writes).toBe(4); // nothing new: nothing written
  });

  it("saves the cursor only once the publisher's write-ahead journal holds what was handed on", async () => {
    const n = node();
    n.boot('boot-1', 1);
    n.log(record(1, 2), record(2, 3));
    let journaled!: () => void;
    const journal = new Promise<void>((resolve) => (journaled = resolve));
    const saved = () => {
      try {
        return (JSON.parse(readFileSync(n.cursorPath, 'utf8')) as { seq: number }).seq;
      } catch {
        return undefined;
      }
    };
    const seen = await run(n, {
      durable: () => journal,
      beforeStop: async () => {
        for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
        expect(saved()).toBeUndefined(); // handed on, not yet in the journal: a kill now publishes them again
        journaled();
      },
    });
    expect(seqs(seen)).toEqual([1, 2]);
    expect(saved()).toBe(2);
  });
});
