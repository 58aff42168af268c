/**
 * A long DingTalk command end to end (issue #15), on the embedded stack with one virtual clock: a
 * signed robot callback through the local bus's HTTP API (serverless.yml's route) is answered
 * "working on it" at once, and chatops-worker (serverless.yml's rule on ChatOps Command Requested)
 * drains the node and posts the result to the conversation's sessionWebhook (a stand-in).
 */
import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatOpsCommandDetail } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { startChatStandIn, stormFleet, type ChatStandIn } from './chat-fixtures.ts';
import { startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const SECRET = 'dingtalk-app-secret';
const POOL = 'dt';
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

let session: ChatStandIn;
let stack: RemediationStack;
beforeAll(async () => {
  session = await startChatStandIn();
  const roles = join(mkdtempSync(join(tmpdir(), 'chatops-dingtalk-')), 'chatops.yaml');
  writeFileSync(
    roles,
    'roles:\n  - { match: { platform: dingtalk, user: staff-ops }, role: operator }\ndefault: viewer\n',
  );
  stack = await startRemediationStack({
    fleet: stormFleet(POOL, 2),
    clock,
    env: {
      CHAT_DINGTALK_APP_SECRET: SECRET,
      CHAT_DINGTALK_SESSION_WEBHOOK_PREFIX: `${session.url}/robot/sendBySession`,
      CHATOPS_CONFIG_FILE: roles,
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await session?.close();
});

/** A robot callback as DingTalk posts it: headers timestamp (ms) and sign, a JSON body with the conversation's sessionWebhook. */
async function callback(user: string, text: string): Promise<{ status: number; json: unknown }> {
  const ts = String(clock.now());
  const body = JSON.stringify({
    msgtype: 'text',
    text: { content: ` ${text}` },
    msgId: `msg-${ts}`,
    createAt: Number(ts),
    conversationType: '2',
    conversationId: 'cid-gpu-ops',
    conversationTitle: 'GPU ops',
    senderId: `$:LWCP_v1:$${user}`,
    senderNick: user,
    senderStaffId: user,
    chatbotUserId: 'bot',
    isInAtList: true,
    sessionWebhook: `${session.url}/robot/sendBySession?session=${ts}`,
    sessionWebhookExpiredTime: Number(ts) + 90 * 60_000,
  });
  const headers = {
    'content-type': 'application/json',
    timestamp: ts,
    sign: createHmac('sha256', SECRET).update(`${ts}\n${SECRET}`).digest('base64'),
  };
  const res = await fetch(`${stack.bus.httpUrl}/chat/dingtalk`, { method: 'POST', headers, body });
  return { status: res.status, json: await res.json() };
}

describe('a long DingTalk command', () => {
  it('is answered at once, then carried out by chatops-worker, which posts the result to the sessionWebhook', async () => {
    const target = `${POOL}-0`;
    const startedAt = clock.now();
    expect(await callback('staff-ops', `drain ${target}`)).toEqual({
      status: 200,
      json: { msgtype: 'text', text: { content: `working on it… (drain ${target}): the answer follows here` } },
    });
    expect(stack.sim.store.node(target)!.spec?.unschedulable).toBeFalsy();
    const worker: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'chatops-worker' && worker.push(d.result)));
    await stack.advance(0);
    stop();
    expect(worker).toEqual([
      { status: 'done', result: { answered: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-0)` } },
    ]);
    expect(session.posts).toEqual([
      {
        path: `/robot/sendBySession?session=${startedAt}`,
        json: { msgtype: 'text', text: { content: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-0)` } },
      },
    ]);
    expect(stack.sim.store.node(target)!.spec?.unschedulable).toBe(true);
    expect(
      stack
        .published('ChatOps Command')
        .map((e) => e.detail as ChatOpsCommandDetail)
        .filter((d) => d.command === 'drain'),
    ).toEqual([
      expect.objectContaining({
        user: expect.objectContaining({ platform: 'dingtalk', id: 'staff-ops' }),
        channel: 'cid-gpu-ops',
      }),
    ]);
  });
});
