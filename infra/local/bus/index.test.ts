import { afterEach, describe, expect, it } from 'vitest';
import { AwsRequestError, ManualClock, startLocalBus, type LocalBus } from './index.ts';

let bus: LocalBus | undefined;
afterEach(async () => bus?.close());

describe('startLocalBus', () => {
  it('publishes in process through the same checks as HTTP and records accepted events', async () => {
    bus = await startLocalBus({ busName: 'gpu-reflex', clock: new ManualClock(Date.UTC(2026, 4, 1)) });
    const out = await bus.put([
      { Source: 'sim', DetailType: 'Tick', Detail: '{"n":1}', EventBusName: 'gpu-reflex' },
      { Source: 'sim', DetailType: 'Tick', Detail: '1' },
    ]);
    expect(out.FailedEntryCount).toBe(1);
    expect(bus.events).toMatchObject([{ source: 'sim', time: '2026-05-01T00:00:00Z', detail: { n: 1 } }]);
    await expect(bus.put([{ Source: 's', DetailType: 'd', Detail: '{}', EventBusName: 'other' }])).rejects.toBeInstanceOf(
      AwsRequestError,
    );
  });
});
