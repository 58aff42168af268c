import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FakeClock } from '../clock.ts';
import { EventTooLargeError } from './batching.ts';
import { fileDeadLetter } from './dead-letter.ts';
import { Publisher } from './publisher.ts';
import { Spool } from './spool.ts';
import { MalformedEventError, type OutgoingEvent, type PutEventsSender } from './types.ts';
import { FakePutEvents, httpError, networkError } from './fake-put-events.ts';
import { PUBLISHER_METRIC_NAMES as M } from './publisher-metrics.ts';
import { makeHarness, TEST_SETTINGS, testEvent } from './test-harness.ts';

/** A PutEvents that never answers; `called` resolves once a call was made. */
function hangingSender(): { send: PutEventsSender; called: Promise<void> } {
  let done = () => {};
  const called = new Promise<void>((resolve) => (done = resolve));
  return { send: () => (done(), new Promise(() => {})), called };
}

const ids = (n: number, priority: 'critical' | 'normal' | 'bulk' = 'critical', from = 0) =>
  Array.from({ length: n }, (_, i) => `${priority}-${from + i}`);

describe('batching', () => {
  it('sends ten queued events in one call without waiting for the window', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    for (let i = 0; i < 10; i++) h.publisher.publish(testEvent(i));
    await h.tick();
    expect(bus.calls.map((c) => c.length)).toEqual([10]);
    expect(bus.acceptedIds()).toEqual(ids(10));
  });

  it('sends events published while the pump was busy, without another event to wake it', async () => {
    const bus = new FakePutEvents();
    const dir = await mkdtemp(join(tmpdir(), 'gpu-reflex-publisher-'));
    const { spool } = await Spool.open({ path: join(dir, 'spool.jsonl'), maxBytes: 1 << 20 });
    const clock = new FakeClock();
    const p = new Publisher(
      { send: bus.send, spool, deadLetter: fileDeadLetter(join(dir, 'dead.jsonl')), clock, random: () => 0.5 },
      { ...TEST_SETTINGS, busName: 'gpu-reflex' },
    );
    // The new pump has looked at its (empty) inbox and not parked yet: these events arrive in
    // that gap and poke nobody.
    p.publish(testEvent(0));
    p.publish(testEvent(1));
    await p.whenIdle();
    clock.advance(200);
    await p.whenIdle();
    expect(bus.acceptedIds()).toEqual(ids(2));
  });

  it('holds a partial batch for batchDelayMs, then sends it', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    h.publisher.publish(testEvent(0));
    h.publisher.publish(testEvent(1));
    await h.tick(199);
    expect(bus.calls).toHaveLength(0);
    await h.tick(1);
    expect(bus.calls.map((c) => c.length)).toEqual([2]);
  });

  it('sends a critical event at once when told to, taking the queued bulk events with it', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send, { settings: { criticalImmediately: true } });
    h.publisher.publish(testEvent(0, 'bulk'));
    await h.tick(50);
    expect(bus.calls).toHaveLength(0);
    h.publisher.publish(testEvent(1, 'critical'));
    await h.tick(0);
    expect(bus.calls.map((c) => c.length)).toEqual([2]);
  });

  it('writes an XID ahead: killed while its first send hangs, the restarted publisher delivers it once', async () => {
    const bus = new FakePutEvents();
    // The bus hangs: the call never answers, as when the process is killed mid-call.
    const hung = hangingSender();
    const h = await makeHarness(hung.send, { settings: { criticalImmediately: true, writeAheadCritical: true } });
    h.publisher.publish(testEvent(0, 'bulk'));
    h.publisher.publish(testEvent(1, 'critical'));
    await hung.called;
    // SIGKILL now, the first call in flight: whatever was only in memory is gone.
    await h.restart(bus.send);
    await h.tick(0);
    // The XID, once; the bulk event was only in memory (bulk keeps the batch window's risk).
    expect(bus.acceptedIds()).toEqual(['critical-1']);
    // Acknowledged: nothing is replayed by a third start.
    await h.restart(bus.send);
    await h.tick(0);
    expect(bus.acceptedIds()).toEqual(['critical-1']);
  });

  it('without write-ahead, the same kill loses the XID (what the setting is for)', async () => {
    const bus = new FakePutEvents();
    const hung = hangingSender();
    const h = await makeHarness(hung.send, { settings: { criticalImmediately: true, writeAheadCritical: false } });
    h.publisher.publish(testEvent(1, 'critical'));
    await hung.called;
    await h.restart(bus.send);
    await h.tick(0);
    expect(bus.acceptedIds()).toEqual([]);
  });

  it('splits calls at 256 KB of entry size', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    // ~100 KB each: two fit in a call, three do not.
    for (let i = 0; i < 5; i++) h.publisher.publish(testEvent(i, 'normal', { blob: 'x'.repeat(100_000) }));
    await h.tick(200);
    expect(bus.calls.map((c) => c.length)).toEqual([2, 2, 1]);
    expect(bus.acceptedIds()).toEqual(ids(5, 'normal'));
  });

  it('rejects an event larger than 256 KB locally, counts it, and never sends it', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    const result = h.publisher.publish(testEvent(0, 'normal', { blob: 'x'.repeat(262_144) }));
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toBeInstanceOf(EventTooLargeError);
    expect(!result.ok && result.error.message).toMatch(/normal-0 .* over the PutEvents limit of 262144/);
    await h.tick(1_000);
    expect(bus.calls).toHaveLength(0);
    expect(h.metrics.render()).toContain(`${M.failed} 1`);
  });

  it.each([
    ['time', { time: new Date(Number.NaN) }],
    ['detail.eventId', { detail: { eventId: '' } }],
    ['priority', { priority: 'urgent' }],
    ['detail', { detail: { eventId: 'x', big: 10n } }],
  ])('refuses an event with a bad %s, naming it, and sends nothing', async (field, patch) => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    const result = h.publisher.publish({ ...testEvent(0), ...patch } as unknown as OutgoingEvent);
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toBeInstanceOf(MalformedEventError);
    expect(!result.ok && result.error.message).toContain(`${field}:`);
    await h.tick(1_000);
    expect(bus.calls).toHaveLength(0);
  });

  it('sends the detail exactly as the producer built it, eventId untouched', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    const e = testEvent(7, 'critical', { xid: 79, nested: { a: [1, 2] } });
    h.publisher.publish(e);
    await h.tick(200);
    expect(bus.accepted[0]).toMatchObject({
      Source: e.source,
      DetailType: e.detailType,
      Detail: JSON.stringify(e.detail),
      Time: e.time,
      Resources: e.resources,
      EventBusName: 'gpu-reflex',
    });
  });
});

describe('partial failures', () => {
  it('retries only the failed entries, after a jittered backoff', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.failEntries('ThrottlingException', (e) => e.Detail.includes('"critical-1"'));
    bus.failEntries('InternalFailure', (e) => e.Detail.includes('"critical-3"'));
    for (let i = 0; i < 5; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    expect(bus.calls).toHaveLength(1);
    // Newer events wait behind the retry: the retry call carries the failed entries alone.
    h.publisher.publish(testEvent(5));
    // attempt 1: random 0.5 * min(cap 1000, base 100) = 50 ms
    await h.tick(49);
    expect(bus.calls).toHaveLength(1);
    await h.tick(1);
    await h.tick(200);
    const sent = bus.calls.map((c) => c.map((e) => (JSON.parse(e.Detail) as { eventId: string }).eventId));
    expect(sent).toEqual([ids(5), ['critical-1', 'critical-3'], ['critical-5']]);
    expect(bus.acceptedIds()).toEqual([
      'critical-0',
      'critical-2',
      'critical-4',
      'critical-1',
      'critical-3',
      'critical-5',
    ]);
    expect(h.metrics.render()).toContain(`${M.published}{detail_type="GPU XID Error"} 6`);
  });

  it.each(['MalformedDetail', 'InvalidArgument', 'NotAuthorizedForSourceException'])(
    'dead-letters an entry failing with %s instead of retrying it',
    async (code) => {
      const bus = new FakePutEvents();
      const h = await makeHarness(bus.send);
      bus.failEntries(code, (e) => e.Detail.includes('"critical-1"'), 100);
      for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
      await h.tick(200);
      await h.tick(60_000);
      expect(bus.calls).toHaveLength(1);
      expect(bus.acceptedIds()).toEqual(['critical-0', 'critical-2']);
      const dead = await h.deadLetterText();
      expect(dead.trim().split('\n')).toHaveLength(1);
      expect(dead).toContain(`"code":"${code}"`);
      expect(dead).toContain('critical-1');
      expect(h.metrics.render()).toContain(`${M.failed} 1`);
      expect(h.publisher.status().spooledEvents).toBe(0);
    },
  );
});

describe('bus unreachable', () => {
  it.each([
    ['a network error', networkError()],
    ['HTTP 503', httpError(503)],
    ['throttling', httpError(429)],
  ])('spools after maxAttempts on %s and replays in order, exactly once, when it is back', async (_name, error) => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.down = error;
    for (let i = 0; i < 4; i++) h.publisher.publish(testEvent(i));
    await h.tick(200); // attempt 1
    await h.tick(1_000); // attempt 2 (backoff <= 100)
    await h.tick(1_000); // attempt 3 -> spool
    expect(bus.calls).toHaveLength(3);
    expect(h.publisher.status()).toMatchObject({ spooledEvents: 4, busReachable: false, queued: 0 });
    // New events go behind the spooled ones, straight to disk.
    for (let i = 4; i < 7; i++) h.publisher.publish(testEvent(i));
    await h.tick();
    expect(h.publisher.status().spooledEvents).toBe(7);
    // One probe per interval while down, jittered to 50-100% of it (random 0.5 -> 3750 ms).
    await h.tick(3_749);
    expect(bus.calls).toHaveLength(3);
    await h.tick(1);
    expect(bus.calls).toHaveLength(4);
    await h.tick(3_749);
    expect(bus.calls).toHaveLength(4);
    bus.down = null;
    await h.tick(5_000);
    expect(bus.acceptedIds()).toEqual(ids(7));
    expect(h.publisher.status()).toMatchObject({ spooledEvents: 0, busReachable: true, spoolBytes: 0 });
    // Back to the memory path: the next event is batched as usual.
    h.publisher.publish(testEvent(7));
    await h.tick(200);
    expect(bus.acceptedIds()).toEqual(ids(8));
    expect(h.metrics.render()).toContain(`${M.spooled} 7`);
  });

  it('recovers from a short outage by backoff alone, without spooling', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.failCalls(2, httpError(500));
    for (let i = 0; i < 3; i++) h.publisher.publish(testEvent(i));
    await h.tick(200);
    await h.tick(50);
    await h.tick(100);
    expect(bus.calls).toHaveLength(3);
    expect(bus.acceptedIds()).toEqual(ids(3));
    expect(h.metrics.render()).toContain(`${M.spooled} 0`);
  });

  it('dead-letters a batch the bus rejects as invalid after maxAttempts', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.failCalls(3, httpError(400, 'ValidationException'));
    h.publisher.publish(testEvent(0));
    await h.tick(200);
    await h.tick(1_000);
    await h.tick(1_000);
    expect(await h.deadLetterText()).toContain('"code":"ValidationException"');
    expect(h.publisher.status().spooledEvents).toBe(0);
  });
});

describe('restart', () => {
  it('replays the spool of a killed agent before any new event, losing nothing', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.down = networkError();
    for (let i = 0; i < 12; i++) h.publisher.publish(testEvent(i));
    await h.tick();
    await h.tick(1_000);
    await h.tick(1_000);
    expect(h.publisher.status().spooledEvents).toBe(12);
    bus.down = null;
    const p = await h.restart();
    p.publish(testEvent(12));
    await h.tick(200);
    expect(bus.acceptedIds()).toEqual(ids(13));
    expect(new Set(bus.acceptedIds()).size).toBe(13);
  });

  it('does not re-send a replayed batch that was acknowledged before the kill', async () => {
    const bus = new FakePutEvents();
    const h = await makeHarness(bus.send);
    bus.down = networkError();
    for (let i = 0; i < 15; i++) h.publisher.publish(testEvent(i));
    await h.tick();
    await h.tick(1_000);
    await h.tick(1_000);
    bus.down = null;
    // The restarted agent replays batch 1 (10 events), then is killed while batch 2 is in flight.
    let calls = 0;
    let secondStarted: () => void = () => {};
    const started = new Promise<void>((r) => (secondStarted = r));
    const send: typeof bus.send = async (entries, o) => {
      if (++calls === 2) {
        secondStarted();
        return new Promise(() => {});
      }
      return bus.send(entries, o);
    };
    await h.restart(send, { waitIdle: false });
    await started;
    expect(bus.acceptedIds()).toEqual(ids(10));
    await h.restart();
    expect(bus.acceptedIds()).toEqual(ids(15));
  });
});
