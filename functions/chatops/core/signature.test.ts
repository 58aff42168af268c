import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  feishuDecrypt,
  ReplayGuard,
  verifyChatRequest,
  verifyDingTalk,
  verifyFeishu,
  verifySlack,
  type ChatRequest,
} from './signature.ts';

// Slack's own example from "Verifying requests from Slack" (api.slack.com).
const SLACK_SECRET = '8f742231b10e8888abcd99yyyzzz85a5';
const SLACK_TS = '1531420618';
const SLACK_BODY =
  'token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c';
const SLACK_SIG = 'v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503';
const slackReq = (o: Partial<Record<string, string>> = {}, body = SLACK_BODY): ChatRequest => ({
  headers: { 'x-slack-request-timestamp': SLACK_TS, 'x-slack-signature': SLACK_SIG, ...o },
  body,
});
const SLACK_NOW = Number(SLACK_TS) + 10;

function feishuEncrypt(json: string, key: string, iv = randomBytes(16)): string {
  const c = createCipheriv('aes-256-cbc', createHash('sha256').update(key).digest(), iv);
  return Buffer.concat([iv, c.update(json, 'utf8'), c.final()]).toString('base64');
}
const FEISHU = { feishuVerificationToken: 'v-token', feishuEncryptKey: 'test key' };
function feishuReq(event: object, ts = '1700000000', nonce = 'n-1', key = FEISHU.feishuEncryptKey): ChatRequest {
  const body = JSON.stringify({ encrypt: feishuEncrypt(JSON.stringify(event), key) });
  return {
    headers: {
      'x-lark-request-timestamp': ts,
      'x-lark-request-nonce': nonce,
      'x-lark-signature': createHash('sha256')
        .update(ts + nonce + key + body)
        .digest('hex'),
    },
    body,
  };
}
const feishuEvent = {
  schema: '2.0',
  header: { event_id: 'ev-1', token: 'v-token', event_type: 'im.message.receive_v1' },
  event: { message: { content: '{"text":"status"}' } },
};

const DT_SECRET = 'dingtalk-app-secret';
const dtReq = (ts = '1700000000000', secret = DT_SECRET): ChatRequest => ({
  headers: { timestamp: ts, sign: createHmac('sha256', secret).update(`${ts}\n${secret}`).digest('base64') },
  body: '{"text":{"content":"status"}}',
});

describe('Slack', () => {
  it('accepts Slack’s own signing example', () => {
    expect(verifySlack(slackReq(), SLACK_SECRET, SLACK_NOW)).toMatchObject({ ok: true, body: SLACK_BODY });
  });

  it.each([
    [
      'stale',
      slackReq(),
      Number(SLACK_TS) + 301,
      /^stale: X-Slack-Request-Timestamp 1531420618 is 301 s from now \(window 300 s\)$/,
    ],
    ['from the future', slackReq(), Number(SLACK_TS) - 301, /^stale: /],
    ['unsigned', slackReq({ 'x-slack-signature': undefined }), SLACK_NOW, /^missing header X-Slack-Signature$/],
    [
      'without a timestamp',
      slackReq({ 'x-slack-request-timestamp': undefined }),
      SLACK_NOW,
      /^missing header X-Slack-Request-Timestamp$/,
    ],
    [
      'with another prefix',
      slackReq({ 'x-slack-signature': SLACK_SIG.replace('v0=', 'v1=') }),
      SLACK_NOW,
      /^X-Slack-Signature must start with "v0="/,
    ],
    ['with another body', slackReq({}, SLACK_BODY.replace('roadrunner', 'coyote')), SLACK_NOW, /^bad signature: /],
  ])('refuses a request %s, saying why', (_what, req, now, reason) => {
    const v = verifySlack(req, SLACK_SECRET, now);
    expect(v.ok).toBe(false);
    expect(v.ok ? '' : v.reason).toMatch(reason);
  });
});

describe('Feishu / Lark', () => {
  it('decrypts Feishu’s own encryption example', () => {
    expect(feishuDecrypt('P37w+VZImNgPEO1RBhJ6RtKl7n6zymIbEG1pReEzghk=', 'test key')).toBe('hello world');
  });

  it('accepts a signed, encrypted event with the right token, and the unsigned URL challenge', () => {
    const v = verifyFeishu(feishuReq(feishuEvent), FEISHU, 1_700_000_010);
    expect(v).toMatchObject({ ok: true });
    expect(JSON.parse(v.ok ? v.body : '{}')).toEqual(feishuEvent);
    const challenge = {
      body: JSON.stringify({
        encrypt: feishuEncrypt(
          JSON.stringify({ challenge: 'c-1', token: 'v-token', type: 'url_verification' }),
          'test key',
        ),
      }),
      headers: {},
    };
    expect(verifyFeishu(challenge, FEISHU, 1_700_000_010)).toMatchObject({ ok: true });
  });

  it.each([
    [
      'with another token',
      feishuReq({ ...feishuEvent, header: { ...feishuEvent.header, token: 'other' } }),
      /^bad verification token/,
    ],
    ['encrypted with another key', feishuReq(feishuEvent, '1700000000', 'n-1', 'other key'), /^bad signature: /],
    ['stale', feishuReq(feishuEvent, '1699999000'), /^stale: /],
    [
      'without its signature headers (only the URL challenge comes unsigned)',
      { ...feishuReq(feishuEvent), headers: {} },
      /^missing header X-Lark-Signature/,
    ],
  ])('refuses an event %s', (_what, req, reason) => {
    const v = verifyFeishu(req, FEISHU, 1_700_000_010);
    expect(v.ok ? '' : v.reason).toMatch(reason);
  });
});

describe('DingTalk', () => {
  it('accepts a robot callback signed with the app secret within the hour, refuses a stale or forged one', () => {
    expect(verifyDingTalk(dtReq(), DT_SECRET, 1_700_000_000_000 + 60_000)).toMatchObject({ ok: true });
    const stale = verifyDingTalk(dtReq(), DT_SECRET, 1_700_000_000_000 + 3_600_001);
    expect(stale.ok ? '' : stale.reason).toMatch(/^stale: timestamp 1700000000000 is 3600 s from now/);
    const forged = verifyDingTalk(dtReq('1700000000000', 'guess'), DT_SECRET, 1_700_000_000_000);
    expect(forged.ok ? '' : forged.reason).toMatch(/^bad signature/);
  });

  it('says which secret is missing', () => {
    const v = verifyChatRequest('dingtalk', dtReq(), {}, 0);
    expect(v.ok ? '' : v.reason).toBe('no DingTalk app secret is configured (CHAT_DINGTALK_APP_SECRET)');
  });
});

describe('forgeries (fast-check over mutations)', () => {
  const flip = (s: string, i: number, c: string) =>
    s.length === 0 ? c : s.slice(0, i % s.length) + c + s.slice((i % s.length) + 1);
  const changed = (a: string, b: string) => a !== b;

  it('Slack: any change to the body, timestamp or signature is refused', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('body', 'x-slack-request-timestamp', 'x-slack-signature'),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 1 }),
        (field, i, c) => {
          const req = slackReq();
          const mutated =
            field === 'body'
              ? { ...req, body: flip(req.body, i, c) }
              : { ...req, headers: { ...req.headers, [field]: flip(req.headers[field]!, i, c) } };
          fc.pre(changed(JSON.stringify(mutated), JSON.stringify(req)));
          expect(verifySlack(mutated, SLACK_SECRET, SLACK_NOW).ok).toBe(false);
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });

  it('Feishu: any change to the body, timestamp, nonce or signature is refused', () => {
    const req = feishuReq(feishuEvent);
    fc.assert(
      fc.property(
        fc.constantFrom('body', 'x-lark-request-timestamp', 'x-lark-request-nonce', 'x-lark-signature'),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 1 }),
        (field, i, c) => {
          const mutated =
            field === 'body'
              ? { ...req, body: flip(req.body, i, c) }
              : { ...req, headers: { ...req.headers, [field]: flip(req.headers[field]!, i, c) } };
          fc.pre(changed(JSON.stringify(mutated), JSON.stringify(req)));
          expect(verifyFeishu(mutated, FEISHU, 1_700_000_010).ok).toBe(false);
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });

  it('DingTalk: any change to the timestamp or sign is refused', () => {
    const req = dtReq();
    fc.assert(
      fc.property(
        fc.constantFrom('timestamp', 'sign'),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 1 }),
        (field, i, c) => {
          const mutated = { ...req, headers: { ...req.headers, [field]: flip(req.headers[field]!, i, c) } };
          fc.pre(changed(JSON.stringify(mutated), JSON.stringify(req)));
          expect(verifyDingTalk(mutated, DT_SECRET, 1_700_000_000_000).ok).toBe(false);
        },
      ),
      { seed: 7, numRuns: 300 },
    );
  });
});

describe('ReplayGuard', () => {
  it('accepts a signed request once within its window, again after it', () => {
    const g = new ReplayGuard();
    expect(g.accept('slack:v0=abc', 0, 300_000)).toBe(true);
    expect(g.accept('slack:v0=abc', 299_000, 300_000)).toBe(false);
    expect(g.accept('slack:v0=abc', 300_001, 300_000)).toBe(true);
    const small = new ReplayGuard(2);
    small.accept('a', 0, 1000);
    small.accept('b', 0, 1000);
    small.accept('c', 0, 1000);
    expect(small.accept('a', 1, 1000)).toBe(true);
    expect(small.accept('c', 1, 1000)).toBe(false);
  });
});
