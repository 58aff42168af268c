import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/main.ts';
import { UsageError } from '../../events/cli-kit/command.ts';
import { startKubeSim, type KubeSim } from '../../infra/local/kube/index.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';
import { createQuotaPlanCommand, quotaRollbackCommand } from './cli.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { out: (l: string) => void out.push(...l.split('\n')), err: (l: string) => void err.push(l) },
    out,
    err,
  };
}
const TEAMS = join(REPO_ROOT, 'infra/local/scenarios/fleets/mixed-quota-teams.yaml');
const MIXED = join(REPO_ROOT, 'infra/local/scenarios/fleets/mixed.yaml');
const dir = mkdtempSync(join(tmpdir(), 'quota-cli-'));
let sim: KubeSim | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

describe('gpu-reflex quota plan', () => {
  it('prints, per namespace and resource, what is used, the quota now and the quota it would write', async () => {
    const { io, out, err } = capture();
    expect(await main(['quota', 'plan', '--config', TEAMS, '--fleet', MIXED], io, {})).toBe(0);
    expect(err).toEqual([]);
    expect(out[0]).toMatch(/^TEAM\s+NAMESPACE\s+RESOURCE\s+USED\s+NOW\s+NEW$/);
    // 28 shared, 19 used: the 9 free go 3:2:1 over research's guarantee (2): 4, 3 and 2.
    expect(out).toContainEqual(expect.stringMatching(/^training\s+ml-train\s+nvidia\.com\/gpu\s+16\s+-\s+20\s+new$/));
    expect(out).toContainEqual(expect.stringMatching(/^inference\s+ml-infer\s+nvidia\.com\/gpu\s+3\s+-\s+6\s+new$/));
    expect(out).toContain('nvidia.com/gpu: capacity 28, 28 shared out (overcommit 1.1, buffer 2)');
    const json = capture();
    expect(await main(['quota', 'plan', '--config', TEAMS, '--fleet', MIXED, '--json'], json.io, {})).toBe(0);
    const plan = JSON.parse(json.out.join('\n')) as {
      namespaces: { namespace: string; hard: Record<string, number> }[];
    };
    expect(plan.namespaces.map((n) => [n.namespace, n.hard['requests.nvidia.com/gpu']])).toEqual([
      ['ml-infer', 6],
      ['research', 2],
      ['ml-train', 20],
    ]);
  });

  it('gives two idle teams of equal weight on an empty 16-GPU cluster 8 GPUs each (never stranded)', async () => {
    const { io, out } = capture();
    const args = ['--config', join(REPO_ROOT, 'infra/local/scenarios/fleets/quota-two-teams.yaml')];
    args.push('--fleet', join(REPO_ROOT, 'infra/local/scenarios/fleets/empty-16.yaml'));
    expect(await main(['quota', 'plan', ...args], io, {})).toBe(0);
    expect(out).toContainEqual(expect.stringMatching(/^a\s+team-a\s+nvidia\.com\/gpu\s+0\s+-\s+8\s+new$/));
    expect(out).toContainEqual(expect.stringMatching(/^b\s+team-b\s+nvidia\.com\/gpu\s+0\s+-\s+8\s+new$/));
  });

  it('names the bad field of a configuration, and a limits. key with why', async () => {
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'teams: [{ name: a, namespaces: [a], max: { limits.nvidia.com/gpu: 4 } }]\n');
    const { io, err } = capture();
    expect(await main(['quota', 'plan', '--config', bad, '--fleet', MIXED], io, {})).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain(
      'teams.0.max.limits.nvidia.com/gpu: "limits.nvidia.com/gpu": quota on limits of an extended resource is accepted by the API server and never enforced',
    );
  });
});

describe('gpu-reflex quota rollback', () => {
  it('puts the last rewrite back on a live cluster, holds it, and changes nothing in a dry run', async () => {
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', allocatable: { 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'ml' }],
        objects: [
          {
            apiVersion: 'v1',
            kind: 'ResourceQuota',
            metadata: {
              name: 'gpu-reflex',
              namespace: 'ml',
              annotations: { 'gpu-reflex.io/previous-hard': '{"requests.nvidia.com/gpu":"4"}' },
            },
            spec: { hard: { 'requests.nvidia.com/gpu': '6' } },
          },
        ],
      },
    });
    const kc = join(dir, 'kubeconfig');
    sim.writeKubeconfig(kc);
    const config = join(dir, 'teams.yaml');
    writeFileSync(config, 'teams: [{ name: ml, namespaces: [ml] }]\n');
    const dry = capture();
    expect(await main(['quota', 'rollback', '--kubeconfig', kc, '--config', config, '--dry-run'], dry.io, {})).toBe(0);
    expect(dry.out).toEqual(['would roll back ml: requests.nvidia.com/gpu 6 → 4; held from rewrites for 60 min']);
    const hardNow = () =>
      (sim!.store.get('resourcequotas', 'ml', 'gpu-reflex') as unknown as { spec: { hard: Record<string, string> } })
        .spec.hard;
    expect(hardNow()).toEqual({ 'requests.nvidia.com/gpu': '6' });
    const real = capture();
    expect(
      await main(['quota', 'rollback', '--kubeconfig', kc, '--config', config, '--hold-minutes', '30'], real.io, {}),
    ).toBe(0);
    expect(real.out).toEqual([
      'rolled back ml: requests.nvidia.com/gpu 6 → 4; held from rewrites for 30 min',
      'no bus given (--endpoint): Quota Rewritten not published',
    ]);
    expect(hardNow()).toEqual({ 'requests.nvidia.com/gpu': '4' });
    const again = capture();
    await main(['quota', 'rollback', '--kubeconfig', kc, '--config', config], again.io, {});
    expect(again.out[0]).toBe('rolled back ml: requests.nvidia.com/gpu 4 → 6; held from rewrites for 60 min');
  });

  it('deletes a quota gpu-reflex created, and refuses to go below usage without --force', async () => {
    const quota = (ns: string, previous: string, gpus: string) => ({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'gpu-reflex', namespace: ns, annotations: { 'gpu-reflex.io/previous-hard': previous } },
      spec: { hard: { 'requests.nvidia.com/gpu': gpus } },
    });
    sim = await startKubeSim({
      fleet: {
        nodes: [{ name: 'gpu', allocatable: { 'nvidia.com/gpu': 8 } }],
        namespaces: [{ name: 'ml' }, { name: 'nlp' }],
        objects: [quota('ml', 'null', '8'), quota('nlp', '{"requests.nvidia.com/gpu":"2"}', '6')],
        pods: [{ name: 'run', namespace: 'nlp', count: 4, requests: { 'nvidia.com/gpu': 1 } }],
      },
    });
    const kc = join(dir, 'kubeconfig-created');
    sim.writeKubeconfig(kc);
    const config = join(dir, 'teams-two.yaml');
    writeFileSync(config, 'teams: [{ name: ml, namespaces: [ml] }, { name: nlp, namespaces: [nlp] }]\n');
    const q = (ns: string) =>
      sim!.store.get('resourcequotas', ns, 'gpu-reflex') as unknown as
        { spec: { hard: Record<string, string> } } | undefined;
    const first = capture();
    expect(await main(['quota', 'rollback', '--kubeconfig', kc, '--config', config], first.io, {})).toBe(1);
    expect(first.out).toEqual([
      'rolled back ml: deleted the quota gpu-reflex had created (requests.nvidia.com/gpu 8 → unset); ' +
        'rewrite-quotas writes it again at its next round',
      'refused nlp: going back would put it below what it uses: requests.nvidia.com/gpu 2 < 4 used; nothing ' +
        'changed (gpu-reflex quota rollback --force to roll back anyway)',
      'no bus given (--endpoint): Quota Rewritten not published',
    ]);
    expect(q('ml')).toBeUndefined();
    expect(q('nlp')?.spec.hard).toEqual({ 'requests.nvidia.com/gpu': '6' });
    const forced = capture();
    const args = ['quota', 'rollback', '--kubeconfig', kc, '--config', config, '--namespace', 'nlp', '--force'];
    expect(await main(args, forced.io, {})).toBe(0);
    expect(forced.out.slice(0, 2)).toEqual([
      'rolled back nlp: requests.nvidia.com/gpu 6 → 2; held from rewrites for 60 min',
      'warning: nlp: going back would put it below what it uses: requests.nvidia.com/gpu 2 < 4 used: its running ' +
        'pods stay, new ones are refused until they fit',
    ]);
    expect(q('nlp')?.spec.hard).toEqual({ 'requests.nvidia.com/gpu': '2' });
  });
});

describe('gpu-reflex quota plan and rollback usage', () => {
  const unread = () => Promise.reject(new Error('a refused command reads no fleet'));
  it.each([
    ['plan', '--fleet f --bogus'],
    ['plan', '--fleet'],
    ['rollback', '--kubeconfig k --bogus'],
    ['rollback', '--kubeconfig k --namespace'],
  ])('quota %s refuses `%s` as a UsageError, not a raw TypeError', async (which, line) => {
    const command = which === 'plan' ? createQuotaPlanCommand(unread) : quotaRollbackCommand;
    await expect(command.run(line.split(' '), capture().io)).rejects.toThrow(UsageError);
  });

  it.each(['', ' '])('quota rollback refuses --hold-minutes=%j instead of holding for 0 minutes', async (text) => {
    await expect(
      quotaRollbackCommand.run(['--kubeconfig', 'k', `--hold-minutes=${text}`], capture().io),
    ).rejects.toThrow(`--hold-minutes must be an integer from 0 to 10080 (got "${text}")`);
  });
});
