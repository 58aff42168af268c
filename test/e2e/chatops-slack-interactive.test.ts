/**
 * Slack's interactive side end to end (issue #15), on the embedded stack with one virtual clock: an
 * approval request reaches a stand-in Slack with Approve / Deny buttons; a signed block_actions
 * press through the local bus's HTTP API decides it; remediate-approve acts once however often it
 * is pressed; the message is rewritten at the response_url to say who decided; a viewer's press and
 * an expired request are answered so. A long slash command is answered "working on it" and
 * chatops-worker (serverless.yml's rule on ChatOps Command Requested) does it and posts the result
 * to the request's response_url.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatOpsCommandDetail } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import type { ApprovalRecord } from '../../functions/lib/approvals.ts';
import { STATE_LABEL } from '../../functions/remediate/core/state.ts';
import { xidEvent } from '../../node-agent/events.ts';
import {
  isOut,
  operatorRoles,
  startChatStandIn,
  stormFleet,
  stormGpu as gpu,
  type ChatStandIn,
} from './chat-fixtures.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';
import { evicted } from './evicted.ts';

const SECRET = 'slack-signing-secret-for-tests';
const POOL = 'btn';
const SIZE = 6;
const FAILING = 3;
const TTL_MINUTES = 30;
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

const FLEET = stormFleet(POOL, SIZE);

/** The stand-in Slack: incoming-webhook posts (/hook) and response_url posts (/response/…). */
let hook: ChatStandIn;
let base: string;
let stack: RemediationStack;

beforeAll(async () => {
  hook = await startChatStandIn();
  base = hook.url;
  const roles = operatorRoles('chatops-interactive-');
  stack = await startRemediationStack({
    fleet: FLEET,
    clock,
    policy: {
      blastRadius: { maxShare: 1, maxCount: 1, windowMinutes: 120 },
      approvals: { ttlMinutes: TTL_MINUTES, approvers: [] },
    },
    env: {
      CHAT_SLACK_SIGNING_SECRET: SECRET,
      CHATOPS_CONFIG_FILE: roles,
      CHAT_PLATFORM: 'slack',
      CHAT_WEBHOOK_URL: `${base}/hook`,
      CHAT_SLACK_RESPONSE_URL_PREFIX: `${base}/response/`,
    },
  });
});
afterAll(async () => {
  await stack?.close();
  await hook?.close();
});

let seq = 0;
/** A form body signed as Slack signs it, at the stack's virtual time, through serverless.yml's route. */
async function signedPost(body: string): Promise<{ status: number; text: string }> {
  const ts = Math.floor(clock.now() / 1000);
  const headers = {
    'content-type': 'application/x-www-form-urlencoded',
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
  };
  const res = await fetch(`${stack.bus.httpUrl}/chat/slack`, { method: 'POST', headers, body });
  return { status: res.status, text: await res.text() };
}
/** A press of a button as Slack posts it (block_actions), its response_url on the stand-in. */
function press(user: string, button: { action_id: string; value: string }, responseUrl: string) {
  const payload = {
    type: 'block_actions',
    user: { id: user, username: user.toLowerCase(), team_id: 'T0' },
    channel: { id: 'C-GPU', name: 'gpu-ops' },
    container: { type: 'message', channel_id: 'C-GPU', message_ts: '1795317480.000100' },
    response_url: `${base}${responseUrl}`,
    trigger_id: `t-${seq}`,
    actions: [
      {
        type: 'button',
        block_id: 'b',
        action_id: button.action_id,
        value: button.value,
        action_ts: `1795317480.${seq++}`,
      },
    ],
  };
  return signedPost(new URLSearchParams({ payload: JSON.stringify(payload) }).toString());
}
const at = (path: string) => hook.posts.filter((p) => p.path === path).map((p) => p.json);
function approval(id: string): ApprovalRecord {
  const cm = stack.sim.store.get('configmaps', NAMESPACE, 'gpu-reflex-state-approvals') as
    { data?: Record<string, string> } | undefined;
  return JSON.parse(cm?.data?.[`approval.${id}`] ?? 'null') as ApprovalRecord;
}
const node = (name: string) => stack.sim.store.node(name)!;

describe('Slack buttons on approval requests', () => {
  it('decide once however often pressed, rewrite the message to say who, and answer viewers and late presses so', async () => {
    const failing = Array.from({ length: FAILING }, (_, i) => `${POOL}-${i}`);
    await stack.send(
      failing.map((n, i) =>
        xidEvent(n, clock.now(), {
          gpu: gpu(i),
          xid: 79,
          via: 'nvml',
          pid: null,
          process: null,
          message: 'NVRM: Xid 79, GPU has fallen off the bus.',
          podUids: [],
        }),
      ),
    );
    await stack.advance(0);
    const held = failing.filter((n) => node(n).metadata.labels?.[STATE_LABEL] === 'awaiting-approval');
    expect(held).toHaveLength(FAILING - 1);

    // Each request reached Slack with two buttons naming its id.
    type Block = { type: string; elements?: { type: string; action_id: string; value: string }[] };
    const requests = at('/hook').filter((m) => (m.blocks as Block[] | undefined)?.some((b) => b.type === 'actions'));
    const buttons = new Map(
      requests.map((m) => {
        const els = (m.blocks as Block[]).find((b) => b.type === 'actions')!.elements!;
        return [/on node (\S+) needs approval/.exec(String(m.text))![1]!, els] as const;
      }),
    );
    expect([...buttons.keys()].sort()).toEqual([...held].sort());
    const [a, c] = held as [string, string];
    const [approveA] = buttons.get(a)!;
    const id = /apr-[a-z0-9-]+/.exec(approveA!.value)![0];
    expect(buttons.get(a)!.map((e) => [e.type, e.value])).toEqual([
      ['button', `approve ${id}`],
      ['button', `deny ${id}`],
    ]);
    expect(approval(id)).toMatchObject({ node: a, status: 'open' });

    // A viewer's press: only they are told; nothing decided.
    expect(await press('U-VIEW', approveA!, '/response/viewer')).toEqual({ status: 200, text: '' });
    expect(at('/response/viewer')).toEqual([
      {
        response_type: 'ephemeral',
        replace_original: false,
        text: 'not allowed: approve needs the operator role; slack user U-VIEW has only viewer',
      },
    ]);
    await stack.advance(0);
    expect(approval(id).status).toBe('open');
    expect(isOut(node(a))).toBe(false);

    // A double press before remediate-approve ran: the held drain happens once.
    const results: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'remediate-approve' && results.push(d.result)));
    expect((await press('U-OPS', approveA!, '/response/a')).status).toBe(200);
    expect((await press('U-OPS', approveA!, '/response/a')).status).toBe(200);
    await stack.advance(0);
    stop();
    expect(results).toEqual([
      { status: 'done', result: expect.objectContaining({ result: 'closed', status: 'approved-applied' }) },
      { status: 'done', result: expect.objectContaining({ result: 'already-decided' }) },
    ]);
    expect(approval(id)).toMatchObject({ status: 'approved-applied', decidedBy: 'slack:U-OPS' });
    expect(isOut(node(a))).toBe(true);
    // The request's message now says who decided, buttons gone.
    expect(at('/response/a')[0]).toEqual({
      response_type: 'in_channel',
      replace_original: true,
      text: expect.stringMatching(
        new RegExp(`^✅ ${id} approved by <@U-OPS>: approved ${id} \\(drain-node on ${a}\\)`),
      ),
    });

    // A later press is answered from the store, and sends nothing.
    const decided = stack.published('Approval Decided').length;
    await press('U-OPS', approveA!, '/response/late');
    expect(at('/response/late')).toEqual([
      {
        response_type: 'ephemeral',
        replace_original: false,
        text: `${id} is already approved-applied by slack:U-OPS: nothing more done`,
      },
    ]);

    // Past its TTL the other request has expired: a press says so and nothing moves.
    await stack.advance((TTL_MINUTES + 2) * 60_000);
    const [approveC] = buttons.get(c)!;
    await press('U-OPS', approveC!, '/response/c');
    expect(at('/response/c')).toEqual([
      {
        response_type: 'ephemeral',
        replace_original: false,
        text: expect.stringMatching(/^apr-[a-z0-9-]+ is already expired: nothing more done$/),
      },
    ]);
    await stack.advance(0);
    expect(isOut(node(c))).toBe(false);
    expect(stack.published('Approval Decided')).toHaveLength(decided);

    // Every press is a ChatOps Command on the bus.
    const said = stack
      .published('ChatOps Command')
      .map((e) => e.detail as ChatOpsCommandDetail)
      .filter((d) => d.command === 'approve');
    expect(said.map((d) => [d.user.id, d.channel])).toEqual([
      ['U-VIEW', 'C-GPU'],
      ['U-OPS', 'C-GPU'],
      ['U-OPS', 'C-GPU'],
      ['U-OPS', 'C-GPU'],
      ['U-OPS', 'C-GPU'],
    ]);
  });

  it('refuses a tampered press with 401 and decides nothing', async () => {
    const ts = Math.floor(clock.now() / 1000);
    const body = new URLSearchParams({
      payload: JSON.stringify({
        type: 'block_actions',
        user: { id: 'U-VIEW' },
        response_url: `${base}/response/x`,
        actions: [{ type: 'button', value: 'approve apr-0000dead' }],
      }),
    }).toString();
    const sig = `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`;
    const res = await fetch(`${stack.bus.httpUrl}/chat/slack`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-slack-request-timestamp': String(ts),
        'x-slack-signature': sig,
      },
      body: body.replace('U-VIEW', 'U-OPS'),
    });
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 401, body: '{"error":"unauthorized"}' });
    expect(at('/response/x')).toEqual([]);
  });
});

describe('a long slash command within Slack’s 3 seconds', () => {
  it('is answered at once, then carried out by chatops-worker, which posts the result to the response_url', async () => {
    const target = `${POOL}-5`;
    const body = new URLSearchParams({
      user_id: 'U-OPS',
      user_name: 'u-ops',
      channel_id: 'C-GPU',
      command: '/gpu',
      text: `drain ${target}`,
      response_url: `${base}/response/drain`,
      trigger_id: `t-${seq++}`,
    }).toString();
    const r = await signedPost(body);
    expect(r).toEqual({
      status: 200,
      text: JSON.stringify({
        response_type: 'ephemeral',
        text: `working on it… (drain ${target}): the answer follows here`,
      }),
    });
    const worker: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'chatops-worker' && worker.push(d.result)));
    await stack.advance(0);
    stop();
    expect(worker).toEqual([
      { status: 'done', result: { answered: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-5)` } },
    ]);
    expect(at('/response/drain')).toEqual([
      {
        response_type: 'ephemeral',
        replace_original: false,
        text: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-5)`,
      },
    ]);
    expect(node(target).spec?.unschedulable).toBe(true);
    expect(evicted(stack.sim.store.pod('ml', 'w-5')), 'ml/w-5 evicted').toBe(true);
    expect(stack.published('ChatOps Command Requested')).toHaveLength(1);
    expect(
      stack
        .published('ChatOps Command')
        .map((e) => e.detail as ChatOpsCommandDetail)
        .filter((d) => d.command === 'drain'),
    ).toEqual([
      expect.objectContaining({
        user: expect.objectContaining({ id: 'U-OPS' }),
        result: `cordoned and draining ${target}: evicting 1 pod(s) (ml/w-5)`,
      }),
    ]);
  });
});
