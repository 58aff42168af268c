import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../bin/main.ts';
import { startKubeSim, type KubeSim } from '../../infra/local/kube/index.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return {
    io: { out: (l: string) => void out.push(...l.split('\n')), err: (l: string) => void err.push(l) },
    out,
    err,
  };
}
const TEAMS = join(REPO_ROOT, 'infra/local/scenarios/quota-teams.yaml');
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
    const args = ['--config', join(REPO_ROOT, 'infra/local/scenarios/quota-two-teams.yaml')];
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
});
