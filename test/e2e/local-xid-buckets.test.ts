import { beforeAll, describe, expect, it } from 'vitest';
import type { StackResult } from '../../infra/local/stack.ts';
import { lineAt, simulateScenario } from './scenario-run.ts';

/**
 * Issue #36 on the embedded stack, real agents reading the kernel log: XIDs NVIDIA's catalog says to
 * ignore, on a node whose every GPU is busy, move nothing; a RESTART_APP XID restarts its own pod
 * only; a 147 is observed even on a line that says Fatal; a fatal 149 row (NETIR_LINK_DOWN) fences,
 * resets, probes and returns its GPU.
 */
describe('gpu-reflex simulate, xid-buckets scenario', () => {
  let result: StackResult;
  const lines: string[] = [];
  beforeAll(async () => {
    result = await simulateScenario('xid-buckets.yaml', lines);
  }, 120_000);

  const remediations = (node: string) =>
    result.report.actions
      .filter((a) => a.detailType === 'Remediation' && (a.detail.target as { node: string }).node === node)
      .map((a) => ({
        xid: (a.detail.trigger as { xid?: number }).xid,
        action: String(a.detail.action),
        reason: String(a.detail.reason),
      }));
  const terminating = (node: string) =>
    lines
      .filter((l) => new RegExp(`pod ml-train/\\S+ terminating on ${node}\\b`).test(l))
      .map((l) => /pod ml-train\/(\S+) terminating/.exec(l)![1]);
  const actionResults = (node: string) =>
    result.report.events.filter(
      (e) => e.detailType === 'GPU Action Result' && (e.detail as { node: string }).node === node,
    );

  it('meets every expectation of the scenario', () => {
    expect(result.report.summary.expectations?.filter((x) => !x.ok)).toEqual([]);
    expect(result.report.summary.expectations?.length).toBe(3);
  });

  it('IGNORE-class XIDs on a busy node: nothing fenced, reset, evicted or cordoned', () => {
    const busy = remediations('gb200-busy-0');
    for (const xid of [38, 44, 93, 141, 152, 149, 147])
      expect(
        busy.filter((r) => r.xid === xid).map((r) => r.action),
        `XID ${xid}`,
      ).toEqual(['observe']);
    expect(busy.some((r) => r.action === 'quarantine-gpu' || r.action === 'drain-node')).toBe(false);
    // No fence, reset or probe was asked of the node's agent; its GPUs never left the allocatable.
    expect(actionResults('gb200-busy-0')).toEqual([]);
    expect(lines.some((l) => /node gb200-busy-0 allocatable/.test(l))).toBe(false);
    expect(lines.some((l) => /node gb200-\S+ cordoned/.test(l))).toBe(false);
    const node = result.report.final.nodes.find((n) => n.metadata.name === 'gb200-busy-0')!;
    expect(node.spec?.taints ?? []).toEqual([]);
  });

  it("an XID 45 right after another XID on its GPU is that XID's cleanup: ignored, nothing published for it", () => {
    expect(remediations('gb200-busy-0').filter((r) => r.xid === 45)).toEqual([]);
    const at = lines.findIndex((l) => /GPU XID Error\s+XID 45 /.test(l));
    expect(lines[at + 1]).toMatch(/remediate\s+no change: ignore stands/);
    expect(
      lines
        .slice(at + 1, at + 8)
        .join(' ')
        .replace(/\s+/g, ' '),
    ).toContain('it follows XID 44 on this GPU');
  });

  it('the NVLink5 decode is in the reasons: a BER event is IGNORE, the 147 every time', () => {
    expect(remediations('gb200-busy-0').find((r) => r.xid === 149)!.reason).toContain(
      'decoded on link 8: NETIR_BER_EVENT (intrinfo 0x00000013, errorStatus 0x00000000): IGNORE',
    );
    expect(remediations('gb200-link-0').find((r) => r.xid === 147)).toMatchObject({
      action: 'observe',
      reason: expect.stringContaining('TREX (intrinfo 0x0000000e, errorStatus 0x00000001): IGNORE'),
    });
  });

  it('a RESTART_APP XID restarts the workload that hit it, and no other', () => {
    expect(
      remediations('gb200-busy-0')
        .filter((r) => r.xid === 32)
        .map((r) => r.action),
    ).toEqual(['restart-workload']);
    expect(terminating('gb200-busy-0')).toEqual(['pretrain-1']);
  });

  it('a fatal 149 row fences the GPU, resets it, and returns it after a passed probe; only its pod moves', () => {
    const link = remediations('gb200-link-0');
    expect(link.find((r) => r.xid === 149)).toMatchObject({
      action: 'quarantine-gpu',
      reason: expect.stringContaining(
        'NETIR_LINK_EVT/NETIR_LINK_DOWN (intrinfo 0x01000011, errorStatus 0x00000000): RESET_GPU',
      ),
    });
    const fenced = lineAt(lines, /node gb200-link-0 allocatable nvidia\.com\/gpu 4 → 3/);
    const reset = lineAt(lines, /gb200-link-0\s+GPU Action Result\s+reset GPU reset/);
    const probed = lineAt(lines, /gb200-link-0\s+GPU Action Result\s+probe probe passed/);
    const back = lineAt(lines, /node gb200-link-0 allocatable nvidia\.com\/gpu 3 → 4/);
    expect(fenced).toBeLessThan(reset);
    expect(reset).toBeLessThan(probed);
    expect(probed).toBeLessThanOrEqual(back);
    expect(terminating('gb200-link-0')).toEqual(['finetune-0']);
  });
});
