import { request } from 'node:http';
import { EventBridgeClient, PutEventsCommand } from '@aws-sdk/client-eventbridge';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compilePattern, InvalidPatternError, validatePattern } from '../../events/pattern.ts';
import { ManualClock, startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';

/**
 * Hostile and heavy traffic against the running local bus (loopback, port 0): arbitrary PutEvents
 * bodies, Details nested thousands of levels deep or tens of thousands of keys wide. Whatever
 * arrives, the server answers (an AWS-shaped error or per-entry results), never slower than 1 s,
 * and keeps answering a normal PutEvents afterwards. Patterns get the same treatment in-process.
 */
const FIXTURE = new URL('../../infra/local/bus/fixtures/serverless.yml', import.meta.url).pathname;
/** Deep enough that a hang fails the test, not the runner; far above the 1 s every answer must meet. */
const REQUEST_TIMEOUT_MS = 10_000;
const ANSWER_WITHIN_MS = 1_000;

let bus: LocalBus;
beforeAll(async () => {
  // Rules match `fixture-bus` events, so every accepted event is indexed and matched too.
  bus = await startLocalBus({
    serverlessYml: FIXTURE,
    clock: new ManualClock(Date.parse('2026-01-02T11:50:00Z')),
    historySize: 100,
  });
});
afterAll(async () => bus.close());

interface Answer {
  status: number;
  body: string;
  ms: number;
}

/** POSTs raw bytes with headers shaped like the SDK's (the bus checks the shape, not the secret). */
function post(body: string | Buffer, target = 'AWSEvents.PutEvents'): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      bus.url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/x-amz-json-1.1',
          'x-amz-target': target,
          'x-amz-date': '20260102T115000Z',
          authorization: `AWS4-HMAC-SHA256 Credential=local/20260102/us-east-1/events/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`,
        },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            body: Buffer.concat(chunks).toString('utf8'),
            ms: performance.now() - started,
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An answer is AWS-shaped: 200 with one result per entry, or an error with `__type` and `message`. */
function expectAwsShaped(a: Answer, entries: number | undefined): void {
  expect(a.ms).toBeLessThan(ANSWER_WITHIN_MS);
  const json = JSON.parse(a.body) as {
    FailedEntryCount?: number;
    Entries?: unknown[];
    __type?: string;
    message?: string;
  };
  if (a.status === 200) {
    expect(json.Entries).toHaveLength(entries ?? json.Entries!.length);
    expect(json.FailedEntryCount).toBe(
      json.Entries!.filter((e) => typeof e === 'object' && e !== null && 'ErrorCode' in e).length,
    );
  } else {
    expect(a.status).toBeGreaterThanOrEqual(400);
    expect(typeof json.__type).toBe('string');
    expect(typeof json.message).toBe('string');
  }
}

/** After everything: the real SDK still gets a normal event accepted. */
async function expectStillServing(): Promise<void> {
  const sdk = new EventBridgeClient({
    endpoint: bus.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const out = await sdk.send(
    new PutEventsCommand({
      Entries: [
        {
          Source: 'gpu-reflex.node-agent',
          DetailType: 'GPU XID Error',
          Detail: '{"xid":79}',
          EventBusName: 'fixture-bus',
        },
      ],
    }),
  );
  expect(out.FailedEntryCount).toBe(0);
}

/** JSON text nested `depth` levels, `width` children per level on the way down (arrays or objects). */
const nestedText = fc
  .record({ depth: fc.integer({ min: 0, max: 70_000 }), width: fc.integer({ min: 1, max: 3 }), objects: fc.boolean() })
  .map(({ depth, width, objects }) => {
    const open = objects ? '{"a":' : '[';
    const close = objects ? '}' : ']';
    const siblings = objects
      ? Array.from({ length: width - 1 }, (_, i) => `,"s${i}":${i}`).join('')
      : ',0'.repeat(width - 1);
    return `{"d":${open.repeat(depth)}0${(siblings + close).repeat(depth)}}`;
  });
/** A flat object or array with up to 40,000 members (within the 256 KB limit, or just past it). */
const wideText = fc
  .record({ n: fc.integer({ min: 0, max: 40_000 }), objects: fc.boolean() })
  .map(({ n, objects }) =>
    objects
      ? `{${Array.from({ length: n }, (_, i) => `"k${i}":${i}`).join(',')}}`
      : `{"a":[${Array.from({ length: n }, (_, i) => i).join(',')}]}`,
  );
const detail = fc.oneof(nestedText, wideText, fc.json({ maxDepth: 6 }), fc.string({ maxLength: 50 }));
const entry = fc.record(
  {
    Source: fc.oneof(fc.constant('gpu-reflex.node-agent'), fc.string({ maxLength: 20 }), fc.integer()),
    DetailType: fc.oneof(fc.constant('GPU XID Error'), fc.string({ maxLength: 20 })),
    Detail: detail,
    EventBusName: fc.constantFrom('fixture-bus', 'default', 'nope', undefined),
    Resources: fc.oneof(fc.array(fc.string({ maxLength: 10 }), { maxLength: 3 }), fc.anything({ maxDepth: 2 })),
    Time: fc.oneof(fc.integer(), fc.double(), fc.string({ maxLength: 10 })),
  },
  { requiredKeys: [] },
);

describe('the local bus under hostile PutEvents', () => {
  it('answers any PutEvents body AWS-shaped within 1 s, and keeps serving', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 0, maxLength: 11 }), async (entries) => {
        const a = await post(JSON.stringify({ Entries: entries }));
        expectAwsShaped(a, a.status === 200 ? entries.length : undefined);
      }),
      { numRuns: 60 },
    );
    await expectStillServing();
  });

  it('answers bodies that are not PutEvents at all: arbitrary JSON, broken text, deep bodies, other targets', async () => {
    const body = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 200 }),
      fc.integer({ min: 0, max: 200_000 }).map((d) => '['.repeat(d) + ']'.repeat(d)),
      fc.integer({ min: 0, max: 200_000 }).map((d) => `{"Entries":${'['.repeat(d)}`),
      fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b)),
    );
    await fc.assert(
      fc.asyncProperty(body, fc.constantFrom('AWSEvents.PutEvents', 'AWSEvents.PutRule', ''), async (b, target) => {
        expectAwsShaped(await post(b, target), undefined);
      }),
      { numRuns: 60 },
    );
    await expectStillServing();
  });

  it('refuses a 60,000-deep Detail at once and accepts a normal one right after', async () => {
    const deep = `{"xid":${'['.repeat(60_000)}79${']'.repeat(60_000)}}`;
    const a = await post(
      JSON.stringify({ Entries: [{ Source: 's', DetailType: 'd', Detail: deep, EventBusName: 'fixture-bus' }] }),
    );
    expectAwsShaped(a, 1);
    expect(JSON.parse(a.body)).toMatchObject({ FailedEntryCount: 1, Entries: [{ ErrorCode: 'MalformedDetail' }] });
    await expectStillServing();
  });
});

describe('patterns and events of any depth and width', () => {
  /** A pattern nested `depth` levels (objects, or `$or` branches), `width` fields per level. */
  const pattern = fc
    .record({ depth: fc.integer({ min: 0, max: 5_000 }), width: fc.integer({ min: 1, max: 40 }), or: fc.boolean() })
    .map(({ depth, width, or }) => {
      let p: Record<string, unknown> = { leaf: ['x', { prefix: 'y' }] };
      for (let i = 0; i < depth; i++) {
        const level: Record<string, unknown> = or ? { $or: [p, { [`o${i}`]: [1] }] } : { n: p };
        for (let w = 1; w < width; w++) level[`f${w}`] = [w];
        p = level;
      }
      return p;
    });
  const event = fc
    .record({ depth: fc.integer({ min: 0, max: 60_000 }), width: fc.integer({ min: 1, max: 40 }) })
    .map(({ depth, width }) => {
      let v: unknown = 'x';
      for (let i = 0; i < depth; i++) {
        const level: Record<string, unknown> = { n: i % 2 ? v : [v, 0] };
        for (let w = 1; w < width && i < 100; w++) level[`f${w}`] = w;
        v = level;
      }
      return { source: 's', detail: v };
    });

  it('validatePattern refuses an over-deep or over-wide pattern with an AWS-style message, or compiles it; matching never throws, within 1 s', () => {
    fc.assert(
      fc.property(pattern, event, (p, e) => {
        const started = performance.now();
        let matcher;
        try {
          validatePattern(p);
          matcher = compilePattern(p);
        } catch (err) {
          expect(err).toBeInstanceOf(InvalidPatternError);
          expect((err as Error).message).toMatch(/^Event pattern is not valid\. Reason: /);
        }
        if (matcher) expect(typeof matcher(e)).toBe('boolean');
        expect(performance.now() - started).toBeLessThan(ANSWER_WITHIN_MS);
      }),
      { numRuns: 40 },
    );
  });
});
