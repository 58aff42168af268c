import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpDingTalkSessionResponder } from './dingtalk-session.ts';

/** A stand-in DingTalk sessionWebhook: takes messages, or answers an errcode when told to. */
const seen: { path: string; type?: string; body: unknown }[] = [];
let errcode = 0;
let server: Server;
let prefix: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      seen.push({
        path: req.url ?? '',
        ...(req.headers['content-type'] ? { type: req.headers['content-type'] } : {}),
        body: JSON.parse(raw),
      });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(errcode === 0 ? { errcode: 0, errmsg: 'ok' } : { errcode, errmsg: 'session expired' }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  prefix = `http://127.0.0.1:${(server.address() as AddressInfo).port}/robot/sendBySession`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe("DingTalk's sessionWebhook", () => {
  it('posts a text message to the conversation', async () => {
    await new HttpDingTalkSessionResponder(prefix).say(`${prefix}?session=s1`, 'cordoned gpu-3');
    expect(seen.at(-1)).toEqual({
      path: '/robot/sendBySession?session=s1',
      type: 'application/json; charset=utf-8',
      body: { msgtype: 'text', text: { content: 'cordoned gpu-3' } },
    });
  });

  it('fails on a non-zero errcode, though the HTTP status is 200', async () => {
    errcode = 300001;
    await expect(new HttpDingTalkSessionResponder(prefix).say(`${prefix}?session=s2`, 'x')).rejects.toThrow(
      'dingtalk sessionWebhook answered 200 errcode 300001: session expired',
    );
    errcode = 0;
  });

  it("never posts outside the allowed prefix (DingTalk's own by default)", async () => {
    const before = seen.length;
    const responder = new HttpDingTalkSessionResponder();
    expect(responder.reaches('https://oapi.dingtalk.com/robot/sendBySession?session=s3')).toBe(true);
    expect(responder.reaches(`${prefix}?session=s3`)).toBe(false);
    await expect(responder.say(`${prefix}?session=s3`, 'x')).rejects.toThrow(
      'sessionWebhook is not under https://oapi.dingtalk.com/robot/sendBySession',
    );
    expect(seen.length).toBe(before);
  });
});
