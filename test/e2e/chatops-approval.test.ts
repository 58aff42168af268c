/**
 * The approval flow end to end through chat (issue #15), on the embedded stack with one virtual
 * clock: an XID storm holds nodes back at the blast-radius limit; each approval request reaches
 * chat through the Notifier (the functions' WebhookNotifier posting to a Slack incoming-webhook
 * stand-in) with the id to answer; an operator answers `approve ID` through the signed webhook;
 * `remediate-approve` carries the held action out once — a double click (two approvals before
 * either is acted on) and a later third click do nothing more; an expired approval answers so.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REMEDIATION } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import type { ApprovalRecord } from '../../functions/lib/approvals.ts';
import { STATE_LABEL } from '../../functions/remediate/core/state.ts';
import { xidEvent } from '../../node-agent/events.ts';
import { slackClient, type SlackClient } from './chat-client.ts';
import {
  isOut,
  operatorRoles,
  startChatStandIn,
  stormFleet,
  stormGpu as gpu,
  type ChatStandIn,
} from './chat-fixtures.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const SECRET = 'slack-signing-secret-for-tests';
const POOL = 'appr';
const SIZE = 6;
const FAILING = 3;
const TTL_MINUTES = 30;
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

const FLEET = stormFleet(POOL, SIZE);

/** What the functions posted to chat (Slack incoming-webhook bodies). */
let hook: ChatStandIn;
const chat = { map: <T>(f: (m: { text: string }) => T) => hook.posts.map((p) => f(p.json as { text: string })) };
let stack: RemediationStack;
let slack: SlackClient;

beforeAll(async () => {
  hook = await startChatStandIn();
  const roles = operatorRoles('chatops-approval-');
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
      CHAT_WEBHOOK_URL: `${hook.url}/hook`,
    },
  });
  slack = slackClient(stack.bus.httpUrl!, SECRET, () => clock.now());
});
afterAll(async () => {
  await stack?.close();
  await hook?.close();
});

function approval(id: string): ApprovalRecord {
  const cm = stack.sim.store.get('configmaps', NAMESPACE, 'gpu-reflex-state-approvals') as
    { data?: Record<string, string> } | undefined;
  return JSON.parse(cm?.data?.[`approval.${id}`] ?? 'null') as ApprovalRecord;
}
const node = (name: string) => stack.sim.store.node(name)!;
const reportsFor = (n: string) =>
  stack.published(REMEDIATION).filter((e) => (e.detail as { target: { node: string } }).target.node === n);

describe('an approval request answered in chat', () => {
  it('reaches chat with its id, is carried out once when an operator approves it, and says so when clicked again or expired', async () => {
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
    const [a, c] = held as [string, string];

    // Each request is in chat, naming its node and the id to answer with; that id is the store's.
    const asks = chat
      .map((m) => /drain-node on node (\S+) needs approval.*Answer "approve (apr-[a-z0-9-]+)"/s.exec(m.text))
      .filter((m) => m !== null);
    expect(asks.map((m) => m[1]).sort()).toEqual([...held].sort());
    const idOf = new Map(asks.map((m) => [m[1]!, m[2]!]));
    const [idA, idC] = [idOf.get(a)!, idOf.get(c)!];
    expect(approval(idA)).toMatchObject({ node: a, status: 'open' });

    // A viewer may not decide; a dry run decides nothing.
    expect((await slack.command('U-VIEW', `approve ${idA}`)).text).toBe(
      'not allowed: approve needs the operator role; slack user U-VIEW has only viewer',
    );
    expect((await slack.command('U-OPS', `approve ${idA} --dry-run`)).text).toBe(
      `dry run: would have approved ${idA} (drain-node on ${a})`,
    );
    await stack.advance(0);
    expect(approval(idA).status).toBe('open');
    expect(isOut(node(a))).toBe(false);

    // A double click: both answers go out before either is acted on; the action happens once.
    const before = reportsFor(a).length;
    const first = await slack.command('U-OPS', `approve ${idA}`);
    const second = await slack.command('U-OPS', `approve ${idA}`);
    expect(first.text).toBe(
      `approved ${idA} (drain-node on ${a}): remediate-approve carries it out, once however often it is clicked`,
    );
    expect(second.text).toBe(first.text);
    const results: unknown[] = [];
    const stop = stack.bus.on('delivered', (d) => void (d.function === 'remediate-approve' && results.push(d.result)));
    await stack.advance(0);
    stop();
    expect(results).toEqual([
      { status: 'done', result: expect.objectContaining({ result: 'closed', status: 'approved-applied' }) },
      { status: 'done', result: expect.objectContaining({ result: 'already-decided' }) },
    ]);
    expect(approval(idA)).toMatchObject({ status: 'approved-applied', decidedBy: 'slack:U-OPS' });
    expect(isOut(node(a))).toBe(true);
    expect(reportsFor(a)).toHaveLength(before + 1);

    // A later click is answered from the store and sends nothing.
    const decided = stack.published('Approval Decided').length;
    expect((await slack.command('U-OPS', `approve ${idA}`)).text).toBe(
      `${idA} is already approved-applied by slack:U-OPS: nothing more done`,
    );
    expect(stack.published('Approval Decided')).toHaveLength(decided);

    // Past its TTL the other one has expired (the sweep closed it): chat says so and nothing moves.
    await stack.advance((TTL_MINUTES + 2) * 60_000);
    expect(approval(idC).status).toBe('expired');
    expect((await slack.command('U-OPS', `approve ${idC}`)).text).toBe(`${idC} is already expired: nothing more done`);
    expect((await slack.command('U-OPS', 'approve apr-0000dead')).text).toBe(
      'no approval apr-0000dead is waiting (unknown id): nothing done',
    );
    await stack.advance(0);
    expect(isOut(node(c))).toBe(false);
    expect(stack.published('Approval Decided')).toHaveLength(decided);
  });
});
