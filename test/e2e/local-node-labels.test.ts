import { describe, expect, it } from 'vitest';
import type { NodeLabelsChangedDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #17 on the embedded stack, on the virtual clock: label-nodes keeps two A100 nodes' labels as
 * their agents' GPU Inventory says while the inventory changes — a driver upgrade with MIG switched
 * on one GPU (the node's mock NVML changes and its agent restarts), then a GPU lost — and what a
 * person set by hand (a GKE-spelled accelerator, a team label) stays as they set it.
 */
describe('label-nodes on the embedded stack', () => {
  it('keeps the labels right across inventory changes, and leaves a person’s labels alone', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('node-labels.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const changed = report.events
      .filter((e) => e.detailType === 'Node Labels Changed')
      .map((e) => e.detail as NodeLabelsChangedDetail);
    const moves = (node: string) =>
      changed
        .filter((d) => d.node === node)
        .map((d) => d.changes.map((c) => `${c.key} ${c.from ?? '-'}→${c.to ?? '-'}`));
    expect(moves('a100-0')).toEqual([
      [
        'accelerator -→nvidia-a100',
        'gpu-count -→8',
        'gpu-reflex.io/cuda.version -→12.2',
        'gpu-reflex.io/driver.version -→535.161.08',
        'gpu-reflex.io/mig.capable -→true',
        'gpu-reflex.io/mig.enabled -→false',
        'gpu-reflex.io/mig.strategy -→none',
      ],
      // The maintenance: driver and CUDA upgraded, MIG on GPU 0 only. Its nvidia.com/gpu are the MIG-off GPUs, which
      // NVIDIA's single strategy refuses: the strategy cannot be told, so its label stays as it is.
      [
        'gpu-reflex.io/cuda.version 12.2→12.8',
        'gpu-reflex.io/driver.version 535.161.08→570.86.15',
        'gpu-reflex.io/mig.enabled false→true',
      ],
    ]);
    // The person's accelerator label is never written; the lost GPU leaves the count.
    expect(moves('a100-1')).toEqual([
      [
        'gpu-count -→8',
        'gpu-reflex.io/cuda.version -→12.2',
        'gpu-reflex.io/driver.version -→535.161.08',
        'gpu-reflex.io/mig.capable -→true',
        'gpu-reflex.io/mig.enabled -→false',
        'gpu-reflex.io/mig.strategy -→none',
      ],
      ['gpu-count 8→7'],
    ]);
    expect(changed.find((d) => d.node === 'a100-1')?.leftAlone).toEqual([
      { key: 'accelerator', value: 'nvidia-tesla-a100', wanted: 'nvidia-a100', why: 'set-by-someone-else' },
    ]);
    // The labels follow at once: at the restarted agent’s first inventory (its first sample, 0.2 s on) and at the loss.
    expect(
      lineAt(lines, /label-nodes\s+Node Labels Changed\s+a100-0: .*driver\.version 535\.161\.08 → 570\.86\.15/),
    ).toBeCloseTo(60.2, 5);
    expect(lineAt(lines, /label-nodes\s+Node Labels Changed\s+a100-1: gpu-count 8 → 7/)).toBe(180);
    const labels = (n: string) => report.final.nodes.find((x) => x.metadata.name === n)?.metadata.labels ?? {};
    expect(labels('a100-1')).toMatchObject({
      accelerator: 'nvidia-tesla-a100',
      team: 'ml',
      'nvidia.com/gpu.count': '8',
      'gpu-count': '7',
    });
    // GFD's labels (the fleet's nvidia.com/gpu.*) are as the fleet had them.
    expect(labels('a100-0')).toMatchObject({
      'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB',
      'nvidia.com/gpu.count': '8',
    });
  }, 120_000);
});
