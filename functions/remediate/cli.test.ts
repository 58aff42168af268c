import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { UsageError, type CliIo } from '../../events/cli-kit/command.ts';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startKubeSim } from '../../infra/local/kube/index.ts';
import { planCommand, policyCommand } from './cli.ts';
import { renderSteps } from './core/detail.ts';

function capture(files: Record<string, string> = {}): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (l) => stdout.push(l),
    err: (l) => stderr.push(l),
    readInput: async (path) => files[path] ?? readFile(path, 'utf8'),
  };
}

describe('gpu-reflex remediate policy', () => {
  it('prints the rules of the example policy for a pool', async () => {
    const io = capture();
    expect(await policyCommand.run(['examples/remediation-policy.yaml', '--pool', 't4-inference'], io)).toBe(0);
    expect(io.stdout.find((l) => l.startsWith('XID 94 '))).toMatch(/quarantine-gpu\s+-/);
    expect(io.stdout.find((l) => l.startsWith('XID 79 '))).toContain('drain-node');
    expect(io.stdout.find((l) => l.startsWith('monitoring-degraded'))).toContain('observe + notify');
  });

  it('prints the rule a profile gives for a pool and GPU model, naming the profile', async () => {
    const io = capture();
    const args = ['examples/remediation-policy.yaml', '--pool', 'h100-train', '--gpu-model', 'NVIDIA H100 80GB HBM3'];
    expect(await policyCommand.run(args, io)).toBe(0);
    expect(io.stdout.find((l) => l.startsWith('XID 79 '))).toContain('reboot-node (profile h100-train-79)');
    expect(io.stdout.find((l) => l.startsWith('XID 13 '))).not.toContain('profile');
  });

  it('reports a bad file by line and field, exit code 1', async () => {
    const io = capture({ 'bad.yaml': 'xids:\n  79:\n    action: explode\n' });
    expect(await policyCommand.run(['bad.yaml'], io)).toBe(1);
    expect(io.stderr[0]).toMatch(/^bad\.yaml:3: xids\.79\.action: expected one of/);
  });
});

describe('gpu-reflex remediate plan', () => {
  it('plans the example XID 79 event as a drain, in dry run', async () => {
    const io = capture({
      'facts.json': JSON.stringify({
        pods: [
          {
            namespace: 'ml-training',
            name: 'llama-ft-worker-3',
            uid: '7c1e4b52-93a0-4d8e-b6f1-2a9c0e5d7f31',
            requestsGpu: true,
          },
        ],
      }),
    });
    expect(await planCommand.run(['events/catalog/gpu-xid-error.example.json', '--facts', 'facts.json'], io)).toBe(0);
    const plan = JSON.parse(io.stdout.join('\n'));
    expect(plan).toMatchObject({ kind: 'act', action: 'drain-node' });
    expect(plan).not.toHaveProperty('dryRun');
    expect(renderSteps(plan).map((s: { kind: string }) => s.kind)).toEqual([
      'taint',
      'cordon',
      'label',
      'annotate',
      'evict',
      'notify',
    ]);
  });

  it('refuses a facts file whose node taint has an effect Kubernetes does not know, naming the field', async () => {
    const node = { name: 'gpu-node-1', taints: [{ key: 'gpu-reflex.io/unhealthy', effect: 'NoScheduel' }] };
    const io = capture({ 'facts.json': JSON.stringify({ node }) });
    await expect(
      planCommand.run(['events/catalog/gpu-xid-error.example.json', '--facts', 'facts.json'], io),
    ).rejects.toThrow(/^--facts facts\.json: node\.taints\.0\.effect: /);
  });

  it('refuses an event that is not a GPU fault', async () => {
    await expect(planCommand.run(['events/catalog/remediation.example.json'], capture())).rejects.toThrow(
      /detail-type "Remediation"/,
    );
  });

  it('with --kubeconfig, runs the handler against a live cluster and changes nothing there', async () => {
    const sim = await startKubeSim({
      fleet: {
        nodes: [
          {
            name: 'gpu-a100-07',
            labels: { 'gpu-reflex.io/pool': 'a100' },
            allocatable: { cpu: '96', memory: '1000Gi', 'nvidia.com/gpu': 8 },
          },
        ],
        namespaces: [{ name: 'ml-training' }],
        pods: [
          {
            name: 'llama-ft-worker-3',
            namespace: 'ml-training',
            node: 'gpu-a100-07',
            owner: { kind: 'Job', name: 'llama' },
            requests: { 'nvidia.com/gpu': 1 },
          },
        ],
      },
    });
    try {
      const kubeconfig = join(mkdtempSync(join(tmpdir(), 'gr-plan-')), 'kubeconfig');
      sim.writeKubeconfig(kubeconfig);
      const io = capture();
      expect(await planCommand.run(['events/catalog/gpu-xid-error.example.json', '--kubeconfig', kubeconfig], io)).toBe(
        0,
      );
      const out = JSON.parse(io.stdout.join('\n'));
      expect(out.plan).toMatchObject({ kind: 'act', action: 'drain-node' });
      expect(out.wouldWrite).toContainEqual({
        op: 'nodes.update',
        args: ['gpu-a100-07', expect.objectContaining({ unschedulable: true })],
      });
      // JSON output: the absent eviction options print as null.
      expect(out.wouldWrite).toContainEqual({
        op: 'pods.evict',
        args: ['ml-training', 'llama-ft-worker-3', { uid: expect.any(String) }],
      });
      expect(out.wouldPublish[0]).toMatchObject({
        detailType: 'Remediation',
        detail: { dryRun: true, action: 'drain-node' },
      });
      const node = sim.store.node('gpu-a100-07')!;
      expect(node.spec?.unschedulable ?? false).toBe(false);
      expect(node.spec?.taints ?? []).toEqual([]);
      expect(sim.store.pod('ml-training', 'llama-ft-worker-3')!.metadata.deletionTimestamp).toBeUndefined();
    } finally {
      await sim.close();
    }
  });
});

describe('gpu-reflex remediate policy and plan usage', () => {
  const EVENT = 'events/catalog/gpu-xid-error.example.json';
  it.each([
    ['policy', ['examples/remediation-policy.yaml', '--bogus']],
    ['policy', ['examples/remediation-policy.yaml', '--pool']],
    ['plan', [EVENT, '--bogus']],
    ['plan', [EVENT, '--policy']],
  ])('remediate %s refuses %j as a UsageError, not a raw TypeError', async (which, args) => {
    const command = which === 'policy' ? policyCommand : planCommand;
    await expect(command.run(args, capture())).rejects.toThrow(UsageError);
  });
});
