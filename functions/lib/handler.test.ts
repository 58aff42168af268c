import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Context } from 'aws-lambda';
import * as z from 'zod';
import { DropEvent, eventHandler, httpHandler, scheduleHandler } from './handler.ts';
import { createLogger } from '../adapters/logger.ts';
import { injectClock, manualClock } from '../adapters/clock.ts';
import { ConflictError, NotFoundError, BadInputError, fromKubeError } from '../adapters/errors.ts';

const example = JSON.parse(
  readFileSync(new URL('../../events/catalog/gpu-xid-error.example.json', import.meta.url), 'utf8'),
);
const ctx = { awsRequestId: 'req-1' } as Context;

function setup(handle: () => Promise<unknown>) {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ service: 'test', sink: (l) => lines.push(l), level: 'debug' });
  return { lines, h: eventHandler({ name: 'remediate', detailTypes: ['GPU XID Error'], logger, handle }) };
}

describe('eventHandler', () => {
  it('hands a parsed detail to the core and reports its result', async () => {
    let seen: unknown;
    const { h } = setup(async () => 'ok');
    expect(await h(example, ctx)).toEqual({ status: 'done', result: 'ok' });
    const h2 = eventHandler({
      name: 'x',
      detailTypes: ['GPU XID Error'],
      logger: createLogger({ service: 't', sink: () => {} }),
      handle: async (e) => {
        seen = e.detail;
      },
    });
    await h2(example, ctx);
    expect(seen).toMatchObject({ xid: 79, node: 'gpu-a100-07' });
  });

  it('drops a malformed event with every problem named, and never retries it', async () => {
    const { h, lines } = setup(async () => {
      throw new Error('must not run');
    });
    const bad = structuredClone(example);
    bad.detail.xid = '79';
    expect(await h(bad, ctx)).toEqual({ status: 'dropped', reason: 'detail.xid: expected integer, got "79"' });
    expect(lines[0]).toMatchObject({
      level: 'warn',
      message: 'dropping bad event',
      function: 'remediate',
      requestId: 'req-1',
    });
  });

  it('drops detail-types it does not handle', async () => {
    const { h } = setup(async () => 'ok');
    const other = JSON.parse(
      readFileSync(new URL('../../events/catalog/gpu-inventory.example.json', import.meta.url), 'utf8'),
    );
    expect(await h(other, ctx)).toMatchObject({
      status: 'dropped',
      reason: expect.stringMatching(/not one of "GPU XID Error"/),
    });
  });

  it('acknowledges not-found as already done and an event that fails its schema as dropped', async () => {
    expect(
      await setup(async () => {
        throw new NotFoundError('node gone');
      }).h(example, ctx),
    ).toEqual({ status: 'already-done', reason: 'node gone' });
    expect(
      await setup(async () => {
        throw new DropEvent('detail.node: expected a Kubernetes node name');
      }).h(example, ctx),
    ).toEqual({ status: 'dropped', reason: 'detail.node: expected a Kubernetes node name' });
  });

  it('throws a request the API server refused as malformed (400/422): that is our bug, never dropped', async () => {
    const refused = fromKubeError(
      { code: 422, body: { kind: 'Status', message: 'Node "n1" is invalid: metadata.labels: Invalid value' } },
      'updating node n1',
    );
    expect(refused).toBeInstanceOf(BadInputError);
    await expect(
      setup(async () => {
        throw refused;
      }).h(example, ctx),
    ).rejects.toThrow(/updating node n1: Node "n1" is invalid/);
  });

  it('throws retryable and unexpected failures so the platform retries them', async () => {
    await expect(
      setup(async () => {
        throw new ConflictError('stale');
      }).h(example, ctx),
    ).rejects.toThrow('stale');
    await expect(
      setup(async () => {
        throw new TypeError('bug');
      }).h(example, ctx),
    ).rejects.toThrow('bug');
  });
});

describe('scheduleHandler', () => {
  const logger = createLogger({ service: 't', sink: () => {} });
  it('shares the classification: not found is done, a conflict and a bug are thrown', async () => {
    expect(await scheduleHandler({ name: 's', logger, handle: async () => 3 })({}, ctx)).toEqual({
      status: 'done',
      result: 3,
    });
    expect(
      await scheduleHandler({
        name: 's',
        logger,
        handle: async () => {
          throw new NotFoundError('gone');
        },
      })({}, ctx),
    ).toEqual({ status: 'already-done', reason: 'gone' });
    await expect(
      scheduleHandler({
        name: 's',
        logger,
        handle: async () => {
          throw new ConflictError('stale');
        },
      })({}, ctx),
    ).rejects.toThrow('stale');
    await expect(
      scheduleHandler({
        name: 's',
        logger,
        handle: async () => {
          throw new TypeError('bug');
        },
      })({}, ctx),
    ).rejects.toThrow('bug');
  });
});

describe('scheduleHandler with coalesce (rewrite-quotas)', () => {
  const logger = createLogger({ service: 't', sink: () => {} });
  const clock = manualClock(Date.parse('2026-12-05T10:00:00.500Z'));
  const at = (iso: string) => ({ 'detail-type': 'Remediation', time: iso });

  it('acknowledges an event older than the start of a run that completed, and runs for a newer one', async () => {
    injectClock(clock);
    try {
      let runs = 0;
      const spec = { name: 'rewrite-quotas', logger, handle: async () => ++runs };
      const h = scheduleHandler({ ...spec, coalesce: true });
      // A storm: the first event runs (started 10:00:00.500); those from before that second's start are covered.
      expect(await h(at('2026-12-05T09:59:58Z'), ctx)).toEqual({ status: 'done', result: 1 });
      await clock.advance(5_000);
      expect(await h(at('2026-12-05T09:59:59Z'), ctx)).toMatchObject({ status: 'already-done' });
      // The same second as the run's start: it may have come after the run read, so it runs.
      expect(await h(at('2026-12-05T10:00:00Z'), ctx)).toEqual({ status: 'done', result: 2 });
      expect(await h(at('2026-12-05T10:00:04Z'), ctx)).toMatchObject({ status: 'already-done' });
      expect(await h({}, ctx)).toEqual({ status: 'done', result: 3 }); // no time: never skipped
      expect(runs).toBe(3);
      // Without coalesce every event runs.
      const plain = scheduleHandler(spec);
      expect(await plain(at('2026-12-05T09:00:00Z'), ctx)).toEqual({ status: 'done', result: 4 });
      expect(await plain(at('2026-12-05T09:00:00Z'), ctx)).toEqual({ status: 'done', result: 5 });
    } finally {
      injectClock(undefined);
    }
  });

  it('a run that failed covers nothing: the next event runs', async () => {
    let calls = 0;
    const h = scheduleHandler({
      name: 'rewrite-quotas',
      logger,
      coalesce: true,
      handle: async () => {
        if (++calls === 1) throw new ConflictError('stale');
        return calls;
      },
    });
    await expect(h(at('2020-01-01T00:00:00Z'), ctx)).rejects.toThrow('stale');
    expect(await h(at('2020-01-01T00:00:00Z'), ctx)).toEqual({ status: 'done', result: 2 });
  });
});

describe('httpHandler (API Gateway v2)', () => {
  const lines: Record<string, unknown>[] = [];
  const logger = createLogger({ service: 't', sink: (l) => lines.push(l), level: 'debug' });
  const h = (handle: (b: { id: string }) => Promise<unknown>) =>
    httpHandler({ name: 'chat', logger, body: z.object({ id: z.string().min(3) }), handle: (b) => handle(b) });
  const req = (body: string) => ({ body, isBase64Encoded: false }) as never;
  const parse = (r: unknown) => ({
    status: (r as { statusCode: number }).statusCode,
    body: JSON.parse((r as { body: string }).body) as unknown,
  });

  it('answers 200 with the result of a valid body', async () => {
    expect(parse(await h(async (b) => b.id)(req('{"id":"abc"}'), ctx))).toEqual({
      status: 200,
      body: { status: 'done', result: 'abc' },
    });
  });

  it('answers 400 naming the problem for a body that is not JSON or fails its schema, without running the core', async () => {
    const never = h(async () => {
      throw new Error('must not run');
    });
    expect(parse(await never(req('{'), ctx))).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^body: not JSON/) },
    });
    expect(parse(await never(req('{"id":"a"}'), ctx))).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^body\.id: /) },
    });
  });

  it('answers 503 to a retryable failure and 500 to our own bug, logging it as an error', async () => {
    expect(
      parse(
        await h(async () => {
          throw new ConflictError('stale');
        })(req('{"id":"abc"}'), ctx),
      ).status,
    ).toBe(503);
    expect(
      parse(
        await h(async () => {
          throw new TypeError('bug');
        })(req('{"id":"abc"}'), ctx),
      ).status,
    ).toBe(500);
    expect(lines.at(-1)).toMatchObject({ level: 'error', message: 'failed', function: 'chat' });
  });
});
