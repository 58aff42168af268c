import { describe, expect, it } from 'vitest';
import type { MigLayoutChangeDetail } from '../../events/index.ts';
import { SIM_GPU_LAYOUT_ANNOTATION } from '../../infra/local/kube/mig-manager.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Preemption by policy (issue #12) on the embedded stack: an H100 whose two GPUs both run
 * priority-0 notebooks, four priority-1000 pods waiting for 1g.10gb. With the policy's
 * preemption on, the GPU that destroys the least is relaid after its notebook is evicted through
 * the Eviction API; with it off, nothing moves.
 */
describe('rebalance-mig preemption on the embedded stack', () => {
  it('evicts the one notebook on GPU 1, relays it, and the high-priority pods run', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-preemption.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    const changes = report.events
      .filter((e) => e.detailType === 'MIG Layout Change')
      .map((e) => e.detail as MigLayoutChangeDetail);
    expect(changes.map((c) => c.state)).toEqual(['pending', 'success']);
    expect(changes[0]).toMatchObject({
      gpus: [{ index: 1, from: { '7g.80gb': 1 } }],
      evictedPods: 1,
      preempted: [{ namespace: 'research', name: 'notebook-big-0', priority: 0 }],
    });
    expect(changes[0]!.reason).toContain('preempting research/notebook-big-0');
    // Only the preempted notebook was evicted; the others kept GPU 0.
    expect(report.evicted).toEqual(['research/notebook-big-0']);
    const pods = report.final.pods;
    for (const p of pods.filter((x) => x.metadata.namespace === 'serve')) expect(p.spec.nodeName).toBe('h100-nb-0');
    for (const name of ['notebook-mid-0', 'notebook-small-0'])
      expect(pods.find((p) => p.metadata.name === name)?.status?.phase).toBe('Running');
    // The StatefulSet's replacement waits for a 7g.80gb no GPU has now.
    expect(pods.find((p) => p.metadata.name === 'notebook-big-0')?.spec.nodeName).toBeUndefined();
    const node = report.final.nodes.find((n) => n.metadata.name === 'h100-nb-0')!;
    const layout = JSON.parse(node.metadata.annotations?.[SIM_GPU_LAYOUT_ANNOTATION] ?? '[]') as string[][];
    expect([...layout[0]!].sort()).toEqual(['3g.40gb', '4g.40gb']);
    expect(layout[1]).toEqual(['1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb', '1g.10gb+me', '1g.20gb']);
  }, 90_000);

  it('with preemption off, evicts nobody and relays nothing', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-preemption-off.yaml', lines);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(exitCode).toBe(0);
    expect(report.events.filter((e) => e.detailType === 'MIG Layout Change')).toEqual([]);
    expect(report.evicted).toEqual([]);
  }, 90_000);
});
