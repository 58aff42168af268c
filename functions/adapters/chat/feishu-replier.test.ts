import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manualClock } from '../clock.ts';
import { HttpFeishuReplier } from './feishu-replier.ts';

/** A stand-in Feishu open platform: issues tenant tokens, takes replies, can be told to refuse. */
const seen: { path: string; auth?: string; body: Record<string, unknown> }[] = [];
let issued = 0;
let refuse = false;
let server: Server;
let baseUrl: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      seen.push({
        path: req.url ?? '',
        ...(req.headers.authorization ? { auth: req.headers.authorization } : {}),
        body,
      });
      res.setHeader('content-type', 'application/json');
      if (req.url === '/open-apis/auth/v3/tenant_access_token/internal') {
        const ok = body.app_id === 'cli_a1' && body.app_secret === 's3cret';
        return res.end(
          JSON.stringify(
            ok
              ? { code: 0, msg: 'ok', tenant_access_token: `t-${++issued}`, expire: 7200 }
              : { code: 10014, msg: 'app secret invalid' },
          ),
        );
      }
      if (refuse) return res.end(JSON.stringify({ code: 230002, msg: 'bot not in chat' }));
      res.end(JSON.stringify({ code: 0, msg: 'success', data: { message_id: 'om_reply' } }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise((r) => server.close(r)));

describe('Feishu replies through the message API', () => {
  it('replies to the message with a tenant token it keeps until shortly before it expires', async () => {
    const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));
    const r = new HttpFeishuReplier({ appId: 'cli_a1', appSecret: 's3cret', baseUrl }, clock);
    await r.reply('om_asked', 'cordoned gpu-1', 'chat-1');
    await r.reply('om_asked2', 'uncordoned gpu-1');
    expect(seen.filter((s) => s.path.includes('tenant_access_token'))).toHaveLength(1);
    expect(seen.filter((s) => s.path.includes('/reply'))).toEqual([
      {
        path: '/open-apis/im/v1/messages/om_asked/reply',
        auth: 'Bearer t-1',
        body: { msg_type: 'text', content: '{"text":"cordoned gpu-1"}', uuid: 'chat-1' },
      },
      {
        path: '/open-apis/im/v1/messages/om_asked2/reply',
        auth: 'Bearer t-1',
        body: { msg_type: 'text', content: '{"text":"uncordoned gpu-1"}' },
      },
    ]);
    // 2 h less the margin later, a new token.
    await clock.advance(116 * 60_000);
    await r.reply('om_asked3', 'status');
    expect(seen.at(-1)).toMatchObject({ auth: 'Bearer t-2' });
  });

  it('takes a non-zero code as the failure it is', async () => {
    const clock = manualClock();
    await expect(
      new HttpFeishuReplier({ appId: 'cli_a1', appSecret: 'wrong', baseUrl }, clock).reply('om_x', 'hi'),
    ).rejects.toThrow(/code 10014: app secret invalid/);
    refuse = true;
    await expect(
      new HttpFeishuReplier({ appId: 'cli_a1', appSecret: 's3cret', baseUrl }, clock).reply('om_x', 'hi'),
    ).rejects.toThrow(/code 230002: bot not in chat/);
    refuse = false;
  });
});
