import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #13 on the embedded stack, on the virtual clock: three T4 pods wait while both nodes of
 * the ACK node pool are busy. autoscale-pools (through the real Alibaba Cloud SDK, against the
 * simulated region) grows the T4 pool, not the dearer A10 one, by exactly the three nodes needed;
 * the instances boot and join the cluster as nodes of that pool, the pods run there, and the next
 * round reports the ACK task done. Re-running while they boot asks for nothing more.
 */
describe('autoscale-pools on the embedded stack', () => {
  it('grows the T4 pool by three for three waiting pods; the new nodes join and run them', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-autoscale.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const scaled = report.events.filter((e) => e.detailType === 'GPU Pool Scaled').map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((e) => [e.nodepoolId, e.state, e.from, e.to])).toEqual([
      ['np-t4-inference', 'requested', 2, 5],
      ['np-t4-inference', 'succeeded', 2, 5],
    ]);
    expect(scaled[0]).toMatchObject({ provider: 'alicloud', hourlyCostDelta: { amount: 25.5, currency: 'CNY' }, dryRun: false });
    const joined = report.final.nodes.filter((n) => n.metadata.labels?.['alibabacloud.com/nodepool-id'] === 'np-t4-inference' && !n.metadata.name.startsWith('t4-infer'));
    expect(joined).toHaveLength(3);
    for (const n of joined) expect(n.metadata.labels).toMatchObject({ accelerator: 'nvidia-tesla-t4', 'node.kubernetes.io/instance-type': 'ecs.gn6i-c4g1.xlarge' });
    const onNew = report.final.pods.filter((p) => p.metadata.name.startsWith('batch-embed')).map((p) => p.spec.nodeName);
    expect(new Set(onNew)).toEqual(new Set(joined.map((n) => n.metadata.name)));
    // Pods arrive at 10 s and wait 30 s; the first round after that (1:00) grows the pool; the
    // instances take 90 s to boot; the round between (2:00) asks for nothing more.
    expect(lineAt(lines, /autoscale-pools\s+GPU Pool Scaled\s+node pool t4-inference grow 2 → 5/)).toBe(60);
    expect(lines).toContainEqual(expect.stringMatching(/02:00\.0\s+autoscale-pools\s+3 GPU pods pending: 3 wait for nodes on their way/));
    expect(lineAt(lines, /joined the cluster: .* node pool t4-inference/)).toBe(150);
  }, 60_000);
});
