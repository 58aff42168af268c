import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { alibabaSender } from '../../../node-agent/publisher/alibaba-sender.ts';
import { startAlibabaLocalBus, type AlibabaLocalBus } from './alibaba-bus.ts';
import { ManualClock } from './clock.ts';

/**
 * The embedded stack's Alibaba bus on its own: what each function receives is what FC 3.0 hands a
 * function of each trigger, routed by the template's rules; failures are retried as FC's async
 * invocation retries them. The entry here is the identity, so the handler sees FC's payload raw.
 */
const dir = mkdtempSync(join(tmpdir(), 'alibaba-bus-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
writeFileSync(
  join(dir, 'handler.mjs'),
  `export const calls = [];
export let failing = false;
export function setFailing(v) { failing = v; }
export async function handler(event, context) {
  calls.push({ event, context });
  if (failing) throw new Error('boom');
  return { statusCode: 201, headers: { 'content-type': 'text/plain' }, body: 'ok', isBase64Encoded: false };
}
`,
);
writeFileSync(
  join(dir, 'serverless.yml'),
  `service: t
provider: { name: aws, runtime: nodejs20.x }
functions:
  echo: { handler: handler.handler }
`,
);
const mod = (await import(join(dir, 'handler.mjs'))) as {
  calls: { event: unknown; context: Record<string, unknown> }[];
  setFailing: (v: boolean) => void;
};

const getAtt = { 'Fn::GetAtt': ['EchoFunction', 'FunctionName'] };
const template = {
  Parameters: { EventBusName: { Default: 'bus-a' } },
  Resources: {
    EchoFunction: {
      Type: 'ALIYUN::FC3::Function',
      Properties: { FunctionName: 'gpu-reflex-dev-echo', Code: { OssObjectName: 'p/echo.zip' }, Timeout: 5 },
    },
    EchoAsync: {
      Type: 'ALIYUN::FC3::AsyncInvokeConfig',
      Properties: {
        FunctionName: getAtt,
        MaxAsyncRetryAttempts: 1,
        DestinationConfig: { OnFailure: { Destination: 'acs:mns:cn-hangzhou:1:/queues/dlq/messages' } },
      },
    },
    EchoRule: {
      Type: 'ALIYUN::EventBridge::Rule',
      Properties: {
        RuleName: 'echo-0',
        EventBusName: { Ref: 'EventBusName' },
        FilterPattern: { source: ['gpu-reflex.node-agent'], data: { xid: [{ numeric: ['>', 40] }] } },
        Targets: [{ Type: 'acs.fc.function', Endpoint: { 'Fn::Sub': 'acs:fc:r:a:functions/gpu-reflex-dev-echo' } }],
      },
    },
    EchoTimer: {
      Type: 'ALIYUN::FC3::Trigger',
      Properties: {
        FunctionName: getAtt,
        TriggerName: 'echo-timer',
        TriggerType: 'timer',
        TriggerConfig: { cronExpression: '@every 1m', enable: true, payload: 'p' },
      },
    },
    EchoHttp: {
      Type: 'ALIYUN::FC3::Trigger',
      Properties: {
        FunctionName: getAtt,
        TriggerName: 'echo-http',
        TriggerType: 'http',
        TriggerConfig: { authType: 'anonymous', methods: ['POST'] },
      },
    },
  },
};

let bus: AlibabaLocalBus | undefined;
afterEach(async () => {
  await bus?.close();
  bus = undefined;
  mod.calls.length = 0;
  mod.setFailing(false);
});

const keys = { LTAItest: 'secret' };
async function start(clock = new ManualClock(Date.UTC(2026, 0, 1))) {
  bus = await startAlibabaLocalBus({
    template,
    serverlessYml: join(dir, 'serverless.yml'),
    entry: (h) => h,
    accessKeys: { ...keys },
    clock,
    dlqPath: join(dir, 'dlq.jsonl'),
  });
  const send = alibabaSender({
    endpoint: bus.endpoint,
    protocol: 'http',
    accessKeyId: 'LTAItest',
    accessKeySecret: 'secret',
  });
  const put = (xid: number) =>
    send([
      {
        Source: 'gpu-reflex.node-agent',
        DetailType: 'GPU XID Error',
        Detail: JSON.stringify({ eventId: `e-${xid}`, xid }),
        EventBusName: 'bus-a',
        Time: new Date(clock.now()),
      },
    ]);
  return { bus, clock, put };
}

describe('the Alibaba target bus', () => {
  it("routes by the template's Alibaba pattern and hands FC's EventBridge-trigger payload: a Buffer of the CloudEvent", async () => {
    const { bus, put } = await start();
    await put(79);
    await put(13); // the numeric pattern leaves it out
    await bus.drain();
    expect(mod.calls).toHaveLength(1);
    const { event, context } = mod.calls[0]!;
    expect(Buffer.isBuffer(event)).toBe(true);
    const ce = JSON.parse((event as Buffer).toString('utf8')) as Record<string, unknown>;
    expect(ce).toMatchObject({
      id: 'e-79',
      specversion: '1.0',
      type: 'GPU XID Error',
      aliyuneventbusname: 'bus-a',
      aliyunregionid: 'cn-hangzhou',
      data: { xid: 79 },
    });
    expect(context).toMatchObject({ function: { name: 'gpu-reflex-dev-echo', timeout: 5 }, region: 'cn-hangzhou' });
    expect(bus.events.map((e) => e['detail-type'])).toEqual(['GPU XID Error', 'GPU XID Error']);
    expect(bus.counts.events).toBe(2);
  });

  it("fires the @every timer trigger with FC's timer event", async () => {
    const { bus, clock } = await start();
    await bus.advance(60_000);
    expect(mod.calls.map((c) => c.event)).toHaveLength(1);
    const timer = JSON.parse((mod.calls[0]!.event as Buffer).toString('utf8')) as Record<string, unknown>;
    expect(timer).toEqual({
      triggerTime: new Date(clock.now()).toISOString().replace('.000', ''),
      triggerName: 'echo-timer',
      payload: 'p',
    });
  });

  it("serves the HTTP trigger with FC's HTTP event (capitalised headers, base64 body) and answers its response", async () => {
    const { bus } = await start();
    const res = await fetch(`${bus.httpUrl}/chat/slack?x=1`, {
      method: 'POST',
      headers: { 'x-slack-signature': 'v0=abc', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    expect(res.status).toBe(201);
    expect(await res.text()).toBe('ok');
    const e = JSON.parse((mod.calls[0]!.event as Buffer).toString('utf8')) as {
      headers: Record<string, string>;
      body: string;
      requestContext: { http: { method: string } };
    };
    expect(e).toMatchObject({
      version: 'v1',
      rawPath: '/chat/slack',
      isBase64Encoded: true,
      queryParameters: { x: '1' },
    });
    expect(e.headers['X-Slack-Signature']).toBe('v0=abc');
    expect(Buffer.from(e.body, 'base64').toString()).toBe('{"a":1}');
    expect(e.requestContext.http.method).toBe('POST');
    const get = await fetch(`${bus.httpUrl}/chat/slack`);
    expect(get.status).toBe(405);
  });

  it("retries a failing function as FC's async config says, then dead-letters it with the on-failure destination", async () => {
    const { bus, put } = await start();
    mod.setFailing(true);
    await put(79);
    await bus.advance(10 * 60_000);
    const tries = mod.calls.filter((c) => Buffer.isBuffer(c.event) && String(c.event).includes('"xid":79'));
    expect(tries).toHaveLength(2); // the first and MaxAsyncRetryAttempts 1
    const letters = bus.deadLetters.filter((l) => l.rule === 'echo-0');
    // The failing timer's: FC sends no timer-invoked failure to a destination.
    const timers = bus.deadLetters.filter((l) => l.rule === 'echo-timer');
    expect(timers.length).toBeGreaterThan(0);
    for (const l of timers) expect(l.deadLetterQueueArn).toBeNull();
    expect(letters).toHaveLength(1);
    expect(letters[0]).toMatchObject({
      rule: 'echo-0',
      function: 't-dev-echo',
      reason: 'retries-exhausted',
      attempts: 2,
      deadLetterQueueArn: 'acs:mns:cn-hangzhou:1:/queues/dlq/messages',
    });
  });

  it('refuses a PutEvents its signature does not cover', async () => {
    const { bus } = await start();
    const forged = alibabaSender({
      endpoint: bus.endpoint,
      protocol: 'http',
      accessKeyId: 'LTAItest',
      accessKeySecret: 'wrong',
    });
    const out = await forged([
      { Source: 's', DetailType: 'GPU XID Error', Detail: '{}', EventBusName: 'bus-a', Time: new Date() },
    ]).catch((e: Error) => e);
    expect(String(out instanceof Error ? out.message : JSON.stringify(out))).toMatch(
      /SignatureDoesNotMatch|signature/i,
    );
    expect(bus.counts.events).toBe(0);
  });
});
