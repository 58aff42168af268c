/**
 * The webhook's Slack paths over fake ports (the real cores): button presses (block_actions), long
 * commands answered at once and carried out by the worker, and refusal of anything not signed,
 * fresh and new — fast-checked over mutations of an interactive payload.
 */
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  APPROVAL_DECIDED,
  CHATOPS_COMMAND,
  CHATOPS_COMMAND_REQUESTED,
  MIG_INVENTORY_ANNOTATION,
  type ChatOpsCommandRequestedDetail,
  type MigInventory,
} from '../../events/index.ts';
import { RecordingPublisher } from '../adapters/bus.ts';
import { RecordingNotifier } from '../adapters/chat/notifier.ts';
import { RecordingDingTalkSessionResponder } from '../adapters/chat/dingtalk-session.ts';
import { RecordingFeishuReplier } from '../adapters/chat/feishu-replier.ts';
import { RecordingSlackResponder } from '../adapters/chat/slack-response.ts';
import { manualClock, type ManualClock } from '../adapters/clock.ts';
import { fakeKube, type FakeKube } from '../adapters/kube/fake.ts';
import type { StateStore } from '../adapters/kube/ports.ts';
import { approvalKey, checkSeal } from '../lib/approval-seal.ts';
import { createLogger } from '../adapters/logger.ts';
import { TransientError } from '../adapters/errors.ts';
import { DEFAULT_MIG_REBALANCE_CONFIG } from '../mig/run.ts';
import { getApproval, MIG_APPROVALS_SHARD, recordApproval } from '../lib/approvals.ts';
import { DEFAULT_POLICY } from '../remediate/core/policy.ts';
import { memoryReplayGuard, REPLAY_SHARD, sharedReplayGuard } from './replay.ts';
import { parseChatOpsConfig } from './run.ts';
import { handleChatRequest, type AckDeps, type WebhookDeps } from './webhook.ts';
import { createChatHandler } from './handler.ts';
import { carryOutRequested, RESPONSE_URL_WINDOW_S } from './worker.ts';

const SECRET = 'slack-signing-secret-for-tests';
const HOOK = 'https://hooks.slack.com/actions/T0/1/abc';

const APPROVAL_KEY = approvalKey('a-webhook-test-approval-key-0000000', 'test');

function setup(shared?: { clock: ManualClock; kube: FakeKube }, o: { approvalKey?: boolean } = {}) {
  const clock = shared?.clock ?? manualClock(Date.parse('2026-11-21T03:00:00.000Z'));
  const kube = shared?.kube ?? fakeKube({ clock });
  if (!shared) kube.cluster.addNode({ name: 'gpu-0', allocatable: { 'nvidia.com/gpu': '8' } });
  if (!shared)
    kube.cluster.addPod({
      name: 'train',
      namespace: 'ml',
      nodeName: 'gpu-0',
      phase: 'Running',
      owner: { kind: 'Job', name: 'train' },
    } as never);
  const publisher = new RecordingPublisher();
  const responder = new RecordingSlackResponder();
  const logs: Record<string, unknown>[] = [];
  const deps: WebhookDeps = {
    kube,
    publisher,
    notifier: new RecordingNotifier(),
    clock,
    logger: createLogger({ service: 't', sink: (l) => logs.push(l) }),
    config: parseChatOpsConfig(
      'roles:\n  - { match: { platform: slack, user: U-OPS }, role: operator }\ndefault: viewer\n',
    ),
    secrets: { slackSigningSecret: SECRET },
    policy: DEFAULT_POLICY,
    mig: DEFAULT_MIG_REBALANCE_CONFIG,
    responder,
    replay: sharedReplayGuard(kube.state),
    ...(o.approvalKey === false ? {} : { approvalKey: async () => APPROVAL_KEY }),
  };
  const sign = (body: string, ts = Math.floor(clock.now() / 1000)) => ({
    'x-slack-request-timestamp': String(ts),
    'x-slack-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
  });
  const post = (body: string, headers: Record<string, string> = sign(body)) =>
    handleChatRequest(
      deps,
      { rawPath: '/chat/slack', pathParameters: { platform: 'slack' }, headers } as unknown as APIGatewayProxyEventV2,
      body,
    );
  let seq = 0;
  const press = (user: string, value: string) =>
    new URLSearchParams({
      payload: JSON.stringify({
        type: 'block_actions',
        user: { id: user, username: user.toLowerCase() },
        channel: { id: 'C-GPU' },
        container: { type: 'message', channel_id: 'C-GPU' },
        response_url: HOOK,
        actions: [{ type: 'button', action_id: 'gpu-reflex-approve', value, action_ts: String(seq++) }],
      }),
    }).toString();
  const slash = (user: string, text: string, responseUrl = HOOK) =>
    new URLSearchParams({
      user_id: user,
      user_name: user.toLowerCase(),
      channel_id: 'C-GPU',
      command: '/gpu',
      text,
      trigger_id: `t-${seq++}`,
      ...(responseUrl ? { response_url: responseUrl } : {}),
    }).toString();
  const open = (id: string) =>
    recordApproval(kube.state, {
      id,
      node: 'gpu-0',
      incident: 'inc-1',
      action: 'drain-node',
      scope: 'node',
      target: { gpus: [], pods: [] },
      requestedAt: new Date(clock.now()).toISOString(),
      expiresAt: new Date(clock.now() + 30 * 60_000).toISOString(),
      approvers: [],
      status: 'open',
    });
  const published = (t: string) => publisher.published.filter((e) => e.detailType === t);
  return { clock, kube, deps, publisher, responder, logs, post, press, slash, open, published, sign };
}

describe('Slack buttons', () => {
  it('runs an Approve press as "approve ID", and rewrites the request’s message to say who decided', async () => {
    const t = setup();
    await t.open('apr-0000beef');
    expect(await t.post(t.press('U-OPS', 'approve apr-0000beef'))).toEqual({ statusCode: 200 });
    expect(t.published(APPROVAL_DECIDED).map((e) => e.detail)).toEqual([
      expect.objectContaining({
        approvalId: 'apr-0000beef',
        decision: 'approved',
        decidedBy: { platform: 'slack', id: 'U-OPS', name: 'u-ops' },
      }),
    ]);
    expect(t.responder.sent).toEqual([
      {
        url: HOOK,
        message: {
          text: expect.stringMatching(
            /^✅ apr-0000beef approved by <@U-OPS>: approved apr-0000beef \(drain-node on gpu-0\)/,
          ),
          replaceOriginal: true,
          responseType: 'in_channel',
        },
      },
    ]);
    expect(t.published(CHATOPS_COMMAND).map((e) => e.detail)).toEqual([
      expect.objectContaining({
        user: expect.objectContaining({ id: 'U-OPS' }),
        channel: 'C-GPU',
        text: 'approve apr-0000beef',
        command: 'approve',
      }),
    ]);
    // Sealed, so remediate-approve can tell it from one anybody with bus access wrote (issue #29).
    expect(checkSeal(APPROVAL_KEY, t.published(APPROVAL_DECIDED)[0]!.detail as never)).toBe('valid');
  });

  it('decides nothing where the deployment has no approval key, and says why', async () => {
    const t = setup(undefined, { approvalKey: false });
    await t.open('apr-0000beef');
    await t.post(t.press('U-OPS', 'approve apr-0000beef'));
    expect(t.published(APPROVAL_DECIDED)).toEqual([]);
    expect(t.responder.sent.map((s) => s.message.text)).toEqual([
      expect.stringMatching(
        /cannot decide apr-0000beef: this deployment has no approval key \(GPU_REFLEX_APPROVAL_KEY_PARAMETER\)/,
      ),
    ]);
    expect((await getApproval(t.kube.state, 'apr-0000beef'))?.status).toBe('open');
  });

  it('says who decided a held plan though the bus refused the ChatOps Command record: logged, not a failure', async () => {
    const t = setup();
    await recordApproval(
      t.kube.state,
      {
        id: 'apr-mig-0000beef',
        node: 'gpu-0',
        incident: 'mig/gpu-0',
        action: 'mig-preempt',
        scope: 'gpu',
        target: { gpus: ['2'], pods: ['research/nb-c'] },
        requestedAt: new Date(t.clock.now()).toISOString(),
        expiresAt: new Date(t.clock.now() + 30 * 60_000).toISOString(),
        approvers: [],
        status: 'open',
        mig: { gpus: [2], preempts: ['research/nb-c'] },
      },
      MIG_APPROVALS_SHARD,
    );
    t.deps.publisher = {
      publish: async () => Promise.reject(new TransientError('PutEvents: the bus is unreachable')),
    };
    // The decision is made (closed in the store) before the record is published: a thrown press would leave the
    // buttons as they were, and a second press only say "already approved-applied" to the presser.
    expect(await t.post(t.press('U-OPS', 'approve apr-mig-0000beef'))).toEqual({ statusCode: 200 });
    expect(await getApproval(t.kube.state, 'apr-mig-0000beef', MIG_APPROVALS_SHARD)).toMatchObject({
      status: 'approved-applied',
      decidedBy: 'slack:U-OPS',
    });
    expect(t.responder.sent.map((s) => s.message)).toEqual([
      expect.objectContaining({
        text: expect.stringMatching(/^✅ apr-mig-0000beef approved by <@U-OPS>: approved apr-mig-0000beef: /),
        replaceOriginal: true,
      }),
    ]);
    expect(t.logs).toContainEqual(
      expect.objectContaining({
        level: 'error',
        message: 'ChatOps Command not published: the command was carried out',
        command: expect.objectContaining({ text: 'approve apr-mig-0000beef', command: 'approve' }),
      }),
    );
  });

  it('tells a viewer only, leaving the buttons for whoever may decide', async () => {
    const t = setup();
    await t.open('apr-0000beef');
    await t.post(t.press('U-VIEW', 'deny apr-0000beef'));
    expect(t.published(APPROVAL_DECIDED)).toEqual([]);
    expect(t.responder.sent.map((s) => s.message)).toEqual([
      { text: 'not allowed: deny needs the operator role; slack user U-VIEW has only viewer' },
    ]);
    expect((await getApproval(t.kube.state, 'apr-0000beef'))?.status).toBe('open');
  });

  it('answers a press on an expired request so, deciding nothing', async () => {
    const t = setup();
    await t.open('apr-0000beef');
    await t.clock.advance(31 * 60_000);
    await t.post(t.press('U-OPS', 'approve apr-0000beef'));
    expect(t.published(APPROVAL_DECIDED)).toEqual([]);
    expect(t.responder.sent.map((s) => s.message)).toEqual([
      { text: expect.stringMatching(/^apr-0000beef expired at .*: too late, nothing done/) },
    ]);
  });

  it('ignores a button it did not make', async () => {
    const t = setup();
    expect(await t.post(t.press('U-OPS', 'cordon gpu-0'))).toMatchObject({ statusCode: 200 });
    expect(t.publisher.published).toEqual([]);
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
  });

  it('refuses any change to a signed button press with 401 and no detail, and logs why (fast-check)', async () => {
    const t = setup();
    await t.open('apr-0000beef');
    const body = t.press('U-VIEW', 'approve apr-0000beef');
    const headers = t.sign(body);
    const flip = (s: string, i: number, c: string) =>
      s.slice(0, i % (s.length + 1)) + c + s.slice((i % (s.length + 1)) + 1);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('body', 'x-slack-request-timestamp', 'x-slack-signature'),
        fc.nat(),
        fc.string({ minLength: 1, maxLength: 1 }),
        async (field, i, c) => {
          const b = field === 'body' ? flip(body, i, c) : body;
          const h = field === 'body' ? headers : { ...headers, [field]: flip(headers[field], i, c) };
          fc.pre(b !== body || JSON.stringify(h) !== JSON.stringify(headers));
          const before = t.logs.length;
          expect(await t.post(b, h)).toMatchObject({ statusCode: 401, body: '{"error":"unauthorized"}' });
          expect(t.logs.slice(before)).toEqual([
            expect.objectContaining({
              level: 'warn',
              message: 'chat request refused',
              platform: 'slack',
              reason: expect.any(String),
            }),
          ]);
        },
      ),
      { numRuns: 200 },
    );
    expect(t.publisher.published).toEqual([]);
    expect(t.responder.sent).toEqual([]);
    // Stale (6 minutes old) and replayed presses too.
    const old = t.press('U-OPS', 'approve apr-0000beef');
    expect(await t.post(old, t.sign(old, Math.floor(t.clock.now() / 1000) - 360))).toMatchObject({ statusCode: 401 });
    const fresh = t.press('U-VIEW', 'approve apr-0000beef');
    const signed = t.sign(fresh);
    expect(await t.post(fresh, signed)).toEqual({ statusCode: 200 });
    expect(await t.post(fresh, signed)).toMatchObject({ statusCode: 401, body: '{"error":"unauthorized"}' });
  });
});

describe('Feishu replies', () => {
  const event = (text: string, id: string) =>
    JSON.stringify({
      schema: '2.0',
      header: { event_id: id, token: 'feishu-token', event_type: 'im.message.receive_v1' },
      event: {
        sender: { sender_id: { open_id: 'ou_view' } },
        message: { message_id: `om_${id}`, chat_id: 'oc_gpu', content: JSON.stringify({ text }) },
      },
    });
  const feishuPost = (t: ReturnType<typeof setup>, body: string) =>
    handleChatRequest(
      t.deps,
      {
        rawPath: '/chat/feishu',
        pathParameters: { platform: 'feishu' },
        headers: {},
      } as unknown as APIGatewayProxyEventV2,
      body,
    );

  /** chatops-worker carrying out what the webhook handed it (the bus's rule), once each. */
  const work = async (t: ReturnType<typeof setup>) => {
    for (const e of t.published(CHATOPS_COMMAND_REQUESTED))
      await carryOutRequested(t.deps, e.detail as ChatOpsCommandRequestedDetail);
  };

  it('answers the callback with a bare 200 at once; the worker answers through the message API, once per event', async () => {
    const t = setup();
    const feishu = new RecordingFeishuReplier();
    t.deps.secrets = { feishuVerificationToken: 'feishu-token' };
    t.deps.feishu = feishu;
    expect(JSON.parse(String((await feishuPost(t, event('status gpu-0', 'ev1'))).body))).toEqual({});
    // Nothing said in the callback: Feishu's API is not on the acknowledgement's path.
    expect(feishu.replies).toEqual([]);
    await work(t);
    expect(feishu.replies).toEqual([
      { messageId: 'om_ev1', text: 'gpu-0: Ready; gpu-reflex state healthy; 8 GPUs allocatable', uuid: 'ev1' },
    ]);
    // Feishu re-sending the same event: acknowledged (else it re-sends again), no second command, no second reply.
    expect((await feishuPost(t, event('status gpu-0', 'ev1'))).statusCode).toBe(200);
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toHaveLength(1);
    expect(feishu.replies).toHaveLength(1);
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
  });

  it('never waits for Feishu in the callback: an API that does not answer holds no acknowledgement', async () => {
    const t = setup();
    t.deps.secrets = { feishuVerificationToken: 'feishu-token' };
    const calls: string[] = [];
    // A Feishu API that never answers: awaiting it would hold the callback past Feishu's 3 s, and it re-sends.
    t.deps.feishu = { reply: (_m, text) => (calls.push(text), new Promise<void>(() => {})) };
    for (const [text, id] of [
      ['status gpu-0', 'ev-q'],
      ['status nope', 'ev-n'],
      ['drain', 'ev-u'],
    ] as const)
      expect((await feishuPost(t, event(text, id))).statusCode).toBe(200);
    expect(calls).toEqual([]);
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toHaveLength(3);
  });

  it('knows a re-sent encrypted event by its event_id, though Feishu signs each delivery anew', async () => {
    const t = setup();
    const feishu = new RecordingFeishuReplier();
    const key = 'encrypt-key';
    t.deps.secrets = { feishuVerificationToken: 'feishu-token', feishuEncryptKey: key };
    t.deps.feishu = feishu;
    const encrypt = (json: string) => {
      const iv = randomBytes(16);
      const c = createCipheriv('aes-256-cbc', createHash('sha256').update(key).digest(), iv);
      return Buffer.concat([iv, c.update(json, 'utf8'), c.final()]).toString('base64');
    };
    const body = JSON.stringify({ encrypt: encrypt(event('status gpu-0', 'ev9')) });
    const deliver = (after: number, nonce: string) => {
      const ts = String(Math.floor(t.clock.now() / 1000) + after);
      const headers = {
        'x-lark-request-timestamp': ts,
        'x-lark-request-nonce': nonce,
        'x-lark-signature': createHash('sha256')
          .update(ts + nonce + key + body)
          .digest('hex'),
      };
      return handleChatRequest(
        t.deps,
        {
          rawPath: '/chat/feishu',
          pathParameters: { platform: 'feishu' },
          headers,
        } as unknown as APIGatewayProxyEventV2,
        body,
      );
    };
    expect((await deliver(0, 'n-1')).statusCode).toBe(200);
    t.clock.advance(15_000);
    expect((await deliver(15, 'n-2')).statusCode).toBe(200);
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toHaveLength(1);
    await work(t);
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
    expect(feishu.replies).toHaveLength(1);
  });

  it('a Feishu API that is down fails only the answer: the callback is acknowledged, the command ran', async () => {
    const t = setup();
    t.deps.secrets = { feishuVerificationToken: 'feishu-token' };
    t.deps.feishu = { reply: async () => Promise.reject(new Error('feishu down')) };
    expect((await feishuPost(t, event('status', 'ev2'))).statusCode).toBe(200);
    await expect(work(t)).rejects.toThrow('feishu down');
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
  });
});

describe('the replay guard across containers', () => {
  it('lets only one of two webhook containers accept one signed request, and forgets it after its window', async () => {
    const a = setup();
    const b = setup({ clock: a.clock, kube: a.kube });
    await a.open('apr-0000beef');
    const body = a.press('U-VIEW', 'approve apr-0000beef');
    const headers = a.sign(body);
    expect(await a.post(body, headers)).toEqual({ statusCode: 200 });
    expect(await b.post(body, headers)).toMatchObject({ statusCode: 401, body: '{"error":"unauthorized"}' });
    expect(b.logs).toContainEqual(
      expect.objectContaining({
        level: 'warn',
        message: 'chat request refused',
        reason: 'replayed: this signed request was already accepted',
      }),
    );
    expect(a.responder.sent).toHaveLength(1);
    expect(b.responder.sent).toEqual([]);
    // Both at once: still one.
    const again = a.press('U-VIEW', 'approve apr-0000beef');
    const h = a.sign(again);
    const answers = await Promise.all([a.post(again, h), b.post(again, h)]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 401]);
    // Past the window the keys are dropped as new requests come: the shard does not grow.
    await a.clock.advance(11 * 60_000);
    const later = a.press('U-VIEW', 'approve apr-0000beef');
    expect(await b.post(later)).toEqual({ statusCode: 200 });
    const store: StateStore = a.kube.state;
    const kept = Object.keys(await (store.shard?.(REPLAY_SHARD) ?? store).getAll()).filter((k) =>
      k.startsWith('replay.'),
    );
    expect(kept).toHaveLength(1);
  });
});

describe('Slack’s 3 seconds', () => {
  it('answers a long command at once and leaves it, as Slack signed it, for the worker, which does it and answers at the response_url', async () => {
    const t = setup();
    const body = t.slash('U-OPS', 'drain gpu-0');
    const r = await t.post(body);
    expect(JSON.parse(String(r.body))).toEqual({
      response_type: 'ephemeral',
      text: 'working on it… (drain gpu-0): the answer follows here',
    });
    // Nothing was done in the request: no cordon, no eviction, no ChatOps Command yet.
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.published(CHATOPS_COMMAND)).toEqual([]);
    const [req] = t.published(CHATOPS_COMMAND_REQUESTED);
    const detail = req!.detail as ChatOpsCommandRequestedDetail;
    expect(detail.request.body).toBe(body);

    await t.clock.advance(2_000);
    expect(await carryOutRequested(t.deps, detail)).toEqual({
      answered: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)',
    });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBe(true);
    expect(t.responder.sent).toEqual([
      { url: HOOK, message: { text: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)' } },
    ]);
    expect(t.published(CHATOPS_COMMAND).map((e) => e.detail)).toEqual([
      expect.objectContaining({
        command: 'drain',
        result: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)',
      }),
    ]);
    // The bus delivering it again (to another container, over the same store): not done twice.
    const other = { ...t.deps, replay: sharedReplayGuard(t.kube.state) };
    expect(await carryOutRequested(other, detail)).toEqual({ refused: 'already carried out' });
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
    expect(t.responder.sent).toHaveLength(1);
  });

  it.each([
    [
      'a viewer’s long command is refused',
      'U-VIEW',
      'drain gpu-0',
      HOOK,
      'not allowed: drain needs the operator role; slack user U-VIEW has only viewer',
    ],
    ['a quick command', 'U-VIEW', 'status gpu-0', HOOK, 'gpu-0: Ready; gpu-reflex state healthy; 8 GPUs allocatable'],
    ['a usage error', 'U-OPS', 'drain', HOOK, 'expected one node name, got 0. Usage: drain NODE [--dry-run]'],
    [
      'a request without response_url (nowhere to answer later)',
      'U-OPS',
      'drain gpu-0 --dry-run',
      '',
      'dry run: would have cordoned and drained gpu-0: would evict 1 pod(s) (ml/train)',
    ],
  ])('answers in the request: %s', async (_what, user, text, url, want) => {
    const t = setup();
    expect(JSON.parse(String((await t.post(t.slash(user, text, url))).body))).toEqual({
      response_type: 'ephemeral',
      text: want,
    });
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toEqual([]);
  });

  it('the worker believes only what Slack signed, and not after the response_url has lapsed', async () => {
    const t = setup();
    const body = t.slash('U-VIEW', 'drain gpu-0');
    const h = t.sign(body);
    const forged: ChatOpsCommandRequestedDetail = {
      schemaVersion: 1,
      eventId: 'x',
      occurredAt: new Date(t.clock.now()).toISOString(),
      platform: 'slack',
      request: {
        timestamp: h['x-slack-request-timestamp'],
        signature: h['x-slack-signature'],
        body: body.replace('U-VIEW', 'U-OPS'),
      },
    };
    expect(await carryOutRequested(t.deps, forged)).toEqual({ refused: expect.stringMatching(/^bad signature/) });
    const ops = t.slash('U-OPS', 'drain gpu-0');
    const hs = t.sign(ops);
    await t.clock.advance((RESPONSE_URL_WINDOW_S + 1) * 1000);
    expect(
      await carryOutRequested(t.deps, {
        ...forged,
        request: { timestamp: hs['x-slack-request-timestamp'], signature: hs['x-slack-signature'], body: ops },
      }),
    ).toEqual({ refused: expect.stringMatching(/^stale/) });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.responder.sent).toEqual([]);
  });
});

describe("Feishu's 3 seconds", () => {
  const KEY = 'feishu-encrypt-key';
  const message = (user: string, text: string, id: string) =>
    JSON.stringify({
      schema: '2.0',
      header: { event_id: id, token: 'feishu-token', event_type: 'im.message.receive_v1' },
      event: {
        sender: { sender_id: { open_id: user } },
        message: { message_id: `om_${id}`, chat_id: 'oc_gpu', content: JSON.stringify({ text }) },
      },
    });
  const encrypt = (json: string) => {
    const iv = randomBytes(16);
    const c = createCipheriv('aes-256-cbc', createHash('sha256').update(KEY).digest(), iv);
    return JSON.stringify({ encrypt: Buffer.concat([iv, c.update(json, 'utf8'), c.final()]).toString('base64') });
  };
  const signed = (t: ReturnType<typeof setup>, body: string, nonce = 'n-1') => {
    const ts = String(Math.floor(t.clock.now() / 1000));
    return {
      'x-lark-request-timestamp': ts,
      'x-lark-request-nonce': nonce,
      'x-lark-signature': createHash('sha256')
        .update(ts + nonce + KEY + body)
        .digest('hex'),
    };
  };
  const feishuSetup = (encryptKey?: string) => {
    const t = setup();
    const feishu = new RecordingFeishuReplier();
    t.deps.secrets = {
      feishuVerificationToken: 'feishu-token',
      ...(encryptKey ? { feishuEncryptKey: encryptKey } : {}),
    };
    t.deps.feishu = feishu;
    t.deps.config = parseChatOpsConfig(
      'roles:\n  - { match: { platform: feishu, user: ou_ops }, role: operator }\ndefault: viewer\n',
    );
    const post = (body: string, headers: Record<string, string> = {}) =>
      handleChatRequest(
        t.deps,
        {
          rawPath: '/chat/feishu',
          pathParameters: { platform: 'feishu' },
          headers,
        } as unknown as APIGatewayProxyEventV2,
        body,
      );
    return { ...t, feishu, post };
  };
  const requested = (t: ReturnType<typeof setup>) =>
    t.published(CHATOPS_COMMAND_REQUESTED).map((e) => e.detail as ChatOpsCommandRequestedDetail);

  it('answers a long command at once and leaves it, as Feishu sent it, for the worker, which does it and replies to the message', async () => {
    const t = feishuSetup();
    const body = message('ou_ops', 'drain gpu-0', 'evlong');
    expect(JSON.parse(String((await t.post(body)).body))).toEqual({});
    // Nothing was said or done in the callback.
    expect(t.feishu.replies).toEqual([]);
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.published(CHATOPS_COMMAND)).toEqual([]);
    const [detail] = requested(t);
    expect(detail).toMatchObject({ platform: 'feishu', eventId: 'chat-request:feishu:evlong', request: { body } });

    await t.clock.advance(2_000);
    expect(await carryOutRequested(t.deps, detail!)).toEqual({
      answered: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)',
    });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBe(true);
    // The worker says it is on it (its own uuid), then the answer (the event's).
    expect(t.feishu.replies).toEqual([
      { messageId: 'om_evlong', text: 'working on it… (drain gpu-0): the answer follows here', uuid: 'evlong:ack' },
      { messageId: 'om_evlong', text: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)', uuid: 'evlong' },
    ]);
    expect(t.published(CHATOPS_COMMAND).map((e) => e.detail)).toEqual([
      expect.objectContaining({
        user: expect.objectContaining({ platform: 'feishu', id: 'ou_ops' }),
        command: 'drain',
      }),
    ]);
    // The bus delivering it again, and Feishu re-sending the event: neither runs it twice.
    expect(await carryOutRequested({ ...t.deps, replay: sharedReplayGuard(t.kube.state) }, detail!)).toEqual({
      refused: 'already carried out',
    });
    expect((await t.post(body)).statusCode).toBe(200);
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
    expect(requested(t)).toHaveLength(1);
    expect(t.feishu.replies).toHaveLength(2);
  });

  it('with an Encrypt Key, the worker believes only what Feishu signed, and not after 30 minutes', async () => {
    const t = feishuSetup(KEY);
    const body = encrypt(message('ou_ops', 'drain gpu-0', 'evenc'));
    expect((await t.post(body, signed(t, body))).statusCode).toBe(200);
    const [detail] = requested(t);
    const { 'x-lark-request-timestamp': timestamp, 'x-lark-signature': signature } = signed(t, body);
    expect(detail!.request).toEqual({ timestamp, nonce: 'n-1', signature, body });
    // The same signature over another request (a viewer's body swapped for an operator's): refused.
    const other = encrypt(message('ou_ops', 'drain gpu-0', 'evother'));
    expect(
      await carryOutRequested(t.deps, {
        ...detail!,
        request: { ...detail!.request, body: other },
      } as ChatOpsCommandRequestedDetail),
    ).toEqual({ refused: expect.stringMatching(/^bad signature/) });
    // The captured body without its headers (which carry its age): refused, only the URL challenge comes unsigned.
    expect(await carryOutRequested(t.deps, { ...detail!, request: { body } } as ChatOpsCommandRequestedDetail)).toEqual(
      { refused: expect.stringMatching(/^missing header X-Lark-Signature/) },
    );
    await t.clock.advance(1801_000);
    expect(await carryOutRequested(t.deps, detail!)).toEqual({ refused: expect.stringMatching(/^stale/) });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.feishu.replies).toHaveLength(0);
  });

  it('without an Encrypt Key, the worker believes the verification token in the body, and nothing else', async () => {
    const t = feishuSetup();
    await t.post(message('ou_ops', 'drain gpu-0', 'evtok'));
    const [detail] = requested(t);
    const forged = {
      ...detail!,
      request: { body: detail!.request.body.replace('feishu-token', 'guessed-token') },
    } as ChatOpsCommandRequestedDetail;
    expect(await carryOutRequested(t.deps, forged)).toEqual({
      refused: expect.stringMatching(/^bad verification token/),
    });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
  });

  it.each([
    [
      'a viewer’s long command is refused',
      'ou_view',
      'drain gpu-0',
      'not allowed: drain needs the operator role; feishu user ou_view has only viewer',
    ],
    ['a quick command', 'ou_view', 'status gpu-0', 'gpu-0: Ready; gpu-reflex state healthy; 8 GPUs allocatable'],
    ['a usage error', 'ou_ops', 'drain', 'expected one node name, got 0. Usage: drain NODE [--dry-run]'],
  ])('the worker answers, with no "working on it": %s', async (_what, user, text, want) => {
    const t = feishuSetup();
    await t.post(message(user, text, 'evq'));
    expect(t.feishu.replies).toEqual([]);
    const [detail] = requested(t);
    await carryOutRequested(t.deps, detail!);
    expect(t.feishu.replies).toEqual([{ messageId: 'om_evq', text: want, uuid: 'evq' }]);
  });

  it('says so when the request cannot be handed to the worker, and does nothing', async () => {
    const t = feishuSetup();
    t.deps.publisher = { publish: async () => Promise.reject(new Error('bus unreachable')) };
    expect((await t.post(message('ou_ops', 'drain gpu-0', 'evfail'))).statusCode).toBe(200);
    expect(t.feishu.replies).toEqual([
      {
        messageId: 'om_evfail',
        text: 'failed: drain gpu-0: could not hand it to chatops-worker (bus unreachable); nothing was done, ask again',
        uuid: 'evfail:ack',
      },
    ]);
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.logs).toContainEqual(
      expect.objectContaining({ level: 'error', message: 'chat request not handed to chatops-worker' }),
    );
  });
});

describe("DingTalk's long commands", () => {
  const SECRET_DT = 'dingtalk-app-secret';
  const SESSION = 'https://oapi.dingtalk.com/robot/sendBySession?session=abc123';
  const setupDt = () => {
    const t = setup();
    const dingtalk = new RecordingDingTalkSessionResponder();
    t.deps.secrets = { dingtalkAppSecret: SECRET_DT };
    t.deps.dingtalk = dingtalk;
    t.deps.config = parseChatOpsConfig(
      'roles:\n  - { match: { platform: dingtalk, user: staff-ops }, role: operator }\ndefault: viewer\n',
    );
    const message = (user: string, text: string, session = SESSION, expires = t.clock.now() + 90 * 60_000) =>
      JSON.stringify({
        msgtype: 'text',
        text: { content: ` ${text}` },
        msgId: `msg-${user}`,
        senderStaffId: user,
        senderNick: user,
        conversationId: 'cid-gpu',
        conversationType: '2',
        sessionWebhook: session,
        sessionWebhookExpiredTime: expires,
      });
    const headers = () => {
      const ts = String(t.clock.now());
      return { timestamp: ts, sign: createHmac('sha256', SECRET_DT).update(`${ts}\n${SECRET_DT}`).digest('base64') };
    };
    const post = (body: string, h: Record<string, string> = headers()) =>
      handleChatRequest(
        t.deps,
        {
          rawPath: '/chat/dingtalk',
          pathParameters: { platform: 'dingtalk' },
          headers: h,
        } as unknown as APIGatewayProxyEventV2,
        body,
      );
    const requested = () =>
      t.published(CHATOPS_COMMAND_REQUESTED).map((e) => e.detail as ChatOpsCommandRequestedDetail);
    return { ...t, dingtalk, message, headers, post, requested };
  };
  const content = (r: { body?: string }) => (JSON.parse(String(r.body)) as { text: { content: string } }).text.content;

  it('answers at once and leaves it for the worker, which does it and answers at the sessionWebhook, once', async () => {
    const t = setupDt();
    expect(content(await t.post(t.message('staff-ops', 'drain gpu-0')))).toBe(
      'working on it… (drain gpu-0): the answer follows here',
    );
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.published(CHATOPS_COMMAND)).toEqual([]);
    const [detail] = t.requested();
    expect(detail).toMatchObject({ platform: 'dingtalk', request: { mac: expect.stringMatching(/^[0-9a-f]{64}$/) } });

    await t.clock.advance(2_000);
    expect(await carryOutRequested(t.deps, detail!)).toEqual({
      answered: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)',
    });
    expect(t.dingtalk.sent).toEqual([
      { url: SESSION, text: 'cordoned and draining gpu-0: evicting 1 pod(s) (ml/train)' },
    ]);
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBe(true);
    expect(await carryOutRequested({ ...t.deps, replay: sharedReplayGuard(t.kube.state) }, detail!)).toEqual({
      refused: 'already carried out',
    });
    expect(t.published(CHATOPS_COMMAND)).toHaveLength(1);
  });

  it('the worker believes only the body the webhook verified (DingTalk signs the timestamp alone), and not after the sessionWebhook lapsed', async () => {
    const t = setupDt();
    await t.post(t.message('staff-ops', 'drain gpu-0'));
    const [detail] = t.requested();
    if (detail?.platform !== 'dingtalk') throw new Error('expected a DingTalk request');
    // The same valid timestamp and sign, another body: DingTalk's sign still holds, the MAC does not.
    const other = t.message('staff-ops', 'drain gpu-0', 'https://oapi.dingtalk.com/robot/sendBySession?session=evil');
    expect(await carryOutRequested(t.deps, { ...detail, request: { ...detail.request, body: other } })).toEqual({
      refused: 'bad MAC: the body is not the one the webhook verified',
    });
    const forgedMac = createHmac('sha256', 'guessed').update(other).digest('hex');
    expect(
      await carryOutRequested(t.deps, { ...detail, request: { ...detail.request, body: other, mac: forgedMac } }),
    ).toEqual({ refused: 'bad MAC: the body is not the one the webhook verified' });
    // A sessionWebhook that lapsed: nobody to answer, nothing done.
    const lapsing = t.message('staff-ops', 'drain gpu-0', SESSION, t.clock.now() + 60_000);
    await t.clock.advance(1);
    await t.post(lapsing);
    const [, late] = t.requested();
    await t.clock.advance(61_000);
    expect(await carryOutRequested(t.deps, late!)).toEqual({
      refused: expect.stringMatching(/^its sessionWebhook lapsed at /),
    });
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
    expect(t.dingtalk.sent).toEqual([]);
  });

  it.each([
    [
      'a viewer’s long command is refused',
      'staff-view',
      'drain gpu-0',
      SESSION,
      'not allowed: drain needs the operator role; dingtalk user staff-view has only viewer',
    ],
    [
      'a quick command',
      'staff-view',
      'status gpu-0',
      SESSION,
      'gpu-0: Ready; gpu-reflex state healthy; 8 GPUs allocatable',
    ],
    [
      'a sessionWebhook elsewhere than DingTalk (run here, as before)',
      'staff-ops',
      'drain gpu-0 --dry-run',
      'https://example.com/robot/sendBySession',
      'dry run: would have cordoned and drained gpu-0: would evict 1 pod(s) (ml/train)',
    ],
  ])('answers in the callback: %s', async (_what, user, text, session, want) => {
    const t = setupDt();
    expect(content(await t.post(t.message(user, text, session)))).toBe(want);
    expect(t.requested()).toEqual([]);
  });

  it('says so when the request cannot be handed to the worker', async () => {
    const t = setupDt();
    t.deps.publisher = { publish: async () => Promise.reject(new Error('bus unreachable')) };
    expect(content(await t.post(t.message('staff-ops', 'drain gpu-0')))).toBe(
      'failed: drain gpu-0: could not hand it to chatops-worker (bus unreachable); nothing was done, ask again',
    );
    expect(t.kube.cluster.nodes.get('gpu-0')?.unschedulable).toBeFalsy();
  });
});

describe('mig plan in chat', () => {
  it('plans as rebalance-mig would, with its preemption policy', async () => {
    const t = setup();
    const inventory: MigInventory = {
      v: 1,
      at: '2026-11-21T03:00:00.000Z',
      gpus: [
        {
          index: 0,
          uuid: 'GPU-00000000-0000-4000-8000-000000000000',
          instances: [
            { profile: '4g.40gb', gi: 1, start: 0, size: 4, inUse: true },
            { profile: '3g.40gb', gi: 2, start: 4, size: 4, inUse: true },
          ],
        },
        {
          index: 1,
          uuid: 'GPU-11111111-0000-4000-8000-000000000000',
          instances: [{ profile: '7g.80gb', gi: 0, start: 0, size: 8, inUse: true }],
        },
      ],
    };
    t.kube.cluster.addNode({
      name: 'h100-nb-0',
      labels: {
        'nvidia.com/mig.strategy': 'mixed',
        'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
        'nvidia.com/gpu.count': '2',
      },
      annotations: { [MIG_INVENTORY_ANNOTATION]: JSON.stringify(inventory) },
      allocatable: { 'nvidia.com/mig-4g.40gb': '1', 'nvidia.com/mig-3g.40gb': '1', 'nvidia.com/mig-7g.80gb': '1' },
    });
    for (const [name, profile] of [
      ['notebook-mid-0', '4g.40gb'],
      ['notebook-small-0', '3g.40gb'],
      ['notebook-big-0', '7g.80gb'],
    ] as const) {
      t.kube.cluster.addPod({
        name,
        namespace: 'research',
        nodeName: 'h100-nb-0',
        phase: 'Running',
        priority: 0,
        extendedResources: { [`nvidia.com/mig-${profile}`]: 1 },
      });
    }
    for (let i = 0; i < 4; i++)
      t.kube.cluster.addPod({
        name: `infer-${i}`,
        namespace: 'serve',
        phase: 'Pending',
        priority: 1000,
        extendedResources: { 'nvidia.com/mig-1g.10gb': 1 },
      });
    const ask = async (deps: WebhookDeps) => {
      const body = t.slash('U-VIEW', 'mig plan', '');
      const r = await handleChatRequest(
        deps,
        {
          rawPath: '/chat/slack',
          pathParameters: { platform: 'slack' },
          headers: t.sign(body),
        } as unknown as APIGatewayProxyEventV2,
        body,
      );
      return (JSON.parse(String(r.body)) as { text: string }).text;
    };
    expect(await ask(t.deps)).toContain('no GPU to relay');
    const preempting = await ask({
      ...t.deps,
      mig: {
        ...DEFAULT_MIG_REBALANCE_CONFIG,
        preemption: { enabled: true, minPriorityGap: 1000, maxGpusPerRound: 1, protect: [], notify: false },
      },
    });
    expect(preempting.split('\n')[1]).toMatch(/^h100-nb-0\/1\s+7g\.80gb\s+.*research\/notebook-big-0$/);
  });
});

describe('ChatOps Command events', () => {
  it('keeps two commands of one person in one clock step as two events', async () => {
    const t = setup();
    await t.post(t.slash('U-VIEW', 'status gpu-0', ''));
    await t.post(t.slash('U-VIEW', 'help', ''));
    const ids = t.published(CHATOPS_COMMAND).map((e) => (e.detail as { eventId: string }).eventId);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
  });
});

describe('an answer in words for every request (#31)', () => {
  const text = (r: { body?: string }) => (JSON.parse(String(r.body)) as { text: string }).text;
  const dingtalk = (t: ReturnType<typeof setup>, body: string) => {
    t.deps.secrets = { dingtalkAppSecret: 'dt-secret' };
    const ts = String(t.clock.now());
    const sign = createHmac('sha256', 'dt-secret').update(`${ts}\ndt-secret`).digest('base64');
    return handleChatRequest(
      t.deps,
      {
        rawPath: '/chat/dingtalk',
        pathParameters: { platform: 'dingtalk' },
        headers: { timestamp: ts, sign },
      } as unknown as APIGatewayProxyEventV2,
      body,
    );
  };
  const dtMessage = (user: string, content: string) =>
    JSON.stringify({ msgtype: 'text', text: { content }, senderStaffId: user, conversationId: 'cid-gpu' });

  it('answers a node that is not there in words on Slack, DingTalk and Feishu, not with an internal object', async () => {
    const t = setup();
    const r = await t.post(t.slash('U-OPS', 'cordon nope', ''));
    expect(r.statusCode).toBe(200);
    expect(JSON.parse(String(r.body))).toEqual({
      response_type: 'ephemeral',
      text: 'no node "nope" in this cluster (kubectl get nodes lists the names)',
    });
    expect(t.published(CHATOPS_COMMAND).map((e) => (e.detail as { result: string }).result)).toEqual([
      'no node "nope" in this cluster (kubectl get nodes lists the names)',
    ]);
    const d = await dingtalk(t, dtMessage('staff-1', 'status nope'));
    expect((JSON.parse(String(d.body)) as { text: { content: string } }).text.content).toBe(
      'no node "nope" in this cluster (kubectl get nodes lists the names)',
    );
    const feishu = new RecordingFeishuReplier();
    t.deps.secrets = { feishuVerificationToken: 'feishu-token' };
    t.deps.feishu = feishu;
    const body = JSON.stringify({
      schema: '2.0',
      header: { event_id: 'ev-nope', token: 'feishu-token', event_type: 'im.message.receive_v1' },
      event: {
        sender: { sender_id: { open_id: 'ou_view' } },
        message: { message_id: 'om_nope', chat_id: 'oc_gpu', content: JSON.stringify({ text: 'status nope' }) },
      },
    });
    const f = await handleChatRequest(
      t.deps,
      { rawPath: '/chat/feishu', pathParameters: { platform: 'feishu' }, headers: {} } as never,
      body,
    );
    expect(f.statusCode).toBe(200);
    const [req] = t.published(CHATOPS_COMMAND_REQUESTED);
    await carryOutRequested(t.deps, req!.detail as ChatOpsCommandRequestedDetail);
    expect(feishu.replies.map((x) => x.text)).toEqual([
      'no node "nope" in this cluster (kubectl get nodes lists the names)',
    ]);
  });

  it('answers a signed body that is not the platform’s with 400 and the reason', async () => {
    const t = setup();
    const slack = await t.post('text=status');
    expect(slack.statusCode).toBe(400);
    expect(JSON.parse(String(slack.body))).toEqual({
      error: 'bad request',
      reason: 'a Slack request names its user (user_id) or carries an interaction (payload); this one has neither',
    });
    expect((await t.post('payload=%7Bnot-json')).statusCode).toBe(400);
    const notJson = await dingtalk(t, 'status gpu-0');
    expect(notJson.statusCode).toBe(400);
    expect(JSON.parse(String(notJson.body))).toMatchObject({ reason: 'the DingTalk request body is not JSON' });
    await t.clock.advance(1000); // a new timestamp: the same one would be a replay
    const noSender = await dingtalk(t, JSON.stringify({ text: { content: 'status' } }));
    expect(JSON.parse(String(noSender.body))).toMatchObject({
      reason: 'a DingTalk message names its sender (senderStaffId or senderId); this one does not',
    });
    expect(t.published(CHATOPS_COMMAND)).toEqual([]);
  });

  it('bounds what it reads before any lookup: a 1 MB name, a 254-character name, a name that is no DNS name', async () => {
    const t = setup();
    const huge = text(await t.post(t.slash('U-VIEW', `status ${'a'.repeat(1_000_000)}`, '')));
    expect(huge).toMatch(/^that is 1000007 characters; a command has at most 512\./);
    expect(huge.length).toBeLessThan(2000);
    expect(text(await t.post(t.slash('U-VIEW', `status ${'a'.repeat(254)}`, '')))).toMatch(
      /^a node name has at most 253 characters \("a{64}…" has 254\)\. Usage: status \[NODE\]$/,
    );
    expect(text(await t.post(t.slash('U-OPS', 'cordon Gpu_0', '')))).toMatch(/^"Gpu_0" is not a node name/);
    expect(text(await t.post(t.slash('U-OPS', 'cordon gpu-.0', '')))).toMatch(/^"gpu-\.0" is not a node name/);
    expect(t.kube.cluster.calls.filter((c) => c.op.startsWith('nodes.'))).toEqual([]);
    // The longest name the API server takes is still looked up.
    expect(text(await t.post(t.slash('U-VIEW', `status ${'a'.repeat(253)}`, '')))).toMatch(/^no node "a{64}…"/);
  });

  it('tells a long command whose response_url it would not post to, in the acknowledgement, and does nothing', async () => {
    const t = setup();
    const r = await t.post(t.slash('U-OPS', 'drain gpu-0', 'https://attacker.example/hook'));
    expect(text(r)).toBe(
      "not run: drain gpu-0 takes longer than Slack waits, and its answer could not follow: the request's " +
        'response_url is not one this deployment posts to (CHAT_SLACK_RESPONSE_URL_PREFIX); nothing done',
    );
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toEqual([]);
    expect((await t.kube.nodes.get('gpu-0')).unschedulable).toBe(false);
    expect(t.kube.cluster.pods().every((p) => !p.terminating)).toBe(true);
  });
});

describe('acknowledge first, then load (issue #31: Slack waits 3 s, a cold container must not load everything first)', () => {
  /** The whole wiring as a cold container would meet it: loading, and never done within the test. */
  const neverLoaded = () => {
    const calls = { n: 0 };
    return { calls, full: () => (calls.n++, new Promise<WebhookDeps>(() => {})) };
  };
  const ackOf = (d: WebhookDeps): AckDeps => ({
    secrets: d.secrets,
    logger: d.logger,
    clock: d.clock,
    publisher: d.publisher,
    config: d.config,
    responder: d.responder,
    replay: memoryReplayGuard(),
  });
  const slack = (t: ReturnType<typeof setup>, ack: AckDeps, body: string, full: () => Promise<WebhookDeps>) =>
    handleChatRequest(
      ack,
      {
        rawPath: '/chat/slack',
        pathParameters: { platform: 'slack' },
        headers: t.sign(body),
      } as unknown as APIGatewayProxyEventV2,
      body,
      full,
    );

  it('hands a long command to the worker on the acknowledgement’s wiring alone: the rest is never loaded', async () => {
    const t = setup();
    const { calls, full } = neverLoaded();
    const ack = ackOf(t.deps);
    const body = t.slash('U-OPS', 'drain gpu-0');
    const r = await slack(t, ack, body, full);
    expect(JSON.parse(String(r.body)).text).toBe('working on it… (drain gpu-0): the answer follows here');
    expect(calls.n).toBe(0);
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toHaveLength(1);
    // The same signed request again to this container: refused by its memory, not handed off twice
    // (another container hands it off, and chatops-worker's shared check runs it once: worker tests).
    expect((await slack(t, ack, body, full)).statusCode).toBe(401);
    expect(t.published(CHATOPS_COMMAND_REQUESTED)).toHaveLength(1);
  });

  it('loads the whole wiring for what it answers in the callback (a quick command), and only then', async () => {
    const t = setup();
    let loads = 0;
    const r = await slack(t, ackOf(t.deps), t.slash('U-VIEW', 'status gpu-0'), async () => (loads++, t.deps));
    expect(JSON.parse(String(r.body)).text).toBe('gpu-0: Ready; gpu-reflex state healthy; 8 GPUs allocatable');
    expect(loads).toBe(1);
  });

  it('the deployed handler acknowledges on wireChatAck’s deps while wireChat never finishes', async () => {
    const t = setup();
    const { calls, full } = neverLoaded();
    const handler = createChatHandler(full as never, () => ackOf(t.deps));
    const body = t.slash('U-OPS', 'drain gpu-0');
    const r = (await handler(
      {
        rawPath: '/chat/slack',
        pathParameters: { platform: 'slack' },
        headers: t.sign(body),
        body,
        isBase64Encoded: false,
      } as unknown as APIGatewayProxyEventV2,
      { awsRequestId: 'r-1', functionName: 'chatops', getRemainingTimeInMillis: () => 3_000 } as never,
    )) as { statusCode: number; body: string };
    expect(JSON.parse(r.body).text).toBe('working on it… (drain gpu-0): the answer follows here');
    expect(calls.n).toBe(0);
  });
});
