import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../events/cli-kit/command.ts';
import { main } from '../../../bin/main.ts';
import { makeClusterServeCommand } from './cli.ts';
import type { KubeSim } from './index.ts';

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => void out.push(l), err: (l: string) => void err.push(l) }, out, err };
}

describe('gpu-reflex cluster serve', () => {
  it('serves the example fleet, writes a kubeconfig and stops when told', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kube-sim-cli-'));
    const kubeconfig = join(dir, 'config.yaml');
    let stop!: () => void;
    let ready!: (sim: KubeSim) => void;
    const started = new Promise<KubeSim>((r) => (ready = r));
    const cmd = makeClusterServeCommand({ stop: new Promise<void>((r) => (stop = r)), onReady: (s) => ready(s) });
    const { io, out } = capture();
    const running = cmd.run(['--port', '0', '--kubeconfig-out', kubeconfig], io);
    const sim = await started;
    const nodes = (await (await fetch(`${sim.url}/api/v1/nodes`)).json()) as {
      items: { metadata: { name: string } }[];
    };
    expect(nodes.items.map((n) => n.metadata.name)).toContain('h100-mig-0');
    expect(readFileSync(kubeconfig, 'utf8')).toContain(`server: ${sim.url}`);
    expect(out[0]).toBe(`simulated cluster listening on ${sim.url}`);
    expect(out).toContain(`kubeconfig: ${kubeconfig}`);
    stop();
    expect(await running).toBe(0);
    await expect(fetch(`${sim.url}/version`)).rejects.toThrow();
  });

  it('reports a bad fleet file by field and exits 1', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kube-sim-cli-'));
    const fleet = join(dir, 'fleet.yaml');
    writeFileSync(fleet, 'nodes:\n  - name: gpu\n    allocatable: { nvidia.com/gpu: lots }\n');
    const { io, err } = capture();
    expect(await main(['cluster', 'serve', '--fleet', fleet], io)).toBe(1);
    expect(err).toHaveLength(1);
    expect(err[0]).toContain('nodes.0.allocatable.nvidia.com/gpu');
  });

  it.each([[['--port', 'http']], [['--bogus']]])('rejects bad usage %j', async (args) => {
    await expect(makeClusterServeCommand({ stop: Promise.resolve() }).run(args, capture().io)).rejects.toBeInstanceOf(
      UsageError,
    );
  });
});
