import { EventBridgeClient, PutEventsCommand, type PutEventsRequestEntry } from '@aws-sdk/client-eventbridge';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PutEventsIngest, type AcceptedEvent } from './put-events.ts';
import { startPutEventsServer, type PutEventsServer } from './server.ts';

const T0 = Date.UTC(2026, 0, 1, 0, 0, 0);
let server: PutEventsServer;
let ingest: PutEventsIngest;
let routed: AcceptedEvent[];

beforeEach(async () => {
  routed = [];
  let n = 0;
  ingest = new PutEventsIngest(
    {
      account: '000000000000',
      region: 'us-east-1',
      busNames: () => ['gpu-reflex'],
      now: () => T0,
      newId: () => `id-${++n}`,
    },
    (e) => routed.push(e),
  );
  server = await startPutEventsServer(ingest);
});
afterEach(async () => server.close());

interface RetryToken {
  getRetryCount(): number;
  getRetryDelay(): number;
}
/**
 * The SDK's retry contract (RetryStrategyV2) with no backoff delay, so a test that exercises SDK
 * retries never waits on a real timer. Client errors are not retried, as in the standard strategy.
 */
function immediateRetries(maxAttempts: number) {
  const token = (n: number): RetryToken => ({ getRetryCount: () => n, getRetryDelay: () => 0 });
  return {
    acquireInitialRetryToken: async () => token(0),
    refreshRetryTokenForRetry: async (t: RetryToken, info: { error?: unknown; errorType: string }) => {
      if (info.errorType === 'CLIENT_ERROR' || t.getRetryCount() + 1 >= maxAttempts) throw info.error;
      return token(t.getRetryCount() + 1);
    },
    recordSuccess: () => {},
  };
}

function client(extra: { maxAttempts?: number } = {}): EventBridgeClient {
  const maxAttempts = extra.maxAttempts ?? 1;
  return new EventBridgeClient({
    endpoint: server.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDLOCAL', secretAccessKey: 'local-secret' },
    maxAttempts,
    retryStrategy: immediateRetries(maxAttempts),
  });
}

const entry = (over: Partial<PutEventsRequestEntry> = {}): PutEventsRequestEntry => ({
  Source: 'gpu-reflex.node-agent',
  DetailType: 'GPU XID Error',
  Detail: JSON.stringify({ node: 'gpu-node-1', xid: 79 }),
  EventBusName: 'gpu-reflex',
  ...over,
});

describe('PutEvents over the wire with the real SDK', () => {
  it('accepts an entry and builds the envelope EventBridge builds', async () => {
    const out = await client().send(
      new PutEventsCommand({ Entries: [entry({ Time: new Date('2026-03-04T05:06:07.890Z'), Resources: ['arn:x'] })] }),
    );
    expect(out.FailedEntryCount).toBe(0);
    expect(out.Entries).toEqual([{ EventId: 'id-1' }]);
    expect(routed).toEqual([
      {
        busName: 'gpu-reflex',
        envelope: {
          version: '0',
          id: 'id-1',
          'detail-type': 'GPU XID Error',
          source: 'gpu-reflex.node-agent',
          account: '000000000000',
          time: '2026-03-04T05:06:07Z',
          region: 'us-east-1',
          resources: ['arn:x'],
          detail: { node: 'gpu-node-1', xid: 79 },
        },
      },
    ]);
  });

  it('stamps the injected clock time when the entry has no Time', async () => {
    await client().send(new PutEventsCommand({ Entries: [entry()] }));
    expect(ingest.events[0]?.envelope.time).toBe('2026-01-01T00:00:00Z');
  });

  it('accepts a bus ARN as EventBusName', async () => {
    const arn = 'arn:aws:events:us-east-1:000000000000:event-bus/gpu-reflex';
    await client().send(new PutEventsCommand({ Entries: [entry({ EventBusName: arn })] }));
    expect(routed[0]?.busName).toBe('gpu-reflex');
  });

  it('is reached through AWS_ENDPOINT_URL_EVENTBRIDGE by a client built with no endpoint', async () => {
    const saved = process.env.AWS_ENDPOINT_URL_EVENTBRIDGE;
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = server.url;
    try {
      const c = new EventBridgeClient({
        region: 'us-east-1',
        credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
        maxAttempts: 1,
      });
      const out = await c.send(new PutEventsCommand({ Entries: [entry()] }));
      expect(out.Entries?.[0]).toHaveProperty('EventId');
    } finally {
      if (saved === undefined) delete process.env.AWS_ENDPOINT_URL_EVENTBRIDGE;
      else process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = saved;
    }
  });

  it('refuses 11 entries with a request-level ValidationException', async () => {
    const entries = Array.from({ length: 11 }, () => entry());
    await expect(client().send(new PutEventsCommand({ Entries: entries }))).rejects.toMatchObject({
      name: 'ValidationException',
      message: expect.stringContaining('less than or equal to 10'),
    });
    expect(ingest.events).toHaveLength(0);
  });

  it('accepts exactly 10 entries', async () => {
    const out = await client().send(new PutEventsCommand({ Entries: Array.from({ length: 10 }, () => entry()) }));
    expect(out.FailedEntryCount).toBe(0);
    expect(ingest.events).toHaveLength(10);
  });

  it('refuses a request whose entries total more than 256 KB, accepting exactly 256 KB', async () => {
    const base = entry({ Detail: '{"p":""}' });
    const fixed = Buffer.byteLength(`${base.Source}${base.DetailType}{"p":""}`);
    const pad = (n: number) => entry({ Detail: JSON.stringify({ p: 'é'.repeat(n / 2) }) });
    // 'é' is 2 UTF-8 bytes: sizes are counted in bytes, not characters.
    const exact = 256 * 1024 - fixed;
    const ok = await client().send(new PutEventsCommand({ Entries: [pad(exact)] }));
    expect(ok.FailedEntryCount).toBe(0);
    await expect(client().send(new PutEventsCommand({ Entries: [pad(exact + 2)] }))).rejects.toMatchObject({
      name: 'ValidationException',
      message: 'Total size of the entries in the request is over the limit.',
    });
  });

  it('answers missing fields and a non-object Detail per entry, accepting the rest', async () => {
    const out = await client().send(
      new PutEventsCommand({
        Entries: [
          entry({ Source: undefined }),
          entry(),
          entry({ DetailType: undefined }),
          entry({ Detail: undefined }),
          entry({ Detail: '[1,2]' }),
          entry({ Detail: '{not json' }),
          entry({ Detail: '"text"' }),
        ],
      }),
    );
    expect(out.FailedEntryCount).toBe(6);
    expect(out.Entries).toEqual([
      {
        ErrorCode: 'InvalidArgument',
        ErrorMessage: 'Parameter Source is not valid. Reason: Source is a required argument.',
      },
      { EventId: 'id-1' },
      {
        ErrorCode: 'InvalidArgument',
        ErrorMessage: 'Parameter DetailType is not valid. Reason: DetailType is a required argument.',
      },
      {
        ErrorCode: 'InvalidArgument',
        ErrorMessage: 'Parameter Detail is not valid. Reason: Detail is a required argument.',
      },
      { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' },
      { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' },
      { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' },
    ]);
    expect(ingest.events).toHaveLength(1);
  });

  it('fails the whole request with ResourceNotFoundException for an unknown bus', async () => {
    await expect(
      client().send(new PutEventsCommand({ Entries: [entry(), entry({ EventBusName: 'nope' })] })),
    ).rejects.toMatchObject({ name: 'ResourceNotFoundException', message: 'Event bus nope does not exist.' });
    expect(ingest.events).toHaveLength(0);
  });

  it('failNext answers the next entries with retryable per-entry errors', async () => {
    ingest.failNext(1, { code: 'ThrottlingException' });
    ingest.failNext(1);
    const out = await client().send(new PutEventsCommand({ Entries: [entry(), entry(), entry()] }));
    expect(out.FailedEntryCount).toBe(2);
    expect(out.Entries).toEqual([
      { ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded' },
      { ErrorCode: 'InternalFailure', ErrorMessage: 'Internal Failure' },
      { EventId: 'id-1' },
    ]);
  });

  it('setDown makes the SDK see a network error, and setDown(false) restores service', async () => {
    const c = client();
    await c.send(new PutEventsCommand({ Entries: [entry()] })); // keep-alive socket now open
    server.setDown(true);
    const err: unknown = await c.send(new PutEventsCommand({ Entries: [entry()] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect((err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode).toBeUndefined();
    server.setDown(false);
    const out = await c.send(new PutEventsCommand({ Entries: [entry()] }));
    expect(out.FailedEntryCount).toBe(0);
    expect(ingest.events).toHaveLength(2);
  });

  it('failRequests answers whole-request 5xx that the SDK retries past', async () => {
    server.failRequests(2, 503);
    const out = await client({ maxAttempts: 3 }).send(new PutEventsCommand({ Entries: [entry()] }));
    expect(out.$metadata.attempts).toBe(3);
    expect(ingest.events).toHaveLength(1);
    server.failRequests(1, 500);
    await expect(client().send(new PutEventsCommand({ Entries: [entry()] }))).rejects.toMatchObject({
      name: 'InternalFailure',
      $metadata: { httpStatusCode: 500 },
    });
  });
});

describe('requests the SDK would never send', () => {
  const post = (headers: Record<string, string>, body = '{"Entries":[]}') =>
    fetch(server.url, { method: 'POST', headers: { 'content-type': 'application/x-amz-json-1.1', ...headers }, body });
  const signed = {
    'x-amz-target': 'AWSEvents.PutEvents',
    'x-amz-date': '20260101T000000Z',
    authorization: `AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/events/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'a'.repeat(64)}`,
  };

  it('answers an oversized body with 413 instead of reading it all', async () => {
    const res = await post(signed, 'x'.repeat(4 * 1024 * 1024 + 1));
    expect(res.status).toBe(413);
    expect(res.headers.get('x-amzn-errortype')).toBe('ValidationException');
  });

  it.each([
    ['an unsigned request', { 'x-amz-target': 'AWSEvents.PutEvents' }, 'MissingAuthenticationTokenException'],
    ['a garbled signature', { ...signed, authorization: 'AWS4-HMAC-SHA256 garbage' }, 'IncompleteSignatureException'],
    [
      'a signature for another service',
      { ...signed, authorization: signed.authorization.replace('/events/', '/sqs/') },
      'InvalidSignatureException',
    ],
    [
      'a body that does not match its hash',
      { ...signed, 'x-amz-content-sha256': 'f'.repeat(64) },
      'InvalidSignatureException',
    ],
    ['an unknown operation', { ...signed, 'x-amz-target': 'AWSEvents.PutRule' }, 'UnknownOperationException'],
    ['zero entries', signed, 'ValidationException'],
  ])('refuses %s', async (_what, headers, code) => {
    const res = await post(headers);
    expect(res.status).toBe(400);
    expect(res.headers.get('x-amzn-errortype')).toBe(code);
    expect(((await res.json()) as { __type: string }).__type).toBe(code);
  });
});
