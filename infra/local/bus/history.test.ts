import { describe, expect, it } from 'vitest';
import { Ring } from './history.ts';
import { ManualClock, startLocalBus } from './index.ts';

describe('Ring', () => {
  it.each([
    [0, [1, 2, 3], [], 3],
    [1, [1, 2, 3], [3], 2],
    [3, [1, 2], [1, 2], 0],
    [3, [1, 2, 3, 4, 5, 6, 7], [5, 6, 7], 4],
  ])('capacity %i after pushing %j keeps %j and has dropped %i', (capacity, pushed, kept, dropped) => {
    const r = new Ring<number>(capacity);
    for (const x of pushed) r.push(x);
    expect(r.toArray()).toEqual(kept);
    expect(r.dropped).toBe(dropped);
    expect(r.total).toBe(pushed.length);
  });

  it.each([-1, 1.5, NaN])('refuses a capacity of %s', (n) => {
    expect(() => new Ring(n)).toThrow(`history size must be a whole number >= 0, got ${n}`);
  });
});

describe('the bus history', () => {
  it('keeps the last historySize events and dead letters and counts every one', async () => {
    const bus = await startLocalBus({
      historySize: 3,
      clock: new ManualClock(0),
      serverlessYml: new URL('./fixtures/serverless.yml', import.meta.url).pathname,
    });
    try {
      for (let i = 0; i < 5; i++) {
        await bus.put([
          { Source: 's', DetailType: 'A', Detail: JSON.stringify({ i }) },
          // the fixture's `ghost` rule has no handler: each of these is dead-lettered at once
          { Source: 'fixture.ghost', DetailType: 'B', Detail: JSON.stringify({ i }), EventBusName: 'fixture-bus' },
        ]);
      }
      await bus.drain();
      expect(bus.events.map((e) => [e['detail-type'], e.detail.i])).toEqual([
        ['B', 3],
        ['A', 4],
        ['B', 4],
      ]);
      expect(bus.counts).toEqual({ events: 10, eventsByDetailType: { A: 5, B: 5 }, deadLetters: 5 });
      expect(bus.deadLetters.map((d) => (d.event as { detail: { i: number } }).detail.i)).toEqual([2, 3, 4]);
    } finally {
      await bus.close();
    }
  });

  it('refuses a bad historySize before listening', async () => {
    await expect(startLocalBus({ historySize: -1 })).rejects.toThrow(
      'history size must be a whole number >= 0, got -1',
    );
  });
});
