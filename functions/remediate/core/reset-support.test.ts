import { describe, expect, it } from 'vitest';
import { planRemediation } from './plan.ts';
import { DEFAULT_POLICY } from './policy.ts';
import { planSweep } from './sweep.ts';
import { familyOf, RESET_SUPPORT, resetSupportOf, skipsReset, topologyOf } from './reset-support.ts';
import { apply, at, factsFor, gpu, node, pool, STANDARD_PODS, stateOf, xid } from '../testing.ts';
import type { NodeFacts } from './types.ts';

const HGX_A100 = { 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB', 'gpu-reflex.io/gpu-topology': 'nvswitch' };

describe('the reset support matrix', () => {
  it('names a source for every row, and no SKU family and topology twice', () => {
    const keys = RESET_SUPPORT.map((r) => `${r.family}/${r.topology}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const r of RESET_SUPPORT) expect(r.source.length).toBeGreaterThan(10);
  });

  it.each([
    [HGX_A100, 'unsupported'],
    [{ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-40GB', 'gpu-reflex.io/gpu-topology': 'nvlink' }, 'supported'],
    [{ 'nvidia.com/gpu.product': 'Tesla-V100-SXM2-32GB', 'gpu-reflex.io/gpu-topology': 'nvlink' }, 'all-gpus'],
    [{ 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3', 'gpu-reflex.io/gpu-topology': 'nvswitch' }, 'supported'],
    [{ 'nvidia.com/gpu.product': 'Tesla-T4' }, 'supported'],
    [{ 'nvidia.com/gpu.product': 'NVIDIA-A100-PCIE-40GB' }, 'supported'],
    // An SXM board without its topology said has no row: the reset is tried, NVML decides.
    [{ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }, undefined],
    [{ 'nvidia.com/gpu.product': 'Some-Future-GPU', 'gpu-reflex.io/gpu-topology': 'nvswitch' }, undefined],
    [{}, undefined],
  ])('%j → %s', (labels, verdict) => {
    expect(resetSupportOf(labels).verdict).toBe(verdict);
  });

  it('reads families and PCIe-only topologies from GFD product names', () => {
    expect(familyOf('NVIDIA-H200')).toBe('hopper-and-newer');
    expect(familyOf('NVIDIA-A10')).toBe('ampere');
    expect(topologyOf({ 'nvidia.com/gpu.product': 'NVIDIA-L40S' })).toBe('pcie');
    expect(topologyOf({ 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' })).toBeUndefined();
    expect(topologyOf({ 'gpu-reflex.io/gpu-topology': 'bogus' })).toBeUndefined();
  });

  it('skips the reset only for unsupported and all-gpus rows', () => {
    expect(skipsReset(resetSupportOf(HGX_A100))).toBe(true);
    expect(skipsReset(resetSupportOf({ 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' }))).toBe(false);
  });
});

describe('a GPU that needs a reset on a system where NVIDIA does not support one alone', () => {
  const hgx = (): NodeFacts => ({ ...node(), labels: { ...node().labels, ...HGX_A100 } });
  const pods = STANDARD_PODS;

  it('says so in the first Remediation, and the sweep goes straight to a node reboot without asking for a reset', async () => {
    const first = planRemediation(factsFor(xid(95, { minute: 0, gpu: 0 }), hgx(), { pods }), DEFAULT_POLICY);
    expect(first.reason).toContain('NVIDIA does not support resetting one GPU there');
    expect(first.reason).toContain('NVIDIA/NVSentinel ADR-019');
    const w = await apply(hgx(), pods, first);
    const sweep = planSweep(
      { now: new Date(at(1)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
      DEFAULT_POLICY,
    ).plans[0];
    expect(sweep?.reason).toContain(`${gpu(0).uuid} needs a reset, but NVIDIA does not support resetting one GPU`);
    expect(sweep?.reason).toContain('HGX A100 8-GPU');
    expect(sweep?.nextState.incidents[0]).toMatchObject({ action: 'reboot-node', phase: 'draining' });
    expect(sweep?.nextState.incidents[0]?.repair).toBeUndefined();
    expect(JSON.stringify(sweep?.nextState)).not.toContain('"step":"reset"');
  });

  it('asks for the reset where the matrix has no row (an SXM board whose topology nobody said)', async () => {
    const sxm: NodeFacts = {
      ...node(),
      labels: { ...node().labels, 'nvidia.com/gpu.product': 'NVIDIA-A100-SXM4-80GB' },
    };
    const first = planRemediation(factsFor(xid(95, { minute: 0, gpu: 0 }), sxm, { pods }), DEFAULT_POLICY);
    expect(first.reason).toContain('the node agent resets the GPU');
    const w = await apply(sxm, pods, first);
    const sweep = planSweep(
      { now: new Date(at(1)), nodes: [{ node: w.node, state: stateOf(w.node), pool: pool(), pods: w.pods }] },
      DEFAULT_POLICY,
    ).plans[0];
    expect(sweep?.nextState.incidents[0]?.action).toBe('quarantine-gpu');
  });
});

describe('gpu-reflex remediate reset-support', () => {
  const run = async (args: string[]) => {
    const { resetSupportCommand } = await import('../../../bin/reset-support.ts');
    const out: string[] = [];
    const code = await resetSupportCommand.run(args, { out: (l) => out.push(l), err: (l) => out.push(l) });
    return { code, text: out.join('\n') };
  };
  it('prints every row with its source', async () => {
    const { code, text } = await run([]);
    expect(code).toBe(0);
    expect(text.split('\n')).toHaveLength(RESET_SUPPORT.length + 1);
    expect(text).toMatch(/ampere\s+nvswitch\s+unsupported\s+HGX A100 8-GPU.*ADR-019/);
  });
  it("answers for one node's labels", async () => {
    const { text } = await run(['--product', 'NVIDIA-A100-SXM4-80GB', '--topology', 'nvswitch']);
    expect(text).toContain('unsupported → node reboot, no reset tried');
    expect((await run(['--product', 'NVIDIA-A100-SXM4-80GB'])).text).toContain('no row (the reset is tried)');
  });
  it.each(['--bogus', 'extra', '--product'])('refuses %j as a UsageError, not a raw TypeError', async (arg) => {
    const { UsageError } = await import('../../../events/cli-kit/command.ts');
    await expect(run([arg])).rejects.toThrow(UsageError);
  });
});
