import { describe, expect, it } from 'vitest';
import { safeNotifier, WebhookNotifier, webhookBody } from './notifier.ts';
import { createLogger } from '../logger.ts';

const notice = { title: 'Node gpu-a100-07 drained', text: 'XID 79 on GPU 3', severity: 'critical' as const };

describe('notifier', () => {
  it.each([
    [
      'slack',
      {
        text: expect.stringContaining('Node gpu-a100-07 drained'),
        blocks: [{ type: 'section', text: { type: 'mrkdwn', text: expect.stringContaining('XID 79') } }],
      },
    ],
    ['dingtalk', { msgtype: 'text', text: { content: expect.stringContaining('XID 79') } }],
    ['feishu', { msg_type: 'text', content: { text: expect.stringContaining('XID 79') } }],
  ] as const)('speaks %s webhook JSON', (platform, shape) => {
    expect(webhookBody(platform, notice)).toEqual(shape);
  });

  it('gives a Slack approval request Approve and Deny buttons whose values are the commands they stand for', () => {
    const body = webhookBody('slack', { ...notice, approval: { id: 'apr-7f3c9a12' } }) as {
      blocks: { type: string; elements?: { type: string; value: string; action_id: string }[] }[];
    };
    const actions = body.blocks.find((b) => b.type === 'actions');
    expect(actions?.elements?.map((e) => [e.type, e.action_id, e.value])).toEqual([
      ['button', 'gpu-reflex-approve', 'approve apr-7f3c9a12'],
      ['button', 'gpu-reflex-deny', 'deny apr-7f3c9a12'],
    ]);
    // Other platforms have no buttons: their text says "approve ID".
    expect(JSON.stringify(webhookBody('dingtalk', { ...notice, approval: { id: 'apr-7f3c9a12' } }))).not.toContain(
      'button',
    );
  });

  it('posts to the webhook and reports a refusal', async () => {
    const calls: [string, RequestInit | undefined][] = [];
    const ok = new WebhookNotifier('slack', 'http://127.0.0.1:1/hook', (async (u: string, i?: RequestInit) => {
      calls.push([u, i]);
      return new Response('ok');
    }) as typeof fetch);
    await ok.notify(notice);
    expect(JSON.parse(String(calls[0]![1]!.body))).toEqual(webhookBody('slack', notice));
    const refused = new WebhookNotifier(
      'slack',
      'http://127.0.0.1:1/hook',
      (async () => new Response('no', { status: 500 })) as typeof fetch,
    );
    await expect(refused.notify(notice)).rejects.toThrow('slack webhook answered 500');
  });

  it('never lets a notification failure escape, and logs it', async () => {
    const lines: Record<string, unknown>[] = [];
    const n = safeNotifier(
      {
        notify: async () => {
          throw new Error('chat down');
        },
      },
      createLogger({ service: 't', sink: (l) => lines.push(l) }),
    );
    await expect(n.notify(notice)).resolves.toBeUndefined();
    expect(lines[0]).toMatchObject({ level: 'warn', message: 'notification failed', error: { message: 'chat down' } });
  });
});
