/**
 * Function Compute 3.0's HTTP and timer triggers in front of handlers written for AWS (issue #35):
 * a Slack-signed request delivered as FC delivers it (capitalised header names, comma-joined values,
 * a base64 body) reaches an API Gateway v2 handler that checks Slack's signature exactly as the
 * same request through API Gateway does; a timer tick runs a schedule handler.
 */
import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifySlack } from '../chatops/core/signature.ts';
import { createLogger } from '../adapters/logger.ts';
import { apiGatewayEventOf, fcHttpTrigger, fcTimerTrigger, type FcHttpEvent } from './fc-http.ts';
import { rawHttpHandler, scheduleHandler } from './handler.ts';

const SECRET = 'slack-signing-secret';
const NOW_S = 1_790_000_000;
const logger = createLogger({ service: 't', level: 'error' });

/** What chat's webhook does first: Slack's signature over the raw body, from lower-case headers. */
const webhook = rawHttpHandler({
  name: 'chatops',
  logger: () => logger,
  async handle(body, { request }) {
    const v = verifySlack({ headers: request.headers, body }, SECRET, NOW_S);
    return {
      statusCode: v.ok ? 200 : 401,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        ok: v.ok,
        method: request.requestContext.http.method,
        path: request.rawPath,
        q: request.queryStringParameters ?? {},
        ...(v.ok ? {} : { reason: v.reason }),
      }),
    };
  },
});

const body = new URLSearchParams({ user_id: 'U-OPS', command: '/gpu', text: 'status' }).toString();
const sig = (b: string, secret = SECRET) =>
  `v0=${createHmac('sha256', secret).update(`v0:${NOW_S}:${b}`).digest('hex')}`;
const fcEvent = (over: Partial<FcHttpEvent> = {}): FcHttpEvent => ({
  version: 'v1',
  rawPath: '/chat/slack',
  body,
  isBase64Encoded: false,
  // FC capitalises header names.
  headers: {
    'Content-Type': 'application/x-www-form-urlencoded',
    'X-Slack-Request-Timestamp': String(NOW_S),
    'X-Slack-Signature': sig(body),
  },
  queryParameters: { retry: '1' },
  requestContext: {
    accountId: '1234567890123456',
    domainName: 'abc.cn-hangzhou.fcapp.run',
    domainPrefix: 'abc',
    http: { method: 'POST', path: '/chat/slack', protocol: 'HTTP/1.1', sourceIp: '10.0.0.1', userAgent: 'Slackbot' },
    requestId: '1-64f6cd87-abc',
    time: '2026-12-05T04:00:00Z',
    timeEpoch: '1796443200000',
  },
  ...over,
});
const ctx = { requestId: 'r1', function: { name: 'chatops', timeout: 10 } };

describe('FC 3.0 HTTP trigger', () => {
  it('hands an API Gateway v2 handler the request it would get on AWS: the Slack signature checks out', async () => {
    const out = await fcHttpTrigger(webhook as never)(Buffer.from(JSON.stringify(fcEvent())), ctx);
    expect(out.statusCode).toBe(200);
    expect(JSON.parse(out.body!)).toEqual({ ok: true, method: 'POST', path: '/chat/slack', q: { retry: '1' } });
    const viaApiGateway = await webhook(
      {
        ...apiGatewayEventOf(fcEvent()),
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'x-slack-request-timestamp': String(NOW_S),
          'x-slack-signature': sig(body),
        },
      } as APIGatewayProxyEventV2,
      { awsRequestId: 'r0' } as Context,
    );
    expect(out.body).toBe((viaApiGateway as { body: string }).body);
  });

  it('takes a base64 body as bytes, and a forged signature is still refused', async () => {
    const b64 = fcEvent({ body: Buffer.from(body).toString('base64'), isBase64Encoded: true });
    expect((await fcHttpTrigger(webhook as never)(JSON.stringify(b64), ctx)).statusCode).toBe(200);
    const forged = fcEvent();
    forged.headers!['X-Slack-Signature'] = sig(body, 'not-the-secret');
    const out = await fcHttpTrigger(webhook as never)(JSON.stringify(forged), ctx);
    expect(out.statusCode).toBe(401);
    expect(JSON.parse(out.body!).reason).toMatch(/bad signature/);
  });

  it('answers 400 to what is not an FC HTTP event, never calling the handler', async () => {
    let called = false;
    const h = async () => ((called = true), { statusCode: 200, body: '' });
    const out = await fcHttpTrigger(h)(JSON.stringify({ triggerTime: 'x' }), ctx);
    expect(out.statusCode).toBe(400);
    expect(JSON.parse(out.body!).error).toMatch(/version "v1" and rawPath/);
    expect(called).toBe(false);
  });

  it('joins a header FC sent twice under two spellings, as API Gateway joins repeated headers', () => {
    const e = apiGatewayEventOf(fcEvent({ headers: { 'X-Forwarded-For': '1.1.1.1', 'x-forwarded-for': '2.2.2.2' } }));
    expect(e.headers['x-forwarded-for']).toBe('1.1.1.1,2.2.2.2');
  });
});

describe('FC 3.0 timer trigger', () => {
  it('runs a schedule handler on each tick, the same id for a retried tick', async () => {
    const seen: unknown[] = [];
    const sweep = scheduleHandler({
      name: 'remediate-sweep',
      logger: () => logger,
      async handle() {
        return { ran: true };
      },
    });
    const trigger = fcTimerTrigger(async (event, context) => {
      seen.push(event);
      return sweep(event, context);
    });
    const tick = { triggerTime: '2026-12-05T04:01:00Z', triggerName: 'every-minute', payload: '' };
    expect(await trigger(Buffer.from(JSON.stringify(tick)), ctx)).toEqual({ status: 'done', result: { ran: true } });
    await trigger(JSON.stringify(tick), ctx);
    expect(seen[0]).toMatchObject({
      'detail-type': 'Scheduled Event',
      time: '2026-12-05T04:01:00Z',
      resources: ['every-minute'],
    });
    expect((seen[0] as { id: string }).id).toBe((seen[1] as { id: string }).id);
  });

  it('drops what is not a timer event, saying why', async () => {
    const trigger = fcTimerTrigger(async () => ({ status: 'done', result: null }) as never);
    expect(await trigger(JSON.stringify({ version: 'v1' }), ctx)).toMatchObject({
      status: 'dropped',
      reason: expect.stringMatching(/triggerTime and triggerName/),
    });
  });
});

describe('one FC entry for every trigger', () => {
  it('routes each trigger’s event to its adapter by the event’s own shape', async () => {
    const { fcEntry, triggerKindOf } = await import('./fc-entry.ts');
    const tick = { triggerTime: '2026-12-05T04:01:00Z', triggerName: 'every-minute' };
    expect(triggerKindOf(Buffer.from(JSON.stringify(fcEvent())))).toBe('http');
    expect(triggerKindOf(JSON.stringify(tick))).toBe('timer');
    expect(triggerKindOf(JSON.stringify({ specversion: '1.0' }))).toBe('eventbridge');
    expect(triggerKindOf(JSON.stringify([{ specversion: '1.0' }]))).toBe('eventbridge');
    const seen: unknown[] = [];
    const entry = fcEntry(async (event: never) => {
      seen.push(event);
      return { statusCode: 200, body: '' } as never;
    });
    await entry(JSON.stringify(fcEvent()), ctx);
    await entry(JSON.stringify(tick), ctx);
    expect(seen.map((e) => (e as { version?: string; 'detail-type'?: string }).version ?? '')).toEqual(['2.0', '0']);
    expect(seen[1]).toMatchObject({ 'detail-type': 'Scheduled Event' });
  });
});
