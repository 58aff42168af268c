import { describe, expect, it } from 'vitest';
import { simulateScenario } from './scenario-run.ts';

const [file, evicted, checks] = ['mig-instance-fault.yaml', 'research/notebook-2', 3] as const;

/**
 * Issues #27/#28, PodResources end to end on the embedded stack: the agents cannot trace GPU
 * processes to pods (agents.hostPID: false), so an XID's attribution is unknown; the simulated
 * kubelets serve PodResources v1 from the simulated device plugin's and DRA driver's allocation, the
 * agents read it, and the remediation moves only the pods holding the faulty GPU or MIG instance,
 * never every GPU pod of the node.
 */
describe('gpu-reflex simulate, mig-instance-fault scenario', () => {
  it('meets every expectation: only the holder of the faulty device is evicted, by PodResources', async () => {
    const lines: string[] = [];
    const result = await simulateScenario(file, lines);
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBeGreaterThanOrEqual(checks);
    const terminating = lines.filter((l) => /pod \S+ terminating on/.test(l)).map((l) => /pod (\S+)/.exec(l)![1]);
    expect(terminating).toEqual([evicted]);
    const remediation = result.report.actions.find((a) => a.detailType === 'Remediation')!;
    expect(String(remediation.detail.reason)).toContain("the kubelet's PodResources says 1 pod holds it");
  }, 120_000);
});
