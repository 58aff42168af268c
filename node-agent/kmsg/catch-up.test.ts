import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { KernelLogCatchUp, readLogLines, type LogHandle } from './read-log.ts';

/** A kernel log the test writes records into; a read with nothing new answers EAGAIN, as /dev/kmsg does. */
function kernel(): { open: () => Promise<LogHandle>; log: (record: string) => void } {
  const queue: string[] = [];
  return {
    log: (record) => queue.push(`${record}\n`),
    open: async () => ({
      read: async (buf: Buffer) => {
        const next = queue.shift();
        if (next === undefined) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
        return buf.write(next);
      },
      close: async () => undefined,
    }),
  };
}

const stop = new AbortController();
afterEach(() => stop.abort());

/** Runs a follower that sleeps an hour between reads: only a catch-up can make it read. */
function follow(
  k: ReturnType<typeof kernel>,
  tap: KernelLogCatchUp,
  ac: AbortController,
): { seen: string[]; done: Promise<void> } {
  const seen: string[] = [];
  const done = (async () => {
    try {
      for await (const line of readLogLines('/dev/kmsg', {
        follow: true,
        pollMs: 3_600_000,
        openLog: k.open,
        sleep: tap.sleep,
        signal: ac.signal,
      }))
        seen.push(line);
    } finally {
      tap.stopped();
    }
  })();
  return { seen, done };
}

/** Until the follower has read what it found at start (its first sleep). */
async function following(tap: KernelLogCatchUp): Promise<void> {
  for (let i = 0; i < 1000 && !tap.isFollowing; i++) await new Promise((r) => setImmediate(r));
  expect(tap.isFollowing).toBe(true);
}

describe('KernelLogCatchUp', () => {
  it('makes the follower read what the kernel logged, and resolves only once those lines were handed over', async () => {
    const k = kernel();
    const tap = new KernelLogCatchUp(new FakeClock());
    const ac = new AbortController();
    const f = follow(k, tap, ac);
    await following(tap);
    k.log('4,360,42811810,c;NVRM: Xid (PCI:0000:00:06): 31, pid=560, name=python3, channel 0x0000001e');
    expect(f.seen).toEqual([]); // asleep for an hour
    expect(await tap.catchUp(60_000)).toBe(true);
    expect(f.seen).toEqual([
      '4,360,42811810,c;NVRM: Xid (PCI:0000:00:06): 31, pid=560, name=python3, channel 0x0000001e',
    ]);
    ac.abort();
    await f.done;
  });

  it('answers false at once when nothing follows the log (never started, or stopped: an unreadable /dev/kmsg)', async () => {
    const tap = new KernelLogCatchUp(new FakeClock());
    expect(await tap.catchUp(60_000)).toBe(false);
    const k = kernel();
    const ac = new AbortController();
    const f = follow(k, tap, ac);
    await following(tap);
    ac.abort();
    await f.done;
    expect(await tap.catchUp(60_000)).toBe(false);
  });

  it('gives up after its timeout when the follower does not come back (a read that hangs)', async () => {
    const clock = new FakeClock();
    const tap = new KernelLogCatchUp(clock);
    void tap.sleep(3_600_000, stop.signal); // following, asleep; nobody will read after the wake
    const answer = tap.catchUp(1);
    clock.advance(1);
    expect(await answer).toBe(false);
  });
});
