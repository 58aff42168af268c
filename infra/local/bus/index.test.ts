import { afterEach, describe, expect, it, vi } from 'vitest';
import { calls } from './fixtures/handlers/record.ts';
import { AwsRequestError, ManualClock, startLocalBus, type LocalBus } from './index.ts';

const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
let bus: LocalBus | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
  vi.useRealTimers();
});

describe('startLocalBus', () => {
  it('publishes in process through the same checks as HTTP and records accepted events', async () => {
    bus = await startLocalBus({ busName: 'gpu-reflex', clock: new ManualClock(Date.UTC(2026, 4, 1)) });
    const out = await bus.put([
      { Source: 'sim', DetailType: 'Tick', Detail: '{"n":1}', EventBusName: 'gpu-reflex' },
      { Source: 'sim', DetailType: 'Tick', Detail: '1' },
    ]);
    expect(out.FailedEntryCount).toBe(1);
    expect(bus.events).toMatchObject([{ source: 'sim', time: '2026-05-01T00:00:00Z', detail: { n: 1 } }]);
    expect(bus.httpUrl).toBeUndefined();
    await expect(
      bus.put([{ Source: 's', DetailType: 'd', Detail: '{}', EventBusName: 'other' }]),
    ).rejects.toBeInstanceOf(AwsRequestError);
  });

  it('applies setDown and failRequests to the in-process path too', async () => {
    bus = await startLocalBus({ clock: new ManualClock() });
    const e = [{ Source: 's', DetailType: 'd', Detail: '{}' }];
    bus.setDown(true);
    await expect(bus.put(e)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    bus.setDown(false);
    bus.failRequests(1, 503);
    await expect(bus.put(e)).rejects.toMatchObject({ code: 'ServiceUnavailable', status: 503 });
    await expect(bus.put(e)).resolves.toMatchObject({ FailedEntryCount: 0 });
    expect(bus.events).toHaveLength(1);
  });

  it('refuses advance() without a ManualClock, or backwards', async () => {
    bus = await startLocalBus({});
    await expect(bus.advance(1000)).rejects.toThrow(/needs a ManualClock/);
    await bus.close();
    bus = await startLocalBus({ clock: new ManualClock() });
    await expect(bus.advance(-1)).rejects.toThrow(RangeError);
  });

  it('unsubscribes a listener with the function on() returns', async () => {
    bus = await startLocalBus({ serverlessYml: FIXTURE, clock: new ManualClock(Date.UTC(2026, 0, 1)) });
    const seen: string[] = [];
    const off = bus.on('scheduled', ({ rule }) => seen.push(rule));
    await bus.advance(5 * 60_000);
    off();
    await bus.advance(5 * 60_000);
    expect(seen).toEqual(['fixture-test-ticker-schedule-4']);
  });

  it("steps any clock with advance(ms), such as the simulated cluster's, through schedules", async () => {
    let t = Date.UTC(2026, 0, 3);
    const moves: number[] = [];
    const shared = { now: () => t, advance: async (ms: number) => void moves.push((t += ms)) };
    calls().length = 0;
    bus = await startLocalBus({ serverlessYml: FIXTURE, clock: shared });
    await bus.advance(11 * 60_000);
    expect(calls().map((c) => (c.event as { time?: string }).time)).toEqual([
      '2026-01-03T00:05:00Z',
      '2026-01-03T00:10:00Z',
    ]);
    expect(moves.map((m) => new Date(m).toISOString().slice(11, 16))).toEqual(['00:05', '00:10', '00:11']);
  });

  it('fires what came due when the caller moved the clock itself and then drains', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 3));
    calls().length = 0;
    bus = await startLocalBus({ serverlessYml: FIXTURE, clock });
    clock.set(Date.UTC(2026, 0, 3, 0, 7));
    await bus.drain();
    expect(calls()).toHaveLength(1);
  });

  it('runs schedules on real time when the clock is not a ManualClock', async () => {
    vi.useFakeTimers({ now: Date.UTC(2026, 0, 3, 0, 0, 0), toFake: ['Date', 'setInterval', 'clearInterval'] });
    calls().length = 0;
    bus = await startLocalBus({ serverlessYml: FIXTURE });
    await vi.advanceTimersByTimeAsync(5 * 60_000 + 200);
    await bus.drain();
    expect(calls().map((c) => (c.event as { time?: string }).time)).toEqual(['2026-01-03T00:05:00Z']);
  });
});
