import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { simulateScenario } from './scenario-run.ts';

/**
 * Issue #32 on the embedded stack: MPS: the agent reads NVML's MPS client listing, so a hardware XID moves
 * the card's clients (not the control daemon's pod) and the other card's clients stay.
 */
describe('gpu-reflex simulate, sharing-mps scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('sharing-mps.yaml', lines);
  }, 180_000);

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
  });

  it('says, in the remediation that moves the broken card, how many teams it moves', () => {
    const moved = result.report.actions.find(
      (a) => a.detailType === 'Remediation' && /The GPU is shared/.test(String(a.detail.reason)),
    );
    expect(String(moved?.detail.reason)).toContain('2 pod(s) of 2 teams (team-b, team-d)');
  });

  it("shows each card's MPS server (the control daemon's pod, placed once the plugin labelled the node mps.capable) among its compute processes", () => {
    type Inv = { gpus: { processes: { podUid?: string; mps?: boolean }[] }[] };
    const inv = result.report.events.filter((e) => e.detailType === 'GPU Inventory').at(-1)?.detail as Inv;
    const daemon = result.report.final.pods.find((p) => p.metadata.name.includes('mps-control-daemon'));
    for (const g of inv.gpus)
      expect(g.processes.filter((p) => !p.mps).map((p) => p.podUid)).toEqual([daemon?.metadata.uid]);
  });

  it("names the card's MPS clients in the XID event, not the MPS server's pod", () => {
    const xid48 = result.report.events.find(
      (e) => e.detailType === 'GPU XID Error' && (e.detail as { xid: number }).xid === 48,
    );
    expect((xid48?.detail as { sharing?: string }).sharing).toBe('mps');
    expect((xid48?.detail as { pods: unknown[] }).pods).toHaveLength(2);
  });
});
