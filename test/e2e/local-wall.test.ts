import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../events/cli-kit/command.ts';
import { validateEvent } from '../../events/validate.ts';
import { makeLocalCommand } from '../../infra/local/cli.ts';
import type { StackReport } from '../../infra/local/report.ts';

/**
 * `gpu-reflex local` on the wall clock, once, with a tiny scenario (one node, ended as soon as the XID
 * is on the bus: endWhenMet, with a 60 s deadline for a loaded machine). Its own file
 * on purpose: the functions wire themselves once per process (functions/lib/wiring.ts), so each
 * stack run that reaches them needs a fresh module graph, which vitest gives every test file.
 * The XID comes 2 s in, after the agent's first sample (NVML processes, their cgroups, the kubelet's
 * PodResources) has named the pod on the GPU: at 0.3 s it raced that first sample on a loaded machine.
 */
const dir = mkdtempSync(join(tmpdir(), 'local-wall-test-'));
const io = { out: () => undefined, err: () => undefined };

describe('gpu-reflex local, on the wall clock', () => {
  it('runs a one-node scenario for real and delivers the injected XID from its agent', async () => {
    const path = join(dir, 'tiny.yaml');
    writeFileSync(
      path,
      `name: tiny
durationSeconds: 60
endWhenMet: true
fleet:
  nodes:
    - { name: t4, count: 1, labels: { nvidia.com/gpu.product: Tesla-T4, nvidia.com/gpu.count: "1" }, allocatable: { cpu: "8", memory: 32Gi, nvidia.com/gpu: 1 } }
  namespaces: [{ name: ml }, { name: gpu-reflex }]
  pods:
    - { name: serve, namespace: ml, requests: { nvidia.com/gpu: 1 } }
timeline:
  - { at: 2s, node: t4-0, gpu: 0, fault: { kind: xid, xid: 79 } }
expect:
  - { event: GPU XID Error, node: t4-0, atLeast: 1 }
`,
    );
    const reportPath = join(dir, 'tiny.json');
    expect(await makeLocalCommand().run(['--scenario', path, '--report', reportPath], io)).toBe(0);
    const r = JSON.parse(readFileSync(reportPath, 'utf8')) as StackReport;
    expect(r.clock).toBe('wall');
    expect(r.scenario.durationSeconds).toBeLessThan(60);
    const xid = r.events.find((e) => e.detailType === 'GPU XID Error');
    expect(validateEvent(xid?.event)).toMatchObject({ ok: true });
    const serve = r.final.pods.find((p) => p.metadata.name === 'serve');
    expect((xid?.detail as { pods: { uid: string }[] }).pods[0]?.uid).toBe(serve?.metadata.uid);
  }, 90_000);
});

describe('gpu-reflex local, start-up failures', () => {
  it("refuses a kubeconfig that does not load as the user's input, naming the file and the cause", async () => {
    // A missing file is refused by its reader (test/contract/cli-errors.test.ts); this one exists
    // but is not a kubeconfig: it is refused before anything starts, as the user's input (exit 1,
    // bin/errors.ts), when the command asks the cluster whether it is the simulated one.
    const broken = join(dir, 'broken.kubeconfig');
    writeFileSync(broken, 'clusters: [\n');
    const run = makeLocalCommand().run(['--kubeconfig', broken, '--duration', '1'], {
      out: () => undefined,
      err: () => undefined,
    });
    await expect(run).rejects.toThrow(InputError);
    await expect(run).rejects.toThrow(/--kubeconfig .*broken\.kubeconfig: kube access: cannot load kubeconfigPath/);
  });
});
