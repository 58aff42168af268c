/**
 * A long Feishu command end to end (issue #15), on the embedded stack with one virtual clock: an
 * encrypted, signed event callback through the local bus's HTTP API (serverless.yml's route) is
 * answered with a 200 at once, saying nothing through Feishu's API (a slow API must not hold it), and
 * chatops-worker (serverless.yml's rule on ChatOps Command Requested) replies "working on it", drains
 * the node and replies to the message through a stand-in of Feishu's message API. Feishu re-sending the event, signed anew, changes nothing.
 */
import { createCipheriv, createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatOpsCommandDetail } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { stormFleet } from './chat-fixtures.ts';
import { startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const TOKEN = 'feishu-verification-token';
const KEY = 'feishu-encrypt-key';
const POOL = 'fs';
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

/** Feishu's open platform as the replier calls it: a tenant token, then replies to messages. */
const replies: { messageId: string; text: string; uuid?: string; bearer?: string }[] = [];
const api = createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    const json = JSON.parse(body) as Record<string, unknown>;
    res.setHeader('content-type', 'application/json');
    if (req.url === '/open-apis/auth/v3/tenant_access_token/internal') {
      const ok = json.app_id === 'cli_gpu' && json.app_secret === 'app-secret';
      return res.end(
        JSON.stringify(
          ok
            ? { code: 0, msg: 'ok', tenant_access_token: 't-123', expire: 7200 }
            : { code: 10014, msg: 'app secret invalid' },
        ),
      );
    }
    const m = /^\/open-apis\/im\/v1\/messages\/([^/]+)\/reply$/.exec(req.url ?? '');
    if (!m) return res.end(JSON.stringify({ code: 404, msg: 'no such api' }));
    replies.push({
      messageId: decodeURIComponent(m[1]!),
      text: (JSON.parse(String(json.content)) as { text: string }).text,
      ...(typeof json.uuid === 'string' ? { uuid: json.uuid } : {}),
      bearer: req.headers.authorization,
    });
    res.end(JSON.stringify({ code: 0, msg: 'success', data: {} }));
  });
});

let stack: RemediationStack;
beforeAll(async () => {
  await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
  const roles = join(mkdtempSync(join(tmpdir(), 'chatops-feishu-')), 'chatops.yaml');
  writeFileSync(roles, 'roles:\n  - { match: { platform: feishu, user: ou_ops }, role: operator }\ndefault: viewer\n');
  stack = await startRemediationStack({
    fleet: stormFleet(POOL, 2),
    clock,
    env: {
      CHAT_FEISHU_VERIFICATION_TOKEN: TOKEN,
      CHAT_FEISHU_ENCRYPT_KEY: KEY,
      CHAT_FEISHU_APP_ID: 'cli_gpu',
      CHAT_FEISHU_APP_SECRET: 'app-secret',
      CHAT_FEISHU_API_URL: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
      CHATOPS_CONFIG_FILE: roles,
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await new Promise((r) => api.close(r));
});

/** An im.message.receive_v1 event as Feishu sends it with an Encrypt Key: encrypted, and signed per delivery. */
function encrypted(user: string, text: string, eventId: string): string {
  const event = {
    schema: '2.0',
    header: {
      event_id: eventId,
      token: TOKEN,
      create_time: String(clock.now()),
      event_type: 'im.message.receive_v1',
      tenant_key: 'tk',
      app_id: 'cli_gpu',
    },
    event: {
      sender: { sender_id: { open_id: user }, sender_type: 'user' },
      message: {
        message_id: `om_${eventId}`,
        chat_id: 'oc_gpu_ops',
        chat_type: 'group',
        message_type: 'text',
        content: JSON.stringify({ text: `@_user_1 ${text}` }),
      },
    },
  };
  const iv = randomBytes(16);
  const c = createCipheriv('aes-256-cbc', createHash('sha256').update(KEY).digest(), iv);
  return JSON.stringify({
    encrypt: Buffer.concat([iv, c.update(JSON.stringify(event), 'utf8'), c.final()]).toString('base64'),
  });
}
async function deliver(body: string, nonce: string): Promise<{ status: number; text: string }> {
  const ts = String(Math.floor(clock.now() / 1000));
  const headers = {
    'content-type': 'application/json',
    'x-lark-request-timestamp': ts,
    'x-lark-request-nonce': nonce,
    'x-lark-signature': createHash('sha256')
      .update(ts + nonce + KEY + body)
      .digest('hex'),
  };
  const res = await fetch(`${stack.bus.httpUrl}/chat/feishu`, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}

describe('a long Feishu command within Feishu’s 3 seconds', () => {
  it('is acknowledged at once, then carried out by chatops-worker, which replies to the message', async () => {
    const target = `${POOL}-1`;
    const body = encrypted('ou_ops', `drain ${target}`, 'ev-drain-1');
    expect(await deliver(body, 'n-1')).toEqual({ status: 200, text: '{}' });
    // The callback says nothing through Feishu's API: a slow API never holds the acknowledgement.
    expect(replies).toEqual([]);
    expect(stack.sim.store.node(target)!.spec?.unschedulable).toBeFalsy();

    const worker: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'chatops-worker' && worker.push(d.result)));
    await stack.advance(0);
    stop();
    expect(worker).toEqual([
      { status: 'done', result: { answered: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-1)` } },
    ]);
    expect(replies).toEqual([
      {
        messageId: 'om_ev-drain-1',
        text: `working on it… (drain ${target}): the answer follows here`,
        uuid: 'ev-drain-1:ack',
        bearer: 'Bearer t-123',
      },
      {
        messageId: 'om_ev-drain-1',
        text: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-1)`,
        uuid: 'ev-drain-1',
        bearer: 'Bearer t-123',
      },
    ]);
    expect(stack.sim.store.node(target)!.spec?.unschedulable).toBe(true);

    // Feishu re-sends the event 15 s later (it keeps its event_id; the delivery is signed anew): acknowledged, nothing more.
    await stack.advance(15_000);
    expect(await deliver(body, 'n-2')).toEqual({ status: 200, text: '{}' });
    await stack.advance(0);
    expect(replies).toHaveLength(2);
    expect(stack.published('ChatOps Command Requested')).toHaveLength(1);
    expect(
      stack
        .published('ChatOps Command')
        .map((e) => e.detail as ChatOpsCommandDetail)
        .filter((d) => d.command === 'drain'),
    ).toEqual([
      expect.objectContaining({
        user: expect.objectContaining({ platform: 'feishu', id: 'ou_ops' }),
        channel: 'oc_gpu_ops',
      }),
    ]);
  });
});
