/**
 * `pool scale POOL N` end to end: the signed Slack command through the local bus's HTTP API, the
 * chatops function's AliCloudPools adapter (the autoscaler's CloudPools port) against the Alibaba
 * OpenAPI simulator, the autoscale policy's bounds. A scale-out of more than the pool's maxStep is
 * held as an approval, asked in chat, and carried out once when an operator approves it.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatOpsCommandDetail } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { startAliCloudSim, type AliCloudSim } from '../../infra/local/alicloud/index.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';
import { slackClient, type SlackClient } from './chat-client.ts';
import { startChatStandIn, type ChatStandIn } from './chat-fixtures.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';

const SECRET = 'slack-signing-secret-for-tests';
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));
let hook: ChatStandIn;
const chat = { map: <T>(f: (m: { text: string }) => T) => hook.posts.map((p) => f(p.json as { text: string })) };
let cloud: AliCloudSim;
let stack: RemediationStack;
let slack: SlackClient;

beforeAll(async () => {
  hook = await startChatStandIn();
  cloud = await startAliCloudSim({ cloud: join(REPO_ROOT, 'infra/local/alicloud/clouds/example.yaml') });
  const dir = mkdtempSync(join(tmpdir(), 'chatops-pool-'));
  const roles = join(dir, 'chatops.yaml');
  writeFileSync(roles, 'roles:\n  - { match: { platform: slack, user: U-OPS }, role: operator }\ndefault: viewer\n');
  const policy = join(dir, 'autoscale.yaml');
  writeFileSync(policy, 'pools:\n  np-t4-inference: { min: 1, max: 10, maxStep: 2 }\n');
  const c = cloud.connection;
  stack = await startRemediationStack({
    fleet: { namespaces: [{ name: NAMESPACE }] },
    clock,
    env: {
      CHAT_SLACK_SIGNING_SECRET: SECRET,
      CHATOPS_CONFIG_FILE: roles,
      CHAT_PLATFORM: 'slack',
      CHAT_WEBHOOK_URL: `${hook.url}/hook`,
      AUTOSCALE_POLICY_FILE: policy,
      ALIBABA_CLOUD_REGION_ID: c.regionId,
      ACK_CLUSTER_ID: c.clusterId,
      ALIBABA_CLOUD_ACCESS_KEY_ID: c.accessKeyId,
      ALIBABA_CLOUD_ACCESS_KEY_SECRET: c.accessKeySecret,
      ALIBABA_CLOUD_ENDPOINT: c.endpoint,
      ALIBABA_CLOUD_PROTOCOL: 'http',
    },
  });
  slack = slackClient(stack.bus.httpUrl!, SECRET, () => clock.now());
});
afterAll(async () => {
  await stack?.close();
  await cloud?.close();
  await hook?.close();
});

const desired = (id: string) => cloud.cloud.pools.get(id)!.desired;
const USAGE = 'Usage: pool scale POOL N [--dry-run]  (N: the desired size)';

describe('pool scale from chat', () => {
  it('sets a managed pool’s desired size within its bounds; a dry run and a viewer change nothing', async () => {
    expect(desired('np-t4-inference')).toBe(2);
    expect((await slack.command('U-VIEW', 'pool scale np-t4-inference 4 --dry-run')).text).toBe(
      "dry run, nothing changed: would set np-t4-inference's desired size 2 → 4",
    );
    expect((await slack.command('U-VIEW', 'pool scale np-t4-inference 4')).text).toBe(
      'not allowed: pool needs the operator role; slack user U-VIEW has only viewer',
    );
    expect(desired('np-t4-inference')).toBe(2);
    expect((await slack.command('U-OPS', 'pool scale np-t4-inference 4')).text).toMatch(
      /^set np-t4-inference's desired size 2 → 4 \(task \S+\)$/,
    );
    expect(desired('np-t4-inference')).toBe(4);
    expect((await slack.command('U-OPS', 'pool scale np-t4-inference 1')).text).toMatch(
      /^set np-t4-inference's desired size 4 → 1/,
    );
    expect(desired('np-t4-inference')).toBe(1);
  });

  it('answers pools it does not manage and sizes outside the bounds with usage', async () => {
    expect((await slack.command('U-OPS', 'pool scale np-a10-general 2')).text).toBe(
      `node pool np-a10-general is not managed by gpu-reflex (AUTOSCALE_POLICY_FILE names np-t4-inference). ${USAGE}`,
    );
    expect((await slack.command('U-OPS', 'pool scale np-t4-inference 11')).text).toBe(
      `np-t4-inference may hold 1–10 nodes (the autoscale policy): 11 is outside. ${USAGE}`,
    );
    expect((await slack.command('U-OPS', 'pool scale np-t4-inference 0')).text).toBe(
      `np-t4-inference may hold 1–10 nodes (the autoscale policy): 0 is outside. ${USAGE}`,
    );
    expect(desired('np-a10-general')).toBe(1);
  });

  it('holds a costly scale-out for approval, asks in chat, and carries it out once', async () => {
    const r = await slack.command('U-OPS', 'pool scale np-t4-inference 8');
    const id = /held for approval (apr-[a-z0-9]+)/.exec(r.text)?.[1];
    expect(r.text).toMatch(
      /^pool scale np-t4-inference 1 → 8 adds 7 nodes, more than its maxStep 2: it needs approval: held for approval apr-/,
    );
    expect(desired('np-t4-inference')).toBe(1);
    expect(chat.map((m) => m.text)).toContainEqual(expect.stringContaining(`Answer "approve ${id}"`));
    expect((await slack.command('U-OPS', `approve ${id} --dry-run`)).text).toBe(
      `dry run: would have approved ${id} (np-t4-inference 1 → 8)`,
    );
    expect((await slack.command('U-OPS', `approve ${id}`)).text).toMatch(
      new RegExp(`^approved ${id}: set np-t4-inference's desired size 1 → 8 \\(task \\S+\\)$`),
    );
    expect(desired('np-t4-inference')).toBe(8);
    // Clicked again: nothing more, even after the pool was changed since.
    expect((await slack.command('U-OPS', 'pool scale np-t4-inference 6')).text).toMatch(
      /^set np-t4-inference's desired size 8 → 6/,
    );
    expect((await slack.command('U-OPS', `approve ${id}`)).text).toBe(
      `${id} is already approved-applied by slack:U-OPS: nothing more done`,
    );
    expect(desired('np-t4-inference')).toBe(6);
  });

  it('lets an expired request do nothing', async () => {
    const r = await slack.command('U-OPS', 'pool scale np-t4-inference 10');
    const id = /held for approval (apr-[a-z0-9]+)/.exec(r.text)![1]!;
    await clock.advance(61 * 60_000);
    expect((await slack.command('U-OPS', `approve ${id}`)).text).toMatch(
      new RegExp(`^${id} expired at .*: too late, nothing done`),
    );
    expect(desired('np-t4-inference')).toBe(6);
  });

  it('publishes each as a ChatOps Command', () => {
    const said = stack
      .published('ChatOps Command')
      .map((e) => e.detail as ChatOpsCommandDetail)
      .filter((d) => d.command === 'pool');
    expect(said.length).toBeGreaterThanOrEqual(8);
    expect(said[0]).toMatchObject({
      user: { id: 'U-VIEW' },
      args: ['scale', 'np-t4-inference', '4', '--dry-run'],
      dryRun: true,
    });
  });
});
