import { describe, expect, it } from 'vitest';
import type { GpuPoolScaledDetail } from '../../events/index.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #13 on the embedded stack, on the virtual clock: three T4 pods wait while both nodes of
 * the ACK node pool are busy. autoscale-pools (through the real Alibaba Cloud SDK, against the
 * simulated region) grows the T4 pool, not the dearer A10 one, by exactly the three nodes needed;
 * the instances boot and join the cluster as nodes of that pool, the pods run there, and the next
 * round reports the ACK task done. Re-running while they boot asks for nothing more. When the
 * batch has finished and the new nodes have idled, they are drained and given back, and the pool
 * is at its minimum again.
 */
describe('autoscale-pools on the embedded stack', () => {
  it('grows the T4 pool by three for three waiting pods; the new nodes join and run them', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('pool-autoscale.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const scaled = report.events
      .filter((e) => e.detailType === 'GPU Pool Scaled')
      .map((e) => e.detail as GpuPoolScaledDetail);
    expect(scaled.map((e) => [e.nodepoolId, e.state, e.from, e.to])).toEqual([
      ['np-t4-inference', 'requested', 2, 5],
      ['np-t4-inference', 'succeeded', 2, 5],
      ['np-t4-inference', 'requested', 5, 2],
      ['np-t4-inference', 'succeeded', 5, 2],
    ]);
    expect(scaled[0]).toMatchObject({
      provider: 'alicloud',
      hourlyCostDelta: { amount: 25.5, currency: 'CNY' },
      dryRun: false,
    });
    expect(scaled[2]).toMatchObject({ hourlyCostDelta: { amount: -25.5, currency: 'CNY' } });
    // The three nodes that joined ran the batch, then left; the pool's own two stayed.
    const joined = [
      ...new Set(
        lines
          .map((l) => /(cn-hangzhou\.\S+) joined the cluster/.exec(l)?.[1])
          .filter((x): x is string => x !== undefined),
      ),
    ];
    expect(joined).toHaveLength(3);
    for (const n of joined)
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`${n.replace(/\./g, '\\.')} left the cluster; i-\\w+ released`)),
      );
    expect(
      report.final.nodes
        .filter((n) => n.metadata.labels?.['alibabacloud.com/nodepool-id'] === 'np-t4-inference')
        .map((n) => n.metadata.name),
    ).toEqual(['t4-infer-0', 't4-infer-1']);
    for (let i = 0; i < 3; i++)
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`pod ml-infer/batch-embed-${i} scheduled on cn-hangzhou\\.`)),
      );
    // Each joined node got its agent, as the DaemonSet starts one: it reports its GPU and the pod on
    // it, and stops when the node leaves.
    for (const n of joined) {
      const inventories = report.events.filter(
        (e) => e.detailType === 'GPU Inventory' && (e.detail as { node: string }).node === n,
      );
      expect(inventories.length).toBeGreaterThan(0);
      expect(lines).toContainEqual(
        expect.stringMatching(new RegExp(`${n.replace(/\./g, '\\.')} left: its node agent stops`)),
      );
    }
    expect(lineAt(lines, /cn-hangzhou\.\S+\s+GPU Inventory\s+1 × Tesla T4, 1 pod on them/)).toBe(151);
    // Pods arrive at 10 s and wait 30 s; the first round after that (1:00) grows the pool; the
    // instances take 90 s to boot; the round between (2:00) asks for nothing more.
    expect(lineAt(lines, /autoscale-pools\s+GPU Pool Scaled\s+node pool t4-inference grow 2 → 5/)).toBe(60);
    expect(lines).toContainEqual(
      expect.stringMatching(/02:00\.0\s+autoscale-pools\s+3 GPU pods pending: 3 wait for nodes on their way/),
    );
    expect(lineAt(lines, /joined the cluster: .* node pool t4-inference/)).toBe(150);
    // The batch ends 5 min after it starts (2:30); the nodes idle from the next round (8:00) for
    // 5 min (scaleIn.idleMinutes), are drained at 13:00 and given back at the round after.
    expect(lineAt(lines, /autoscale-pools\s+draining .* to give back: idle, no GPU pod/)).toBe(13 * 60);
    expect(
      lineAt(lines, /autoscale-pools\s+GPU Pool Scaled\s+node pool t4-inference shrink 5 → 2 \(−25\.5 CNY\/h\)/),
    ).toBe(14 * 60);
  }, 60_000);
});
