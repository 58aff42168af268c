import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { makeSimulateCommand } from '../../infra/local/cli.ts';
import type { StackReport } from '../../infra/local/report.ts';
import { loadScenario } from '../../infra/local/scenario.ts';
import { startStack } from '../../infra/local/stack.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

/**
 * One clock (events/clock.ts) drives the agents, the bus, the simulated cluster and the functions
 * under `simulate`. The functions wire themselves once per process, so the second and third stack
 * runs of this file are child processes.
 */
const dir = mkdtempSync(join(tmpdir(), 'one-clock-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const io = { out: () => undefined, err: () => undefined };
const run = promisify(execFile);
const read = (p: string) => JSON.parse(readFileSync(p, 'utf8')) as StackReport;

const START = Date.parse('2030-06-01T00:00:00Z');
const HOURS_3 = 3 * 3600_000;

describe('simulate on the one virtual clock', () => {
  it('replays three hours in seconds, every time the functions see being virtual time', async () => {
    const reportPath = join(dir, 'quiet-hours.json');
    const code = await makeSimulateCommand().run(
      ['--scenario', join(REPO_ROOT, 'infra/local/scenarios/quiet-hours.yaml'), '--report', reportPath],
      io,
    );
    const r = read(reportPath);
    expect(code).toBe(0);
    expect(r.scenario.durationSeconds).toBeGreaterThanOrEqual(10_800);
    // The functions' own timestamps: had they read the wall clock (2026), these would be years off.
    const remediations = r.actions.filter((a) => a.detailType === 'Remediation');
    expect(remediations.length).toBeGreaterThanOrEqual(3);
    for (const a of remediations) {
      const at = Date.parse(String(a.detail.occurredAt));
      expect(at).toBeGreaterThanOrEqual(START);
      expect(at).toBeLessThanOrEqual(START + HOURS_3);
    }
    for (const e of r.events) {
      const at = Date.parse(e.event.time);
      expect(at).toBeGreaterThanOrEqual(START);
      expect(at).toBeLessThanOrEqual(START + HOURS_3);
    }
    // The escalation window, in policy minutes: three XIDs within the hour on GPU 5, across its two
    // notebooks, restart the one whose process hit it the third time (the kernel line's pid names it);
    // three on GPU 4 spread over 85 minutes never escalate.
    const acted = remediations.map((a) => ({
      action: a.detail.action,
      gpu: (a.detail.target as { gpus?: string[] } | undefined)?.gpus,
      pods: (a.detail.target as { pods?: string[] } | undefined)?.pods,
    }));
    const restarts = acted.filter((a) => a.action === 'restart-workload');
    expect(restarts).toHaveLength(1);
    expect(r.evicted.map((e) => e.split('/').pop()).sort()).toEqual(['notebook-8']);
    // The node's history was written in virtual time too.
    const node = r.final.nodes.find((n) => n.metadata.name === 'h100-mig-0')!;
    const history = Object.entries(node.metadata.annotations ?? {}).find(([k]) => k.endsWith('/history'))?.[1] ?? '';
    const years = [...history.matchAll(/"(\d{4})-\d\d-\d\dT/g)].map((m) => m[1]);
    expect(years.length).toBeGreaterThan(0);
    expect(new Set(years)).toEqual(new Set(['2030']));
  }, 120_000);

  it('comes to the same outcome as the wall-clock run of the same scenario', async () => {
    const scenario = join(dir, 'tiny.yaml');
    writeFileSync(
      scenario,
      `name: tiny
durationSeconds: 2
fleet:
  nodes:
    - { name: t4, count: 2, labels: { nvidia.com/gpu.product: Tesla-T4, nvidia.com/gpu.count: "1", gpu-reflex.io/pool: t4 }, allocatable: { cpu: "8", memory: 32Gi, nvidia.com/gpu: 1 } }
  namespaces: [{ name: ml }, { name: gpu-reflex }]
  pods:
    - { name: serve, namespace: ml, requests: { nvidia.com/gpu: 1 } }
timeline:
  - { at: 0.3s, node: t4-0, gpu: 0, fault: { kind: xid, xid: 79 } }
  - { at: 0.6s, node: t4-1, gpu: 0, fault: { kind: xid, xid: 13 } }
`,
    );
    const cli = join(REPO_ROOT, 'bin/gpu-reflex.js');
    const [virtual, wall] = [join(dir, 'virtual.json'), join(dir, 'wall.json')];
    await Promise.all([
      run(process.execPath, [cli, 'simulate', '--scenario', scenario, '--report', virtual]),
      run(process.execPath, [cli, 'local', '--scenario', scenario, '--report', wall]),
    ]);
    const outcome = (r: StackReport) => ({
      nodes: r.final.nodes.map((n) => ({
        name: n.metadata.name,
        cordoned: n.spec?.unschedulable === true,
        taints: (n.spec?.taints ?? []).map((t) => `${t.key}:${t.effect}`).sort(),
      })),
      remediations: r.actions
        .filter((a) => a.detailType === 'Remediation')
        .map((a) => `${a.detail.node}:${a.detail.action}:${a.detail.phase}`)
        .sort(),
      evicted: [...r.evicted].sort(),
    });
    const [v, w] = [read(virtual), read(wall)];
    expect(v.clock).toBe('virtual');
    expect(w.clock).toBe('wall');
    expect(outcome(v).remediations.length).toBeGreaterThan(0);
    expect(outcome(v)).toEqual(outcome(w));
  }, 120_000);

  it('refuses a virtual clock with a real cluster, whose timestamps and Leases keep their own time', async () => {
    const scenario = loadScenario(join(REPO_ROOT, 'infra/local/scenarios/default.yaml'));
    await expect(
      startStack(scenario, { clock: 'virtual', kubeconfig: join(dir, 'any.kubeconfig'), out: () => undefined }),
    ).rejects.toThrow(/virtual clock needs the simulated cluster/);
  });
});
