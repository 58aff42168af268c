import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { makeLocalCommand } from '../../infra/local/cli.ts';
import { startKubeSim, wallClock } from '../../infra/local/kube/index.ts';
import { parseScenario } from '../../infra/local/scenario.ts';
import type { StackResult } from '../../infra/local/stack.ts';

/**
 * `gpu-reflex local --kubeconfig F --write-to-real-cluster`: the user chose to let the stack act on
 * a cluster that is not the simulated one (here a simulator started without its marker, so it is
 * "real" to the command). Its agents read mock GPUs, so the node labeler must not put their driver,
 * CUDA or model on that cluster's nodes, although it runs on their inventories.
 */
describe('local on a real cluster, writes allowed', () => {
  it('never puts the mock inventory on its nodes', async () => {
    const path = join(import.meta.dirname, '../../infra/local/scenarios/node-labels.yaml');
    const scenario = parseScenario(
      readFileSync(path, 'utf8'),
      path,
      join(import.meta.dirname, '../../infra/local/scenarios'),
    );
    const real = await startKubeSim({ fleet: scenario.parsedFleet, clock: wallClock, marker: false });
    const work = mkdtempSync(join(tmpdir(), 'gpu-reflex-real-'));
    const kubeconfig = join(work, 'real.yaml');
    real.writeKubeconfig(kubeconfig);
    const labelsBefore = real.store.nodes().map((n) => n.metadata.labels);
    let result: StackResult | undefined;
    const lines: string[] = [];
    try {
      const code = await makeLocalCommand({ onResult: (r) => (result = r) }).run(
        ['--scenario', path, '--kubeconfig', kubeconfig, '--write-to-real-cluster', '--duration', '4'],
        { out: (l) => lines.push(l), err: (l) => lines.push(l) },
      );
      expect(code).toBe(0);
      // The labeler ran on the agents' inventories…
      const inventories = result!.report.events.filter((e) => e.detailType === 'GPU Inventory');
      expect(inventories.map((e) => (e.detail as { node: string }).node).sort()).toEqual(['a100-0', 'a100-1']);
      // …and wrote nothing: the nodes' labels are as they were, and no labeler record is on them.
      expect(real.store.nodes().map((n) => n.metadata.labels)).toEqual(labelsBefore);
      expect(real.store.nodes().map((n) => n.metadata.annotations?.['gpu-reflex.io/labeler'])).toEqual([
        undefined,
        undefined,
      ]);
      expect(result!.report.events.filter((e) => e.detailType === 'Node Labels Changed')).toEqual([]);
      expect(lines.join('\n')).toContain('node labeler: labels nothing on this cluster');
    } finally {
      await real.close();
      rmSync(work, { recursive: true, force: true });
    }
  }, 90_000);
});
