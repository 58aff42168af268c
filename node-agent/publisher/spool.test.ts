import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { decodeLine, encodeEvent, encodeLine, scanLines } from './spool-codec.ts';
import { Spool } from './spool.ts';
import { toRecord, type Priority, type QueuedRecord } from './types.ts';
import { testEvent } from './test-harness.ts';

const rec = (seq: number, priority: Priority = 'critical'): QueuedRecord => toRecord(testEvent(seq, priority), seq);
const dirs: string[] = [];
const tmpSpool = async () => {
  const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-spool-'));
  dirs.push(dir);
  return join(dir, 'spool.jsonl');
};
afterAll(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

/**
 * Tests reopen a spool without closing the first one, as after a kill. The abandoned spool's file
 * handle is closed once the test is over (close = fsync + close, it writes nothing), so Node does
 * not close it on garbage collection with a warning; the reopen was still tested without it.
 */
const opened: Spool[] = [];
const openSpool = async (o: Parameters<typeof Spool.open>[0]) => {
  const r = await Spool.open(o);
  opened.push(r.spool);
  return r;
};
afterEach(() => Promise.all(opened.splice(0).map((sp) => sp.close().catch(() => undefined))));

describe('spool line codec', () => {
  it('round-trips a record byte for byte, detail string included', () => {
    const r = rec(3);
    const line = encodeEvent(r);
    expect(line.at(-1)).toBe(0x0a);
    expect(decodeLine(line.subarray(0, -1))).toEqual({ kind: 'event', record: r });
  });

  it.each([
    ['a flipped byte', (b: Buffer) => Buffer.concat([b.subarray(0, 20), Buffer.from('X'), b.subarray(21)])],
    ['a wrong checksum', (b: Buffer) => Buffer.concat([Buffer.from('00000000'), b.subarray(8)])],
    ['a missing separator', (b: Buffer) => b.subarray(9)],
  ])('rejects a line with %s', (_name, damage) => {
    const line = encodeEvent(rec(1)).subarray(0, -1);
    expect(decodeLine(damage(line))).toBeUndefined();
  });

  it('skips a torn tail and counts corrupt lines without throwing', () => {
    const good = [encodeEvent(rec(0)), encodeEvent(rec(1))];
    const buf = Buffer.concat([
      good[0]!,
      Buffer.from('deadbeef {"kind":"ack"}\n'),
      good[1]!,
      encodeEvent(rec(2)).subarray(0, 40),
    ]);
    const scan = scanLines(buf);
    expect(scan.lines.map((l) => l.line.kind === 'event' && l.line.record.seq)).toEqual([0, 1]);
    expect(scan.corrupt).toBe(1);
    expect(scan.tornBytes).toBe(40);
  });
});

describe('Spool', () => {
  it('keeps records across a reopen, in order, with the next seq after the last', async () => {
    const path = await tmpSpool();
    const { spool } = await openSpool({ path, maxBytes: 1 << 20 });
    await spool.append([rec(5), rec(6), rec(7)]);
    const reopened = await openSpool({ path, maxBytes: 1 << 20 });
    expect(reopened.recovered).toEqual({ events: 3, corruptLines: 0, tornBytes: 0 });
    expect((await reopened.spool.readHead(10)).map((r) => r.seq)).toEqual([5, 6, 7]);
    expect(reopened.spool.lastSeq).toBe(7);
  });

  it('forgets acknowledged records on reopen, even when acked out of order', async () => {
    const path = await tmpSpool();
    const { spool } = await openSpool({ path, maxBytes: 1 << 20 });
    await spool.append([rec(0), rec(1), rec(2), rec(3)]);
    await spool.ack([0, 2]);
    const { spool: again } = await openSpool({ path, maxBytes: 1 << 20 });
    expect((await again.readHead(10)).map((r) => r.seq)).toEqual([1, 3]);
  });

  it('compacts to an empty file once everything is acknowledged', async () => {
    const path = await tmpSpool();
    const { spool } = await openSpool({ path, maxBytes: 1 << 20 });
    await spool.append([rec(0), rec(1)]);
    await spool.ack([0, 1]);
    expect((await stat(path)).size).toBe(0);
    expect(spool.bytes).toBe(0);
  });

  it('rewrites the file without the acknowledged prefix once garbage outweighs live records', async () => {
    const path = await tmpSpool();
    const { spool } = await openSpool({ path, maxBytes: 64 << 20 });
    const records = Array.from({ length: 600 }, (_, i) => rec(i));
    await spool.append(records);
    expect(spool.events).toBe(600);
    // Half acked: garbage (300 records + 30 ack lines) now outweighs the 300 live records.
    for (let i = 0; i < 300; i += 10) await spool.ack(records.slice(i, i + 10).map((r) => r.seq));
    const liveBytes = records.slice(300).reduce((n, r) => n + encodeEvent(r).length, 0);
    expect(spool.bytes).toBe(liveBytes);
    expect((await stat(path)).size).toBe(liveBytes);
    const text = await readFile(path, 'utf8');
    expect(text).not.toContain('"kind":"ack"');
    expect((await spool.readHead(1))[0]?.seq).toBe(300);
    expect(spool.events).toBe(300);
  });

  it('skips a torn last line on open and leaves a clean file behind', async () => {
    const path = await tmpSpool();
    await writeFile(path, Buffer.concat([encodeEvent(rec(0)), encodeEvent(rec(1)).subarray(0, 30)]));
    const { spool, recovered } = await openSpool({ path, maxBytes: 1 << 20 });
    expect(recovered).toEqual({ events: 1, corruptLines: 0, tornBytes: 30 });
    await spool.append([rec(2)]);
    const { spool: again } = await openSpool({ path, maxBytes: 1 << 20 });
    expect((await again.readHead(10)).map((r) => r.seq)).toEqual([0, 2]);
  });

  it('evicts the oldest bulk before any normal to make room for critical', async () => {
    const path = await tmpSpool();
    const size = encodeEvent(rec(0, 'bulk')).length;
    const { spool } = await openSpool({ path, maxBytes: size * 3 + 10 });
    await spool.append([rec(0, 'normal'), rec(1, 'bulk'), rec(2, 'bulk')]);
    const outcome = await spool.append([rec(3, 'critical')]);
    expect(outcome.dropped.map((d) => d.seq)).toEqual([1]);
    expect((await spool.readHead(10)).map((r) => r.seq)).toEqual([0, 2, 3]);
  });

  it('compacts away acked records to make room instead of dropping anything', async () => {
    const path = await tmpSpool();
    const size = encodeEvent(rec(10, 'bulk')).length;
    const { spool } = await openSpool({ path, maxBytes: size * 4 + 50 });
    await spool.append([rec(0, 'bulk'), rec(1, 'bulk'), rec(2, 'bulk')]);
    await spool.ack([0, 1]);
    expect(spool.bytes).toBeGreaterThan(size * 3);
    const outcome = await spool.append([rec(3, 'bulk'), rec(4, 'bulk')]);
    expect(outcome).toEqual({ dropped: [], overBound: false });
    expect((await spool.readHead(10)).map((r) => r.seq)).toEqual([2, 3, 4]);
    expect(spool.bytes).toBeLessThanOrEqual(size * 4 + 50);
  });

  it('writes an ack line that survives a reopen without losing unacked records', async () => {
    const path = await tmpSpool();
    const { spool } = await openSpool({ path, maxBytes: 1 << 20 });
    await spool.append([rec(0), rec(1)]);
    await spool.ack([0]);
    const raw = await readFile(path);
    expect(raw.includes(encodeLine({ kind: 'ack', seqs: [0] }))).toBe(true);
  });
});
