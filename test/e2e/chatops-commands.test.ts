/**
 * The chat commands that run an automation's own core, end to end on the embedded stack (the local
 * bus's HTTP API, serverless.yml's routes, the simulated cluster, one virtual clock): each changes
 * the simulated cluster as it says, and its `--dry-run` changes nothing.
 *
 * - `quarantine NODE GPU`: remediation's planner and applier (the node's history, the
 *   quarantined-gpus annotation, the fence asked of the agent, the GPU's pod evicted); unknown
 *   nodes and GPUs answer with usage.
 * - `mig apply`: the MIG rebalancer's round (mig-parted config written, node cordoned).
 * - `quota show` / `quota rollback NS`: the rewriter's rollback (previous values back, held).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIG_INVENTORY_ANNOTATION, type ChatOpsCommandDetail } from '../../events/index.ts';
import { manualClock } from '../../functions/adapters/clock.ts';
import { MIG_REBALANCE_ANNOTATION } from '../../functions/mig/core/rebalance.ts';
import { HOLD_UNTIL_ANNOTATION, PREVIOUS_HARD_ANNOTATION } from '../../functions/quota/run.ts';
import { QUARANTINED_GPUS_ANNOTATION, STATE_LABEL } from '../../functions/remediate/core/state.ts';
import type { Fleet } from '../../infra/local/kube/index.ts';
import { slackClient, type SlackClient } from './chat-client.ts';
import { NAMESPACE, startRemediationStack, type RemediationStack } from './remediation-stack.ts';
import { evicted } from './evicted.ts';

const SECRET = 'slack-signing-secret-for-tests';
const UUID = 'GPU-5f2c3a00-8d41-4b7a-9e0f-1c2d3e4f5a6b';
const clock = manualClock(Date.parse('2026-11-21T03:00:00.000Z'));

const FLEET: Fleet = {
  nodes: [
    {
      name: 'a',
      count: 2,
      labels: { 'gpu-reflex.io/pool': 'a' },
      allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': '8' },
    },
    {
      name: 'h100',
      count: 1,
      labels: {
        'gpu-reflex.io/pool': 'h100-mig',
        'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3',
        'nvidia.com/gpu.count': '4',
        'nvidia.com/gpu.memory': '81920',
        'nvidia.com/mig.strategy': 'mixed',
      },
      // What its node agent read through NVML: 4 GPUs of 7×1g.10gb, none in use (a relayout is done only once it shows it).
      annotations: {
        [MIG_INVENTORY_ANNOTATION]: JSON.stringify({
          v: 1,
          at: '2026-11-21T03:00:00.000Z',
          gpus: [0, 1, 2, 3].map((index) => ({
            index,
            uuid: `GPU-0000000${index}-0000-4000-8000-000000000000`,
            instances: Array.from({ length: 7 }, (_, gi) => ({ profile: '1g.10gb', gi: gi + 1, inUse: false })),
          })),
        }),
      },
      allocatable: { cpu: '190', memory: '1800Gi', 'nvidia.com/mig-1g.10gb': '28' },
    },
  ],
  namespaces: [{ name: NAMESPACE }, { name: 'ml' }, { name: 'ml-train' }, { name: 'gpu-operator' }],
  pods: [
    {
      name: 'train',
      namespace: 'ml',
      node: 'a-0',
      owner: { kind: 'Job', name: 'train' },
      requests: { 'nvidia.com/gpu': 2 },
    },
    {
      name: 'finetune',
      namespace: 'ml-train',
      count: 2,
      requests: { cpu: '8', memory: '64Gi', 'nvidia.com/mig-3g.40gb': 1 },
    },
  ],
  objects: [
    {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: {
        name: 'gpu-reflex',
        namespace: 'ml',
        labels: { 'app.kubernetes.io/managed-by': 'gpu-reflex' },
        annotations: { [PREVIOUS_HARD_ANNOTATION]: JSON.stringify({ 'requests.nvidia.com/gpu': '4' }) },
      },
      spec: { hard: { 'requests.nvidia.com/gpu': '6' } },
    },
  ],
};

let stack: RemediationStack;
let slack: SlackClient;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'chatops-commands-'));
  const roles = join(dir, 'chatops.yaml');
  writeFileSync(roles, 'roles:\n  - { match: { platform: slack, user: U-OPS }, role: operator }\ndefault: viewer\n');
  const teams = join(dir, 'teams.yaml');
  writeFileSync(teams, 'teams: [{ name: ml, namespaces: [ml], guarantee: { nvidia.com/gpu: 4 } }]\n');
  stack = await startRemediationStack({
    fleet: FLEET,
    clock,
    env: {
      CHAT_SLACK_SIGNING_SECRET: SECRET,
      CHATOPS_CONFIG_FILE: roles,
      QUOTA_CONFIG_FILE: teams,
      MIG_MIN_PENDING_SECONDS: '0',
    },
  });
  slack = slackClient(stack.bus.httpUrl!, SECRET, () => clock.now());
});
afterAll(async () => {
  await stack?.close();
});

const node = (name: string) => stack.sim.store.node(name)!;
const pod = (ns: string, name: string) => stack.sim.store.pod(ns, name);
const quota = () =>
  stack.sim.store.get('resourcequotas', 'ml', 'gpu-reflex') as unknown as {
    spec: { hard: Record<string, string> };
    metadata: { annotations?: Record<string, string> };
  };

describe('chat commands through the automation’s own cores', () => {
  it('quarantines a GPU by UUID through remediation: history, fence, its pod moved; a dry run changes nothing', async () => {
    const dry = await slack.command('U-VIEW', `quarantine a-0 ${UUID} --dry-run`);
    expect(dry.text).toMatch(
      /^dry run, nothing changed: quarantine of GPU GPU-5f2c3a00-.* of node a-0 asked by slack:U-VIEW\. asked by slack:U-VIEW → quarantine-gpu\. Now quarantining/,
    );
    expect(node('a-0').metadata.annotations?.[QUARANTINED_GPUS_ANNOTATION]).toBeUndefined();
    expect(pod('ml', 'train')?.metadata.deletionTimestamp).toBeUndefined();

    expect((await slack.command('U-VIEW', `quarantine a-0 ${UUID}`)).text).toBe(
      'not allowed: quarantine needs the operator role; slack user U-VIEW has only viewer',
    );
    const r = await slack.command('U-OPS', `quarantine a-0 ${UUID}`);
    expect(r.text).toMatch(/^quarantine of GPU GPU-5f2c3a00-.* of node a-0 asked by slack:U-OPS\. .*Now quarantining/);
    const n = node('a-0');
    expect(n.metadata.labels?.[STATE_LABEL]).toBe('quarantined');
    expect(JSON.parse(n.metadata.annotations?.[QUARANTINED_GPUS_ANNOTATION] ?? '[]')).toEqual([UUID]);
    expect(n.metadata.annotations?.['gpu-reflex.io/gpu-actions']).toContain(UUID);
    // No allocation is known, so every GPU pod of the node is the GPU's: evicted (a Job pod: gone).
    expect(evicted(pod('ml', 'train')), 'ml/train evicted').toBe(true);
    // Its Remediation report is on the bus, naming who asked.
    const reports = stack
      .published('Remediation')
      .map((e) => e.detail as { trigger: { detailType: string }; action: string; dryRun: boolean });
    expect(reports.filter((d) => !d.dryRun)).toEqual([
      expect.objectContaining({
        action: 'quarantine-gpu',
        trigger: expect.objectContaining({ detailType: 'Operator Request' }),
      }),
    ]);
    // Asking again, a second later, changes nothing: the incident is open.
    await clock.advance(1000);
    expect((await slack.command('U-OPS', `quarantine a-0 ${UUID}`)).text).toMatch(
      /^nothing to do: .*Incident already open/,
    );
  });

  it('answers an unknown node or GPU with usage, naming what is wrong', async () => {
    expect((await slack.command('U-OPS', 'quarantine a-9 0')).text).toBe(
      'no node a-9 in the cluster. Usage: quarantine NODE GPU [--dry-run]  (GPU: index or UUID)',
    );
    expect((await slack.command('U-OPS', 'quarantine a-1 8')).text).toBe(
      'node a-1 has no GPU 8: it has 8 (0–7). Usage: quarantine NODE GPU [--dry-run]  (GPU: index or UUID)',
    );
    expect((await slack.command('U-OPS', 'quarantine a-1 3')).text).toMatch(
      /^node a-1 does not list its GPUs' UUIDs .*name GPU 3 by its UUID/,
    );
    expect((await slack.command('U-OPS', 'quarantine a-1')).text).toBe(
      'expected a node and a GPU, got 1 word(s). Usage: quarantine NODE GPU [--dry-run]  (GPU: index or UUID)',
    );
    expect(node('a-1').metadata.labels?.[STATE_LABEL]).toBeUndefined();
  });

  it('mig apply runs the rebalancer: a dry run shows the plan, the real one writes the config and cordons', async () => {
    const dry = await slack.command('U-VIEW', 'mig apply --dry-run');
    expect(dry.text).toMatch(/h100-0 .*GPU 0|h100-0/);
    expect(dry.text).toMatch(/dry run: would have started the relayout of h100-0/);
    expect(node('h100-0').spec?.unschedulable).toBeFalsy();
    // gpu-reflex's own mig-parted ConfigMap (the ClusterPolicy names it), created at its first write.
    const parted = () =>
      (
        stack.sim.store.get('configmaps', 'gpu-operator', 'gpu-reflex-mig-parted-config') as unknown as
          { data: Record<string, string> } | undefined
      )?.data['config.yaml'] ?? '';
    expect(parted()).not.toContain('3g.40gb');

    expect((await slack.command('U-VIEW', 'mig apply')).text).toBe(
      'not allowed: mig needs the operator role; slack user U-VIEW has only viewer',
    );
    const r = await slack.command('U-OPS', 'mig apply');
    expect(r.text).toMatch(/^started the relayout of h100-0/m);
    expect(node('h100-0').spec?.unschedulable).toBe(true);
    expect(node('h100-0').metadata.annotations?.[MIG_REBALANCE_ANNOTATION]).toBeDefined();
    expect(parted()).toContain('3g.40gb');
  });

  it('quota show and quota rollback go through the quota rewriter: previous values back, held from rewrites', async () => {
    // rewrite-quotas runs on its schedule: ml's seeded 6 becomes the rewriter's value, the one it replaced kept beside it.
    await stack.advance(5 * 60_000);
    const now = quota().spec.hard['requests.nvidia.com/gpu']!;
    const before = (JSON.parse(quota().metadata.annotations![PREVIOUS_HARD_ANNOTATION]!) as Record<string, string>)[
      'requests.nvidia.com/gpu'
    ]!;
    expect(now).not.toBe(before);
    expect((await slack.command('U-VIEW', 'quota show')).text).toMatch(
      new RegExp(`^ml \\(ml\\): requests\\.nvidia\\.com/gpu ${now} \\(used \\d+\\)$`),
    );
    const said = `ml: requests.nvidia.com/gpu ${now} → requests.nvidia.com/gpu ${before}, held from rewrites for 60 min`;
    expect((await slack.command('U-VIEW', 'quota rollback ml --dry-run')).text).toBe(
      `dry run, nothing changed:\nwould roll back ${said}`,
    );
    expect(quota().spec.hard['requests.nvidia.com/gpu']).toBe(now);
    expect((await slack.command('U-VIEW', 'quota rollback ml')).text).toBe(
      'not allowed: quota needs the operator role; slack user U-VIEW has only viewer',
    );
    expect((await slack.command('U-OPS', 'quota rollback ml')).text).toBe(`rolled back ${said}`);
    expect(quota().spec.hard['requests.nvidia.com/gpu']).toBe(before);
    const until = new Date(clock.now() + 60 * 60_000).toISOString();
    expect(quota().metadata.annotations?.[HOLD_UNTIL_ANNOTATION]).toBe(until);
    expect((await slack.command('U-VIEW', 'quota show')).text).toMatch(
      new RegExp(
        `^ml \\(ml\\): requests\\.nvidia\\.com/gpu ${before} \\(used \\d+\\); held from rewrites until ${until}$`,
      ),
    );
    // The rewriter's next rounds leave it alone while it is held.
    await stack.advance(10 * 60_000);
    expect(quota().spec.hard['requests.nvidia.com/gpu']).toBe(before);
    expect((await slack.command('U-OPS', 'quota rollback nowhere')).text).toBe(
      'nowhere: no ResourceQuota gpu-reflex there',
    );
  });

  it('publishes each command as a ChatOps Command with who, what and the answer', () => {
    const commands = stack.published('ChatOps Command').map((e) => e.detail as ChatOpsCommandDetail);
    const said = commands.map((c) => [c.user.id, c.command, c.dryRun]);
    for (const x of [
      ['U-OPS', 'quarantine', false],
      ['U-VIEW', 'mig', true],
      ['U-OPS', 'mig', false],
      ['U-OPS', 'quota', false],
    ])
      expect(said).toContainEqual(x);
    expect(commands.find((c) => c.command === 'quota' && c.user.id === 'U-OPS')?.result).toMatch(/^rolled back ml/);
  });
});
