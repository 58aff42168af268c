import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../../events/json-depth.ts';
import { calls } from './fixtures/handlers/record.ts';
import { ManualClock, startLocalBus, type LocalBus } from './index.ts';

/**
 * Deeply nested details used to pin the bus: the matcher copied each leaf's array path at every
 * level (depth² work), so a 120 KB Detail of 60,000 nested arrays ran for minutes. These go
 * through the real SDK to a bus whose rules match, so the whole path (parse, match, deliver) runs.
 */
const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
let bus: LocalBus;

beforeEach(async () => {
  calls().length = 0;
  bus = await startLocalBus({ serverlessYml: FIXTURE, clock: new ManualClock(Date.parse('2026-01-02T11:50:00Z')) });
});
afterEach(async () => bus.close());

const sdk = () =>
  new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
/** A Detail whose `xid` field holds `levels` nested arrays around 79: depth levels + 1. */
const nested = (levels: number) => `{"xid":${'['.repeat(levels)}79${']'.repeat(levels)}}`;
const xidEntry = (detail: string) => ({
  Source: 'gpu-reflex.node-agent',
  DetailType: 'GPU XID Error',
  Detail: detail,
  EventBusName: 'fixture-bus',
});

describe('a deeply nested Detail', () => {
  it('60,000 nested arrays are refused as MalformedDetail at once, and the bus keeps serving', async () => {
    const detail = nested(60_000);
    expect(detail.length).toBeGreaterThan(120_000);
    const started = performance.now();
    const out = await sdk().send(new PutEventsCommand({ Entries: [xidEntry(detail), xidEntry('{"xid":79}')] }));
    // Generous for a loaded 2-core machine; the depth² walk took minutes.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(out.FailedEntryCount).toBe(1);
    expect(out.Entries?.[0]).toEqual({
      ErrorCode: 'MalformedDetail',
      ErrorMessage: `Detail is malformed: nested more than ${MAX_JSON_DEPTH} levels deep.`,
    });
    expect(out.Entries?.[1]?.EventId).toBeDefined();

    const after = await sdk().send(new PutEventsCommand({ Entries: [xidEntry('{"xid":48}')] }));
    await bus.drain();
    expect(after.FailedEntryCount).toBe(0);
    expect(
      calls()
        .filter((c) => c.fn === 'handler')
        .map((c) => (c.event as { detail: unknown }).detail),
    ).toEqual([{ xid: 79 }, { xid: 48 }]);
  });

  it(`${MAX_JSON_DEPTH} levels are accepted, matched and delivered; one more is refused`, async () => {
    const out = await sdk().send(
      new PutEventsCommand({ Entries: [xidEntry(nested(MAX_JSON_DEPTH - 1)), xidEntry(nested(MAX_JSON_DEPTH))] }),
    );
    await bus.drain();
    expect(out.Entries?.map((e) => e.ErrorCode ?? 'ok')).toEqual(['ok', 'MalformedDetail']);
    expect(calls().filter((c) => c.fn === 'handler')).toHaveLength(1);
  });
});
