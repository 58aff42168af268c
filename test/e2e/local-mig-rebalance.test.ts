import { describe, expect, it } from 'vitest';
import { readMigInventory, type MigLayoutChangeDetail } from '../../events/index.ts';
import { SIM_GPU_LAYOUT_ANNOTATION } from '../../infra/local/kube/mig-manager.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #12 on the embedded stack: an H100 node carved 7×1g.10gb on each of 4 GPUs, notebooks on
 * GPUs 0 and 1, two pods waiting for 3g.40gb. The node agent's MIG inventory says which GPUs are
 * busy; rebalance-mig writes the node's layout into the mig-parted ConfigMap, cordons, sets
 * nvidia.com/mig.config after the sync delay; the simulated mig-manager applies it; the function
 * uncordons on success and the pods run; the agent's NVML shows the new instances. Busy GPUs keep
 * their layout; nothing is evicted.
 */
describe('rebalance-mig on the embedded stack', () => {
  it('relays the idle GPU for the pods waiting on 3g.40gb, touching no busy GPU', async () => {
    const lines: string[] = [];
    const { report, exitCode } = await simulateScenario('mig-relayout.yaml', lines);
    expect(exitCode).toBe(0);
    expect(report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    const changes = report.events
      .filter((e) => e.detailType === 'MIG Layout Change')
      .map((e) => e.detail as MigLayoutChangeDetail);
    expect(changes.map((c) => c.state)).toEqual(['pending', 'success']);
    expect(changes[0]).toMatchObject({
      gpus: [{ index: 2, from: { '1g.10gb': 7 }, to: { '3g.40gb': 2 } }],
      demand: { 'nvidia.com/mig-3g.40gb': 2 },
      evictedPods: 0,
    });
    // The pods run on the new instances.
    for (const name of ['finetune-0', 'finetune-1'])
      expect(report.final.pods.find((p) => p.metadata.name === name)?.spec.nodeName).toBe('h100-0');
    const node = report.final.nodes.find((n) => n.metadata.name === 'h100-0')!;
    expect(JSON.parse(node.metadata.annotations?.[SIM_GPU_LAYOUT_ANNOTATION] ?? '[]')).toEqual([
      Array(7).fill('1g.10gb'),
      Array(7).fill('1g.10gb'),
      ['3g.40gb', '3g.40gb'],
      Array(7).fill('1g.10gb'),
    ]);
    expect(report.evicted).toEqual([]);
    // The agent's NVML follows mig-manager (the mock's migFile): its inventory now shows GPU 2's
    // two 3g.40gb instances, both running the fine-tuning pods, beside the notebooks on GPUs 0 and 1.
    const inv = readMigInventory(node.metadata.annotations ?? {}).inventory!;
    expect(inv.gpus.map((g) => g.instances.filter((i) => i.inUse).length)).toEqual([7, 3, 2, 0]);
    expect(inv.gpus[2]?.instances.map((i) => i.profile)).toEqual(['3g.40gb', '3g.40gb']);
    expect(lines).toContainEqual(
      expect.stringMatching(/rebalance-mig\s+checked 1 MIG node: no pod waits for a MIG instance/),
    );
    expect(lines).toContainEqual(
      expect.stringMatching(/rebalance-mig\s+nvidia\.com\/mig\.config set on h100-0: mig-manager reconfigures/),
    );
  }, 60_000);
});
