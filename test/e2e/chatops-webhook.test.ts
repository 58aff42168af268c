import { createHmac } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../events/clock.ts';
import type { ChatOpsCommandDetail } from '../../events/index.ts';
import { startLocalBus, type LocalBus } from '../../infra/local/bus/index.ts';
import { startKubeSim, type KubeSim } from '../../infra/local/kube/index.ts';
import { functionEnv, LOCAL_BUS_NAME, REPO_ROOT, withEnv } from '../../infra/local/stack-env.ts';

/**
 * The ChatOps webhook through the local bus's HTTP API (the route serverless.yml declares), against
 * the simulated cluster: a signed Slack slash command from an operator cordons a node; a viewer is
 * refused, but may dry-run; unsigned, forged and replayed requests get 401; every command is
 * published as a ChatOps Command. (Own file: the functions wire once per process.)
 */
const SECRET = 'slack-signing-secret-for-tests';
let sim: KubeSim;
let bus: LocalBus;
let restore: () => void;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chatops-e2e-'));
  sim = await startKubeSim({
    fleet: {
      nodes: [
        { name: 'gpu-0', allocatable: { 'nvidia.com/gpu': 8 } },
        { name: 'gpu-1', allocatable: { 'nvidia.com/gpu': 8 } },
        { name: 'gpu-2', allocatable: { 'nvidia.com/gpu': 8 } },
      ],
      namespaces: [{ name: 'gpu-reflex' }, { name: 'ml' }],
      pods: [
        {
          name: 'train',
          namespace: 'ml',
          node: 'gpu-2',
          owner: { kind: 'ReplicaSet', name: 'train' },
          requests: { 'nvidia.com/gpu': 2 },
        },
      ],
    },
  });
  const kubeconfig = join(dir, 'kubeconfig');
  sim.writeKubeconfig(kubeconfig);
  const roles = join(dir, 'chatops.yaml');
  writeFileSync(roles, 'roles:\n  - { match: { platform: slack, user: U-OPS }, role: operator }\ndefault: viewer\n');
  bus = await startLocalBus({
    serverlessYml: join(REPO_ROOT, 'serverless.yml'),
    clock: new VirtualClock(),
    busName: LOCAL_BUS_NAME,
  });
  const teams = join(dir, 'teams.yaml');
  writeFileSync(teams, 'teams: [{ name: ml, namespaces: [ml], guarantee: { nvidia.com/gpu: 4 } }]\n');
  restore = withEnv({
    ...functionEnv({ kubeconfig, busUrl: bus.url, busName: LOCAL_BUS_NAME }),
    CHAT_SLACK_SIGNING_SECRET: SECRET,
    CHATOPS_CONFIG_FILE: roles,
    QUOTA_CONFIG_FILE: teams,
    LOG_LEVEL: 'error',
  });
});
afterAll(async () => {
  restore();
  await bus.close();
  await sim.close();
});

function signed(user: string, text: string, ts = Math.floor(Date.now() / 1000)) {
  const body = new URLSearchParams({
    user_id: user,
    user_name: user.toLowerCase(),
    channel_id: 'C-GPU',
    command: '/gpu',
    text,
  }).toString();
  return {
    body,
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      'x-slack-request-timestamp': String(ts),
      'x-slack-signature': `v0=${createHmac('sha256', SECRET).update(`v0:${ts}:${body}`).digest('hex')}`,
    },
  };
}
const post = async (r: { body: string; headers: Record<string, string> }) => {
  const res = await fetch(`${bus.httpUrl}/chat/slack`, { method: 'POST', headers: r.headers, body: r.body });
  return { status: res.status, json: (await res.json()) as { text?: string; error?: string } };
};
const cordoned = (name: string) =>
  (sim.store.get('nodes', '', name) as unknown as { spec: { unschedulable?: boolean } }).spec.unschedulable === true;

describe('chatops webhook on the local bus', () => {
  it('lets an operator cordon a node from Slack, and says so', async () => {
    const r = await post(signed('U-OPS', 'cordon gpu-1'));
    expect(r).toEqual({ status: 200, json: { response_type: 'ephemeral', text: 'cordoned gpu-1' } });
    expect(cordoned('gpu-1')).toBe(true);
    expect((await post(signed('U-OPS', 'status gpu-1'))).json.text).toMatch(
      /^gpu-1: Ready, cordoned; gpu-reflex state healthy; 8 GPUs allocatable$/,
    );
  });

  it('refuses a viewer, lets it dry-run, and answers bad commands with usage', async () => {
    expect((await post(signed('U-VIEW', 'cordon gpu-0'))).json.text).toBe(
      'not allowed: cordon needs the operator role; slack user U-VIEW has only viewer',
    );
    expect((await post(signed('U-VIEW', 'cordon gpu-0 --dry-run'))).json.text).toBe(
      'dry run: would have cordoned gpu-0',
    );
    expect(cordoned('gpu-0')).toBe(false);
    expect((await post(signed('U-VIEW', 'cordon'))).json.text).toBe(
      'expected one node name, got 0. Usage: cordon NODE [--dry-run]',
    );
    expect((await post(signed('U-VIEW', 'reboot gpu-0'))).json.text).toMatch(
      /^unknown command "reboot"\.\ngpu-reflex commands/,
    );
  });

  it('drains a node through the Eviction API, and shows the quota and MIG plans, read only', async () => {
    expect((await post(signed('U-VIEW', 'drain gpu-2 --dry-run'))).json.text).toBe(
      'dry run: would have cordoned and drained gpu-2: would evict 1 pod(s) (ml/train)',
    );
    expect(cordoned('gpu-2')).toBe(false);
    expect((await post(signed('U-OPS', 'drain gpu-2'))).json.text).toBe(
      'cordoned and draining gpu-2: evicting 1 pod(s) (ml/train)',
    );
    expect(cordoned('gpu-2')).toBe(true);
    expect((await post(signed('U-VIEW', 'quota plan'))).json.text).toBe(
      'rewrite-quotas would change 1 quota value(s):\nml: requests.nvidia.com/gpu unset → 8',
    );
    expect((await post(signed('U-VIEW', 'mig plan'))).json.text).toBe(
      'no GPU to relay\npending MIG pods that can run: 0 now, 0 after 0 GPU changes',
    );
  });

  it('answers 401 with no detail to unsigned, forged, stale and replayed requests', async () => {
    const good = signed('U-OPS', 'uncordon gpu-1');
    expect(await post({ body: good.body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })).toEqual({
      status: 401,
      json: { error: 'unauthorized' },
    });
    expect((await post({ ...good, body: good.body.replace('uncordon', 'cordon') })).status).toBe(401);
    expect((await post(signed('U-OPS', 'uncordon gpu-1', Math.floor(Date.now() / 1000) - 600))).status).toBe(401);
    expect((await post(good)).status).toBe(200);
    expect(await post(good)).toEqual({ status: 401, json: { error: 'unauthorized' } });
    expect(cordoned('gpu-1')).toBe(false);
  });

  it('publishes every command as a ChatOps Command: who, what, the answer', () => {
    const commands = bus.events
      .filter((e) => e['detail-type'] === 'ChatOps Command')
      .map((e) => e.detail as ChatOpsCommandDetail);
    expect(commands.map((c) => [c.user.id, c.command, c.result])).toContainEqual(['U-OPS', 'cordon', 'cordoned gpu-1']);
    expect(commands.map((c) => [c.user.id, c.command, c.dryRun])).toContainEqual(['U-VIEW', 'cordon', true]);
    expect(commands.every((c) => c.channel === 'C-GPU')).toBe(true);
  });

  it('answers GET /chat/healthz through the route serverless.yml declares, naming no secret; other methods 405', async () => {
    const res = await fetch(`${bus.httpUrl}/chat/healthz`);
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(JSON.parse(text)).toEqual({
      status: 'ok',
      platforms: { slack: true, dingtalk: false, feishu: false },
      roles: { rules: 1, default: 'viewer' },
      approvals: 'sealed',
      problems: [],
    });
    expect(text).not.toContain(SECRET);
    expect(text).not.toContain('U-OPS');
    expect((await fetch(`${bus.httpUrl}/chat/slack`)).status).toBe(405);
  });
});
