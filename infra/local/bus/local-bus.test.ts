import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { calls } from './fixtures/handlers/record.ts';
import { ManualClock, startLocalBus, type DeadLetter, type LocalBus } from './index.ts';

const FIXTURE = new URL('./fixtures/serverless.yml', import.meta.url).pathname;
const T0 = Date.parse('2026-01-02T11:50:00Z'); // a Friday
let bus: LocalBus;
let clock: ManualClock;
let dlqPath: string;

beforeEach(async () => {
  calls().length = 0;
  clock = new ManualClock(T0);
  dlqPath = join(mkdtempSync(join(tmpdir(), 'local-bus-')), 'dlq.jsonl');
  bus = await startLocalBus({ serverlessYml: FIXTURE, clock, dlqPath });
});
afterEach(async () => bus.close());

const sdk = () =>
  new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
const entry = (source: string, detailType: string, detail: object) => ({
  Source: source,
  DetailType: detailType,
  Detail: JSON.stringify(detail),
  EventBusName: 'fixture-bus',
});

describe('events published with the real SDK', () => {
  it('reach the handler whose rule pattern (from ${file()}) matches, with a Lambda context', async () => {
    const out = await sdk().send(
      new PutEventsCommand({
        Entries: [
          entry('gpu-reflex.node-agent', 'GPU XID Error', { xid: 79 }),
          entry('gpu-reflex.node-agent', 'GPU Health Changed', { healthy: false }),
        ],
      }),
    );
    await bus.drain();
    expect(out.FailedEntryCount).toBe(0);
    const delivered = calls().filter((c) => c.fn === 'handler');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]).toMatchObject({
      functionName: 'fixture-test-record',
      remainingMs: 6000,
      event: {
        id: out.Entries?.[0]?.EventId,
        source: 'gpu-reflex.node-agent',
        'detail-type': 'GPU XID Error',
        detail: { xid: 79 },
        time: '2026-01-02T11:50:00Z',
      },
    });
    expect(bus.events).toHaveLength(2);
  });

  it('deliver only the inputPath part when the rule says so (rule bus given as an ARN)', async () => {
    await bus.put([entry('fixture.input-path', 'X', { only: 'this' })]);
    await bus.drain();
    expect(calls().map((c) => c.event)).toEqual([{ only: 'this' }]);
  });

  it('are not routed when failNext fails their entry, and the SDK sees a partial failure', async () => {
    bus.failNext(1, { code: 'ThrottlingException' });
    const out = await sdk().send(
      new PutEventsCommand({
        Entries: [
          entry('gpu-reflex.node-agent', 'GPU XID Error', { n: 1 }),
          entry('gpu-reflex.node-agent', 'GPU XID Error', { n: 2 }),
        ],
      }),
    );
    await bus.drain();
    expect(out.FailedEntryCount).toBe(1);
    expect(out.Entries?.[0]).toEqual({ ErrorCode: 'ThrottlingException', ErrorMessage: 'Rate exceeded' });
    expect(calls().map((c) => (c.event as { detail: unknown }).detail)).toEqual([{ n: 2 }]);
  });

  it('fail with a network error while the bus is down', async () => {
    bus.setDown(true);
    await expect(sdk().send(new PutEventsCommand({ Entries: [entry('a', 'b', {})] }))).rejects.toThrow();
    bus.setDown(false);
    await expect(sdk().send(new PutEventsCommand({ Entries: [entry('a', 'b', {})] }))).resolves.toMatchObject({
      FailedEntryCount: 0,
    });
  });

  it('accept the buses serverless.yml declares and refuse others', async () => {
    await expect(bus.put([{ ...entry('a', 'b', {}), EventBusName: 'default' }])).resolves.toMatchObject({
      FailedEntryCount: 0,
    });
    await expect(bus.put([{ ...entry('a', 'b', {}), EventBusName: 'elsewhere' }])).rejects.toMatchObject({
      code: 'ResourceNotFoundException',
    });
  });
});

describe('retries and dead letters on the virtual clock', () => {
  it('retries a failing handler with backoff until it succeeds', async () => {
    const attempts: { attempt: number; at: number; retryAt?: number }[] = [];
    bus.on('failed', ({ attempt, at, retryAt }) => attempts.push({ attempt, at, ...(retryAt ? { retryAt } : {}) }));
    const delivered: number[] = [];
    bus.on('delivered', ({ attempt }) => delivered.push(attempt));
    await bus.put([entry('fixture.flaky', 'Flaky', { failures: 2 })]);
    await bus.drain();
    expect(attempts).toHaveLength(1);
    const first = attempts[0]!;
    expect(first.retryAt! - first.at).toBeGreaterThanOrEqual(500); // 1 s ceiling, equal jitter
    expect(first.retryAt! - first.at).toBeLessThanOrEqual(1000);
    await bus.advance(first.retryAt! - T0 - 1);
    expect(attempts).toHaveLength(1); // not a millisecond early
    await bus.advance(10_000);
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2]);
    expect(attempts[1]!.at).toBe(first.retryAt);
    expect(attempts[1]!.retryAt! - attempts[1]!.at).toBeGreaterThanOrEqual(1000); // 2 s ceiling
    expect(delivered).toEqual([3]);
    expect(bus.deadLetters).toEqual([]);
  });

  it('dead-letters after maximumRetryAttempts, writing a JSON line with event, rule, error and attempts', async () => {
    const dead: DeadLetter[] = [];
    bus.on('dead-lettered', (d) => dead.push(d));
    await bus.put([entry('fixture.flaky', 'Flaky', { failures: 99 })]);
    await bus.advance(60_000);
    expect(calls().filter((c) => c.fn === 'flaky')).toHaveLength(4); // 1 + 3 retries
    expect(dead).toHaveLength(1);
    const line = JSON.parse(readFileSync(dlqPath, 'utf8').trim()) as DeadLetter;
    expect(line).toEqual(dead[0]);
    expect(line).toMatchObject({
      rule: 'fixture-test-flaky-rule-2',
      function: 'flaky',
      deadLetterQueueArn: 'FlakyDlq.Arn',
      reason: 'retries-exhausted',
      errorName: 'Error',
      errorMessage: 'flaky failure 4',
      attempts: 4,
      event: { source: 'fixture.flaky', detail: { failures: 99 } },
    });
  });

  it('dead-letters a delivery to a handler that does not exist yet, without retrying or crashing', async () => {
    await bus.put([entry('fixture.ghost', 'Boo', {})]);
    await bus.advance(60_000);
    expect(bus.deadLetters).toHaveLength(1);
    expect(bus.deadLetters[0]).toMatchObject({
      reason: 'not-retryable',
      errorName: 'HandlerLoadError',
      attempts: 1,
      function: 'ghost',
    });
    expect(bus.deadLetters[0]?.errorMessage).toMatch(/handler module .*handlers\/not-written-yet not found/);
    await bus.put([entry('gpu-reflex.node-agent', 'GPU XID Error', {})]);
    await bus.drain();
    expect(calls()).toHaveLength(1);
  });
});

describe('schedules on the virtual clock', () => {
  it('fire rate and cron schedules at their times, with the Scheduled Event or the configured input', async () => {
    const fired: { at: string; event: unknown }[] = [];
    bus.on('delivered', ({ at, event }) => fired.push({ at: new Date(at).toISOString().slice(11, 16), event }));
    await bus.advance(4 * 60_000 + 59_999);
    expect(fired).toEqual([]);
    await bus.advance(15 * 60_000 + 1);
    expect(
      fired.map((f) => [
        f.at,
        (f.event as { 'detail-type'?: string; kind?: string })['detail-type'] ?? (f.event as { kind: string }).kind,
      ]),
    ).toEqual([
      ['11:55', 'Scheduled Event'],
      ['12:00', 'noon'],
      ['12:00', 'Scheduled Event'],
      ['12:05', 'Scheduled Event'],
      ['12:10', 'Scheduled Event'],
    ]);
    expect(fired[0]?.event).toMatchObject({
      source: 'aws.events',
      time: '2026-01-02T11:55:00Z',
      resources: ['arn:aws:events:us-east-1:000000000000:rule/fixture-test-ticker-schedule-4'],
      detail: {},
    });
    expect(clock.now()).toBe(T0 + 20 * 60_000);
  });

  it('skip the weekend for a MON-FRI cron', async () => {
    const noon: string[] = [];
    bus.on('delivered', ({ at, event }) => {
      if ((event as { kind?: string }).kind === 'noon') noon.push(new Date(at).toISOString().slice(0, 16));
    });
    await bus.advance(4 * 86_400_000);
    expect(noon).toEqual(['2026-01-02T12:00', '2026-01-05T12:00']);
  });
});

describe('httpApi routes', () => {
  it('deliver an API Gateway v2 payload and return the handler response', async () => {
    const res = await fetch(`${bus.httpUrl}/chat/slack?x=1&x=2&y=3`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: 'c=1; d=2' },
      body: '{"text":"drain gpu-node-1"}',
    });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-platform')).toBe('slack');
    expect(res.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await res.json()).toEqual({ platform: 'slack', got: '{"text":"drain gpu-node-1"}' });
    const event = calls()[0]?.event as Record<string, unknown>;
    expect(event).toMatchObject({
      version: '2.0',
      routeKey: 'POST /chat/{platform}',
      rawPath: '/chat/slack',
      rawQueryString: 'x=1&x=2&y=3',
      cookies: ['c=1', 'd=2'],
      queryStringParameters: { x: '1,2', y: '3' },
      pathParameters: { platform: 'slack' },
      body: '{"text":"drain gpu-node-1"}',
      isBase64Encoded: false,
      requestContext: {
        http: { method: 'POST', path: '/chat/slack', sourceIp: '127.0.0.1' },
        routeKey: 'POST /chat/{platform}',
        stage: '$default',
        time: '02/Jan/2026:11:50:00 +0000',
        timeEpoch: T0,
      },
    });
    expect((event.headers as Record<string, string>)['content-type']).toBe('application/json');
    expect(typeof (event.requestContext as { requestId: unknown }).requestId).toBe('string');
  });

  it('base64-encode a form body, as API Gateway does', async () => {
    await fetch(`${bus.httpUrl}/chat/teams`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=b',
    });
    expect(calls()[0]?.event).toMatchObject({ body: Buffer.from('a=b').toString('base64'), isBase64Encoded: true });
  });

  it('match greedy path parameters', async () => {
    await fetch(`${bus.httpUrl}/files/a/b%20c.txt`);
    expect(calls()[0]?.event).toMatchObject({ routeKey: 'GET /files/{path+}', pathParameters: { path: 'a/b c.txt' } });
  });

  it.each([
    ['a result without statusCode as a 200 JSON body', 'POST', '/chat/x', 'plain', 200, { answered: true }],
    ['a throwing handler as a 500', 'POST', '/chat/x', 'boom', 500, { message: 'Internal Server Error' }],
    ['an unknown route as a 404', 'POST', '/nowhere', '', 404, { message: 'Not Found' }],
    ['a known path with another method as a 404', 'GET', '/chat/x', undefined, 404, { message: 'Not Found' }],
  ])('answer %s', async (_what, method, path, body, status, json) => {
    const res = await fetch(`${bus.httpUrl}${path}`, { method, ...(body !== undefined ? { body } : {}) });
    expect(res.status).toBe(status);
    expect(await res.json()).toEqual(json);
  });

  it('refuse a body over 10 MB with a 413, as API Gateway does', async () => {
    const res = await fetch(`${bus.httpUrl}/chat/x`, { method: 'POST', body: 'x'.repeat(10 * 1024 * 1024 + 1) });
    expect(res.status).toBe(413);
    expect(calls()).toHaveLength(0);
  });

  it('report invocations to the timeline', async () => {
    const seen: string[] = [];
    bus.on('delivered', ({ rule, function: fn }) => seen.push(`${rule} → ${fn}`));
    bus.on('failed', ({ rule, error }) => seen.push(`${rule} ✗ ${error.message}`));
    await fetch(`${bus.httpUrl}/chat/x`, { method: 'POST', body: 'ok' });
    await fetch(`${bus.httpUrl}/chat/x`, { method: 'POST', body: 'boom' });
    expect(seen).toEqual(['POST /chat/{platform} → chat', 'POST /chat/{platform} ✗ chat handler exploded']);
  });
});

describe('the routing table', () => {
  it('lists what serverless.yml holds that the bus does not serve', () => {
    expect(bus.table?.warnings).toEqual(['functions.legacy.events[0]: sqs events are not served by the local bus']);
    expect(bus.table?.schedules.map((s) => s.schedule.expression)).toEqual([
      'rate(5 minutes)',
      'cron(0 12 ? * MON-FRI *)',
    ]);
    expect(bus.table?.stage).toBe('test');
  });
});
