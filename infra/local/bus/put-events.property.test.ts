import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AwsRequestError } from './errors.ts';
import { entrySize, MAX_REQUEST_BYTES, PutEventsIngest } from './put-events.ts';

const ingest = () =>
  new PutEventsIngest({ account: '000000000000', region: 'us-east-1', busNames: () => ['b'], now: () => 0 }, () => {});

const entry = fc.record(
  {
    Source: fc.oneof(fc.string(), fc.constant('aws.x'), fc.integer()),
    DetailType: fc.oneof(fc.string({ maxLength: 200 }), fc.constant(null)),
    Detail: fc.oneof(fc.json(), fc.string(), fc.constant('{"a":1}')),
    EventBusName: fc.constantFrom('b', 'default', 'arn:aws:events:us-east-1:0:event-bus/b', undefined),
    Resources: fc.oneof(fc.array(fc.string(), { maxLength: 3 }), fc.constant([1])),
    Time: fc.oneof(fc.integer(), fc.double(), fc.constant(1e300), fc.string(), fc.constant(undefined)),
  },
  { requiredKeys: [] },
);

describe('PutEvents ingest on arbitrary input', () => {
  it('answers every request with an AWS error or one result per entry, never anything else', () => {
    fc.assert(
      fc.property(fc.oneof(fc.record({ Entries: fc.array(entry, { maxLength: 12 }) }), fc.anything()), (body) => {
        let out;
        try {
          out = ingest().put(body);
        } catch (err) {
          expect(err).toBeInstanceOf(AwsRequestError);
          return;
        }
        const entries = (body as { Entries: unknown[] }).Entries;
        expect(out.Entries).toHaveLength(entries.length);
        expect(out.FailedEntryCount).toBe(out.Entries.filter((e) => 'ErrorCode' in e).length);
        for (const e of out.Entries) {
          if ('EventId' in e) expect(e.EventId).toMatch(/^[0-9a-f-]{36}$/);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('accepts an entry only when its Detail is a JSON object and its required fields are strings', () => {
    fc.assert(
      fc.property(entry, (e) => {
        const i = ingest();
        let out;
        try {
          out = i.put({ Entries: [e] });
        } catch {
          return;
        }
        if ('EventId' in out.Entries[0]!) {
          expect(typeof e.Source).toBe('string');
          expect(typeof e.DetailType).toBe('string');
          const detail: unknown = JSON.parse(e.Detail as string);
          expect(typeof detail === 'object' && detail !== null && !Array.isArray(detail)).toBe(true);
          expect(entrySize(e as never)).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
          expect(i.events).toHaveLength(1);
        } else expect(i.events).toHaveLength(0);
      }),
      { numRuns: 500 },
    );
  });
});
