import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock, TimerQueue } from './clock.ts';
import type { DeadLetter } from './delivery-events.ts';
import { BACKOFF_CAP_MS, Router, backoffMs, mulberry32 } from './router.ts';
import type { EventRule, FunctionDef } from './rules.ts';

const fixtureFn = (exportName: string): FunctionDef => ({
  key: exportName,
  name: `fixture-${exportName}`,
  modulePath: new URL('./fixtures/handlers/record', import.meta.url).pathname,
  exportPath: [exportName],
  timeoutSeconds: 6,
});

function rule(over: Partial<EventRule> = {}): EventRule {
  return {
    name: 'r',
    busName: 'b',
    pattern: { source: ['fixture.flaky'] },
    fn: fixtureFn('flaky'),
    input: { kind: 'event' },
    retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeSeconds: 86_400 },
    ...over,
  };
}

const envelope = (id: string, failures: number) => ({
  version: '0' as const,
  id,
  'detail-type': 'Flaky',
  source: 'fixture.flaky',
  account: '0',
  time: '2026-01-01T00:00:00Z',
  region: 'us-east-1',
  resources: [],
  detail: { failures },
});

/** Steps the clock through due timers, as startLocalBus's advance does. */
async function runUntilQuiet(router: Router, timers: TimerQueue, clock: ManualClock): Promise<void> {
  await router.drain();
  for (let next = timers.nextAt(); next !== undefined; next = timers.nextAt()) {
    clock.set(next);
    timers.runDue(clock.now());
    await router.drain();
  }
}

describe('backoff', () => {
  it.each([
    [1, 500, 1_000],
    [2, 1_000, 2_000],
    [5, 8_000, 16_000],
    [9, 128_000, 256_000],
    [10, BACKOFF_CAP_MS / 2, BACKOFF_CAP_MS],
    [185, BACKOFF_CAP_MS / 2, BACKOFF_CAP_MS],
  ])('retry %i waits between %i and %i ms', (retry, lo, hi) => {
    expect(backoffMs(retry, () => 0)).toBe(lo);
    expect(backoffMs(retry, () => 0.999999)).toBeCloseTo(hi, -1);
  });
});

describe('Router', () => {
  it('dead-letters when the next retry would pass maximumEventAge', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1));
    const timers = new TimerQueue();
    const router = new Router([rule({ retryPolicy: { maximumRetryAttempts: 185, maximumEventAgeSeconds: 60 } })], {
      clock,
      timers,
      region: 'r',
      account: 'a',
    });
    const dead: DeadLetter[] = [];
    router.on('dead-lettered', (d) => dead.push(d));
    const start = clock.now();
    router.route({ busName: 'b', envelope: envelope('e1', 1000) });
    await runUntilQuiet(router, timers, clock);
    expect(dead).toHaveLength(1);
    expect(dead[0]?.reason).toBe('maximum-event-age');
    expect(dead[0]?.deadLetterQueueArn).toBeNull();
    // 1+2+4+8+16 s ceilings: at most 31 s elapsed before the 6th attempt, and a 7th would pass 60 s.
    expect(clock.now() - start).toBeLessThanOrEqual(60_000);
    expect(dead[0]!.attempts).toBeGreaterThanOrEqual(5);
  });

  it('never retries when maximumRetryAttempts is 0', async () => {
    const clock = new ManualClock();
    const timers = new TimerQueue();
    const router = new Router([rule({ retryPolicy: { maximumRetryAttempts: 0, maximumEventAgeSeconds: 60 } })], {
      clock,
      timers,
      region: 'r',
      account: 'a',
    });
    router.route({ busName: 'b', envelope: envelope('no-retries', 1) });
    await router.drain();
    expect(timers.size).toBe(0);
    expect(router.deadLetters.map((d) => [d.reason, d.attempts])).toEqual([['retries-exhausted', 1]]);
  });

  it('routes only events on the rule bus that match its pattern', async () => {
    const clock = new ManualClock();
    const router = new Router([rule({ fn: fixtureFn('handler') })], {
      clock,
      timers: new TimerQueue(),
      region: 'r',
      account: 'a',
    });
    const seen: string[] = [];
    router.on('delivered', ({ event }) => seen.push((event as { id: string }).id));
    router.route({ busName: 'b', envelope: envelope('match', 0) });
    router.route({ busName: 'other', envelope: envelope('wrong-bus', 0) });
    router.route({ busName: 'b', envelope: { ...envelope('wrong-source', 0), source: 'else' } });
    await router.drain();
    expect(seen).toEqual(['match']);
  });

  it('gives each delivery its own copy, so a handler cannot change what is retried', async () => {
    const clock = new ManualClock();
    const router = new Router([rule({ fn: fixtureFn('handler') })], {
      clock,
      timers: new TimerQueue(),
      region: 'r',
      account: 'a',
    });
    const ev = envelope('e', 0);
    router.on('delivered', ({ event }) => ((event as { detail: { failures: number } }).detail.failures = 42));
    router.route({ busName: 'b', envelope: ev });
    await router.drain();
    expect(ev.detail.failures).toBe(0);
  });

  it('refuses at startup a pattern EventBridge would refuse, naming the rule', () => {
    expect(
      () =>
        new Router([rule({ name: 'bad-rule', pattern: { source: 'not-an-array' } })], {
          clock: new ManualClock(),
          timers: new TimerQueue(),
          region: 'r',
          account: 'a',
        }),
    ).toThrow(/rule bad-rule/);
  });

  it('jitters reproducibly for a given seed', () => {
    const a = mulberry32(7);
    const b = mulberry32(7);
    const xs = Array.from({ length: 5 }, () => backoffMs(3, a));
    expect(xs).toEqual(Array.from({ length: 5 }, () => backoffMs(3, b)));
    expect(new Set(xs).size).toBeGreaterThan(1);
  });
});

describe('Router listeners', () => {
  it('a throwing listener neither retries the delivery nor stops the queue; drain() reports it', async () => {
    const clock = new ManualClock();
    const timers = new TimerQueue();
    const router = new Router([rule({ fn: fixtureFn('handler') })], { clock, timers, region: 'r', account: 'a' });
    const seen: string[] = [];
    router.on('delivered', ({ event }) => {
      seen.push((event as { id: string }).id);
      throw new Error('listener broke');
    });
    router.route({ busName: 'b', envelope: envelope('one', 0) });
    router.route({ busName: 'b', envelope: envelope('two', 0) });
    await expect(router.drain()).rejects.toThrow('listener broke');
    expect(seen).toEqual(['one', 'two']);
    expect(timers.size).toBe(0);
    await expect(router.drain()).resolves.toBeUndefined();
  });

  it('delivers an event routed while the previous delivery is finishing', async () => {
    const clock = new ManualClock();
    const router = new Router([rule({ fn: fixtureFn('handler') })], {
      clock,
      timers: new TimerQueue(),
      region: 'r',
      account: 'a',
    });
    const seen: string[] = [];
    router.on('delivered', ({ event }) => {
      const id = (event as { id: string }).id;
      seen.push(id);
      // Publish from inside delivery, as a handler publishing its action does.
      if (id === 'first') queueMicrotask(() => router.route({ busName: 'b', envelope: envelope('second', 0) }));
    });
    router.route({ busName: 'b', envelope: envelope('first', 0) });
    await router.drain();
    await Promise.resolve();
    await router.drain();
    expect(seen).toEqual(['first', 'second']);
  });
});

describe('Router dead-letter file', () => {
  it('creates the folder of the dead-letter file', async () => {
    const dlqPath = join(mkdtempSync(join(tmpdir(), 'dlq-')), 'nested', 'dir', 'dlq.jsonl');
    const router = new Router([rule({ fn: { ...fixtureFn('handler'), modulePath: '/nowhere/handler' } })], {
      clock: new ManualClock(),
      timers: new TimerQueue(),
      region: 'r',
      account: 'a',
      dlqPath,
    });
    router.route({ busName: 'b', envelope: envelope('lost', 0) });
    await router.drain();
    expect(JSON.parse(readFileSync(dlqPath, 'utf8'))).toMatchObject({ reason: 'not-retryable', event: { id: 'lost' } });
  });
});

describe('Router concurrency', () => {
  const overlapState = () =>
    ((globalThis as { __localBusOverlap?: { now: number; max: number } }).__localBusOverlap ??= { now: 0, max: 0 });

  it.each([
    [undefined, 1],
    [1, 1],
    [3, 3],
    [50, 7],
  ])(
    'with concurrency %s runs at most %i deliveries at once and delivers all of them',
    async (concurrency, expectedMax) => {
      const s = overlapState();
      s.now = 0;
      s.max = 0;
      const router = new Router([rule({ fn: fixtureFn('overlap') })], {
        clock: new ManualClock(),
        timers: new TimerQueue(),
        region: 'r',
        account: 'a',
        ...(concurrency ? { concurrency } : {}),
      });
      const delivered: string[] = [];
      router.on('delivered', ({ event }) => delivered.push((event as { id: string }).id));
      for (let i = 0; i < 7; i++) router.route({ busName: 'b', envelope: envelope(`e${i}`, 0) });
      await router.drain();
      expect(s.max).toBe(expectedMax);
      expect(delivered.sort()).toEqual(['e0', 'e1', 'e2', 'e3', 'e4', 'e5', 'e6']);
    },
  );

  it('refuses a concurrency that is not a positive integer', () => {
    expect(
      () =>
        new Router([], {
          clock: new ManualClock(),
          timers: new TimerQueue(),
          region: 'r',
          account: 'a',
          concurrency: 0,
        }),
    ).toThrow(/concurrency must be a positive integer/);
  });
});
