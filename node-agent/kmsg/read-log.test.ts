import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readLogLines, splitLines, type LogHandle } from './read-log.ts';
import { scanXids } from './scan.ts';

/** A scripted handle: each step is a chunk, an error code, or 0 (EOF / nothing yet). */
function scripted(steps: (string | { code: string } | 0)[]): { open: () => Promise<LogHandle>; closed: () => boolean } {
  let closed = false;
  let i = 0;
  return {
    closed: () => closed,
    open: async () => ({
      read: async (buf: Buffer) => {
        const step = i < steps.length ? steps[i++] : 0;
        if (step === 0 || step === undefined) return 0;
        if (typeof step === 'object') throw Object.assign(new Error(step.code), { code: step.code });
        return buf.write(step);
      },
      close: async () => {
        closed = true;
      },
    }),
  };
}

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

describe('readLogLines', () => {
  it('reads a real file to its end without following', async () => {
    const path = fileURLToPath(new URL('./fixtures/dmesg.log', import.meta.url));
    const lines = await collect(readLogLines(path));
    expect(lines).toHaveLength(11);
    expect(lines[5]).toContain('Xid (PCI:0000:3b:00): 79');
  });

  it('joins records split across reads and stops at EOF', async () => {
    const h = scripted(['a line\npart', 'ial\nlast']);
    expect(await collect(readLogLines('x', { openLog: h.open }))).toEqual(['a line', 'partial', 'last']);
    expect(h.closed()).toBe(true);
  });

  it('follows: waits at EOF and EAGAIN, skips EPIPE (overwritten kmsg records), until aborted', async () => {
    const h = scripted(['one\n', 0, { code: 'EAGAIN' }, { code: 'EPIPE' }, 'two\n', 0]);
    const abort = new AbortController();
    const sleeps: number[] = [];
    const sleep = async (ms: number) => {
      sleeps.push(ms);
      if (sleeps.length === 3) abort.abort();
    };
    const lines = await collect(
      readLogLines('/dev/kmsg', { follow: true, pollMs: 250, openLog: h.open, sleep, signal: abort.signal }),
    );
    expect(lines).toEqual(['one', 'two']);
    expect(sleeps).toEqual([250, 250, 250]);
    expect(h.closed()).toBe(true);
  });

  it('surfaces read errors other than EAGAIN and EPIPE', async () => {
    const h = scripted([{ code: 'EACCES' }]);
    await expect(collect(readLogLines('/dev/kmsg', { openLog: h.open }))).rejects.toMatchObject({ code: 'EACCES' });
    expect(h.closed()).toBe(true);
  });
});

describe('scanXids', () => {
  it('keeps only XID lines, in order', async () => {
    async function* chunks() {
      yield '[1.0] noise\n[2.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=a, gone\n';
      yield 'NVRM: Xid (PCI:0000:07:00): 13, x';
    }
    const found = [];
    for await (const x of scanXids(splitLines(chunks()))) found.push([x.pci, x.xid]);
    expect(found).toEqual([
      ['00000000:3B:00.0', 79],
      ['00000000:07:00.0', 13],
    ]);
  });
});
