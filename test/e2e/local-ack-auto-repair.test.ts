import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RemediationDetail } from '../../events/index.ts';
import { loadScenario } from '../../infra/local/scenario.ts';
import { startStack } from '../../infra/local/stack.ts';
import { REPO_ROOT } from '../../infra/local/stack-env.ts';

/**
 * node-reboot.yaml with its node pool's ACK auto repair on (a file of its own: the functions wire
 * once per process, against the first stack's endpoints). ACK repairs that pool's nodes itself, so
 * remediation drains the node and leaves the repair to it: no RebootInstance, and it says why.
 */
describe("a node pool with ACK's own auto repair", () => {
  it('is not rebooted by gpu-reflex: the drained node is left to ACK, and the Remediation says so', async () => {
    const scenario = loadScenario(join(REPO_ROOT, 'infra/local/scenarios/node-reboot.yaml'));
    const cloud = scenario.cloudFile!;
    const auto = {
      ...scenario,
      durationSeconds: 300,
      endWhenMet: false,
      expect: [],
      cloudFile: { ...cloud, pools: cloud.pools.map((p) => ({ ...p, autoRepair: true })) },
    };
    const lines: string[] = [];
    const { report } = await (await startStack(auto, { clock: 'virtual', out: (l) => void lines.push(l) })).run();
    const remediations = report.events
      .filter((e) => e.detailType === 'Remediation')
      .map((e) => e.detail as RemediationDetail);
    expect(remediations.some((r) => r.steps.some((s) => s.kind === 'reboot'))).toBe(false);
    expect(remediations.map((r) => r.reason).join('\n')).toContain(
      'ACK auto repair of node pool a100-train (np-a100-train) repairs this node, so gpu-reflex defers',
    );
    expect(lines.some((l) => /is rebooting/.test(l))).toBe(false);
    const node = report.final.nodes.find((n) => n.metadata.name === 'a100-train-0')!;
    expect(node.metadata.labels?.['gpu-reflex.io/state']).toBe('awaiting-repair');
  }, 60_000);
});
