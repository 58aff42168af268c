import { describe, expect, it } from 'vitest';
import { parseScenario } from '../infra/local/scenario.ts';
import { FENCE_VERIFY, fenceVerifyRows, scenarioText } from './fence-verify.ts';

describe('bench: XID → fence verified by identity', () => {
  it('writes a valid wall-clock scenario: one XID per GPU after the warm-up, each node its own pool', () => {
    const { text, faults } = scenarioText(FENCE_VERIFY);
    const s = parseScenario(text, 'fence-verify.yaml');
    expect(faults).toHaveLength(FENCE_VERIFY.nodes * FENCE_VERIFY.gpusPerNode);
    expect(Math.min(...faults.map((f) => f.atMs))).toBe(FENCE_VERIFY.warmUpSeconds * 1000);
    expect(new Set(faults.map((f) => `${f.node}/${f.gpu}`)).size).toBe(faults.length);
    expect(s.endWhenMet).toBe(true);
    expect(text.match(/gpu-reflex\.io\/pool: fv\d+ /g)).toHaveLength(FENCE_VERIFY.nodes);
  });

  it('holds p99 under 2 s and counts an XID never verified as a miss', () => {
    const rows = fenceVerifyRows({ latencies: [400, 900, 1900], xids: 4 });
    expect(rows.find((r) => r.metric.endsWith('p99'))).toMatchObject({ value: 1.9, ok: true });
    expect(rows.find((r) => r.metric.endsWith('XIDs not verified'))).toMatchObject({ value: 1, ok: false });
    expect(fenceVerifyRows({ latencies: [2500], xids: 1 }).find((r) => r.metric.endsWith('p99'))?.ok).toBe(false);
  });
});
