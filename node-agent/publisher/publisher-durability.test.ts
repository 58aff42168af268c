// Publisher durability: shutdown, the spool bound, crash damage (torn lines) and disk trouble.
import { appendFile, mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { fileDeadLetter } from './dead-letter.ts';
import { Publisher } from './publisher.ts';
import { Spool, type SpoolPort } from './spool.ts';
import { FakePutEvents, networkError } from './fake-put-events.ts';
import { PUBLISHER_METRIC_NAMES as M } from './publisher-metrics.ts';
import { makeHarness, TEST_SETTINGS, testEvent } from './test-harness.ts';

const ids = (n: number, priority: 'critical' | 'normal' | 'bulk' = 'critical', from = 0) =>
  Array.from({ length: n }, (_, i) => `${priority}-${from + i}`);

describe('close (SIGTERM)', () => {
  it('sends queued events at once instead of waiting for the window', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    h.publisher.publish(testEvent(0));
    h.publisher.publish(testEvent(1));
    const report = await h.publisher.close({ deadlineMs: 5_000 });
    expect(report).toEqual({ spooled: 0, deadlineHit: false });
    expect(bus.acceptedIds()).toEqual(ids(2));
    expect(h.publisher.publish(testEvent(2)).ok).toBe(false);
  });

  it('accepts events published during close and sends or spools them with the rest', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.gate = new Promise(() => {});
    h.publisher.publish(testEvent(0));
    const closing = h.publisher.close({ deadlineMs: 2_000 });
    expect(h.publisher.publish(testEvent(1)).ok).toBe(true);
    await new Promise((r) => setImmediate(r));
    h.clock.advance(2_000);
    expect(await closing).toEqual({ spooled: 2, deadlineHit: true });
    expect(h.publisher.publish(testEvent(2)).ok).toBe(false);
    bus.gate = null;
    await h.restart();
    expect(bus.acceptedIds()).toEqual(ids(2));
  });

  it('spools what it cannot send when the bus is down, for the next start', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.down = networkError();
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
    const report = await h.publisher.close({ deadlineMs: 5_000 });
    expect(report.spooled).toBe(3);
    expect(bus.calls).toHaveLength(1);
    bus.down = null;
    await h.restart();
    expect(bus.acceptedIds()).toEqual(ids(3));
  });

  it('aborts a call still in flight at the deadline and spools its events', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.gate = new Promise(() => {});
    h.publisher.publish(testEvent(0));
    const closing = h.publisher.close({ deadlineMs: 2_000 });
    await new Promise((r) => setImmediate(r));
    h.clock.advance(2_000);
    const report = await closing;
    expect(report).toEqual({ spooled: 1, deadlineHit: true });
    bus.gate = null;
    await h.restart();
    expect(bus.acceptedIds()).toEqual(ids(1));
  });
});

describe('spool bound', () => {
  it('drops bulk first, then normal, and never critical', async () => {
    const bus = new FakePutEvents();
    bus.down = networkError();
    // Each record line is ~330 bytes: room for about 6.
    const h = await makeHarness(bus.send, { spoolMaxBytes: 2_000, settings: { maxAttempts: 1 } });
    h.publisher.publish(testEvent(0, 'bulk'));
    h.publisher.publish(testEvent(1, 'normal'));
    h.publisher.publish(testEvent(2, 'bulk'));
    h.publisher.publish(testEvent(3, 'critical'));
    await h.tick(200);
    expect(h.publisher.status().spooledEvents).toBe(4);
    for (let i = 10; i < 20; i++) h.publisher.publish(testEvent(i, 'critical'));
    await h.tick();
    const bytes = h.publisher.status().spoolBytes;
    expect(bytes).toBeGreaterThan(2_000);
    const text = await readFile(h.spoolPath, 'utf8');
    expect(text).not.toContain('bulk-');
    expect(text).not.toContain('normal-');
    for (const i of [3, ...Array.from({ length: 10 }, (_, k) => 10 + k)])
      expect(text).toContain(`"eventId\\":\\"critical-${i}\\"`);
    const metrics = h.metrics.render();
    expect(metrics).toContain(`${M.dropped}{priority="bulk"} 2`);
    expect(metrics).toContain(`${M.dropped}{priority="normal"} 1`);
    expect(metrics).not.toContain(`${M.dropped}{priority="critical"}`);
    bus.down = null;
    await h.tick(5_000);
    expect(bus.acceptedIds()).toEqual(['critical-3', ...ids(10, 'critical', 10)]);
  });

  it('refuses new bulk when the spool is full of critical, keeping the critical', async () => {
    const bus = new FakePutEvents();
    bus.down = networkError();
    const h = await makeHarness(bus.send, { spoolMaxBytes: 1_000, settings: { maxAttempts: 1 } });
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i, 'critical'));
    await h.tick(200);
    h.publisher.publish(testEvent(0, 'bulk'));
    h.publisher.publish(testEvent(0, 'normal'));
    await h.tick();
    expect(h.publisher.status().spooledEvents).toBe(3);
    expect(h.metrics.render()).toContain(`${M.dropped}{priority="bulk"} 1`);
  });
});

describe('torn spool', () => {
  it('skips a torn last line after a crash and keeps the rest', async () => {
    const bus = new FakePutEvents();
    bus.down = networkError();
    const h = await makeHarness(bus.send, { settings: { maxAttempts: 1 } });
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await appendFile(h.spoolPath, '0badc0de {"kind":"event","record":{"seq":99,"prio');
    bus.down = null;
    const p = await h.restart();
    p.publish(testEvent(3));
    await h.tick(200);
    expect(bus.acceptedIds()).toEqual(ids(4));
    const text = await readFile(h.spoolPath, 'utf8');
    expect(text).toBe('');
  });
});

describe('disk trouble', () => {
  it('keeps events in memory when the spool cannot be written, and spools them in order once it can', async () => {
    const bus = new FakePutEvents();
    bus.down = networkError();
    const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-publisher-'));
    const { spool } = await Spool.open({ path: join(dir, 'spool.jsonl'), maxBytes: 1 << 20 });
    let failAppends = 1;
    const flaky: SpoolPort = {
      get events() {
        return spool.events;
      },
      get bytes() {
        return spool.bytes;
      },
      get lastSeq() {
        return spool.lastSeq;
      },
      append: async (records) => {
        if (failAppends-- > 0)
          throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
        return spool.append(records);
      },
      readHead: (n) => spool.readHead(n),
      ack: (seqs) => spool.ack(seqs),
      close: () => spool.close(),
    };
    const clock = new FakeClock();
    const p = new Publisher(
      { send: bus.send, spool: flaky, deadLetter: fileDeadLetter(join(dir, 'dead.jsonl')), clock, random: () => 0.5 },
      { ...TEST_SETTINGS, maxAttempts: 1, busName: 'gpu-reflex' },
    );
    const tick = async (ms: number) => {
      await p.whenIdle();
      clock.advance(ms);
      await p.whenIdle();
    };
    for (let i = 0; i < 3; i++) p.publish(testEvent(i));
    await tick(200); // send fails -> spill fails (disk full)
    expect(failAppends).toBe(0);
    expect(p.status()).toMatchObject({ spooledEvents: 0, queued: 3 });
    p.publish(testEvent(3));
    await tick(5_000); // retry: the disk has room again
    expect(p.status()).toMatchObject({ spooledEvents: 4, queued: 0 });
    bus.down = null;
    await tick(5_000);
    expect(bus.acceptedIds()).toEqual(ids(4));
  });
});
