import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32 on the embedded stack: a dead device plugin is a reflex. The agent sees NVML's GPUs that the node
 * no longer advertises at its next actuator tick, remediation restarts the plugin's pod (a new one serves), and
 * a node whose new plugin fails the same way is tainted and a person told, with the plugin's error line.
 */
describe('gpu-reflex simulate, device-plugin-dead scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('device-plugin-dead.yaml', lines);
  }, 180_000);

  const start = Date.parse('2041-07-01T00:00:00Z');
  const breaksAt = start + 60_000;
  type Mismatch = { node: string; state: string; observedAt: string; pluginErrors?: string[] };
  type Action = { node: string; step: string; reason: string; pods: string[]; occurredAt: string };
  const mismatches = () =>
    result.report.events.filter((e) => e.detailType === 'Device Plugin Mismatch').map((e) => e.detail as Mismatch);
  const actions = (node: string) =>
    result.report.actions
      .filter((a) => a.detailType === 'Device Plugin Action')
      .map((a) => a.detail as unknown as Action)
      .filter((a) => a.node === node);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('notices each dead plugin within one agent tick (the actuator reads its Node every 5 s)', () => {
    for (const node of ['a100-dp-0', 'a100-dp-1']) {
      const first = mismatches().find((m) => m.node === node && m.state === 'firing');
      expect(Date.parse(first!.observedAt) - breaksAt).toBeLessThanOrEqual(5_000);
    }
  });

  it('restarts the crashed plugin once: its DaemonSet makes a new pod, and the node advertises its 4 GPUs again', () => {
    const steps = actions('a100-dp-0');
    expect(steps.map((a) => a.step)).toEqual(['restart', 'untaint']);
    const evicted = steps[0]!.pods;
    expect(evicted).toHaveLength(1);
    const plugin = result.report.final.pods.filter(
      (p) => p.spec.nodeName === 'a100-dp-0' && p.metadata.labels?.name === 'nvidia-device-plugin-ds',
    );
    expect(plugin).toHaveLength(1);
    expect(`${plugin[0]!.metadata.namespace}/${plugin[0]!.metadata.name}`).not.toBe(evicted[0]);
  });

  it("taints the node whose new plugin fails the same way, fence.verifyMinutes after the restart, quoting the plugin's log", () => {
    const steps = actions('a100-dp-1');
    expect(steps.map((a) => a.step)).toEqual(['restart', 'taint']);
    const [restart, taint] = steps;
    expect(Date.parse(taint!.occurredAt) - Date.parse(restart!.occurredAt)).toBeGreaterThanOrEqual(2 * 60_000);
    expect(taint!.reason).toContain('could not load NVML library: libnvidia-ml.so.1');
    expect(taint!.reason).toContain('a person must look at the device plugin');
    const firing = mismatches().find((m) => m.node === 'a100-dp-1' && m.state === 'firing');
    // The kubelet's CRI prefix (time, stream, tag) is cut: the plugin's own words.
    expect(firing?.pluginErrors).toEqual([
      'could not load NVML library: libnvidia-ml.so.1: cannot open shared object file: No such file or directory',
    ]);
  });
});
