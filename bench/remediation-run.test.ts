import { describe, expect, it } from 'vitest';
import { runRemediationBench, stormLimit, type RunSpec } from './remediation-run.ts';

/**
 * The bench's own plumbing on a tiny fleet: the simulated API server in its own process, cordon
 * times and request counts coming back over IPC, every failing node cordoned and drained. The
 * numbers themselves are the bench's business (`npm run bench remediation`), not asserted here.
 */
describe('remediation bench run (API server in its own process)', () => {
  it('cordons and drains every failing node and reports what the cluster side measured', async () => {
    const spec: RunSpec = { pools: 2, nodesPerPool: 20, failingPerPool: 2, singleRuns: 2, concurrency: 4 };
    expect(stormLimit(spec)).toBeGreaterThanOrEqual(spec.failingPerPool); // else the storm waits for approvals
    const r = await runRemediationBench(spec, () => {});
    expect(r.fleetNodes).toBe(2 * 20 + spec.singleRuns + 1);
    expect(r.single).toHaveLength(2);
    expect(r.single.every((ms) => ms > 0)).toBe(true);
    const s = r.storm;
    expect(s.failing).toBe(4);
    expect(s.cordoned).toBe(4);
    expect(s.latencies).toHaveLength(4);
    expect(s.podsEvicted).toBe(4 * 4);
    expect(s.requests['create pods/eviction']).toBe(16);
    expect(s.requests['patch nodes']).toBeGreaterThanOrEqual(4);
    expect(s.mostInPool).toBe(2);
    expect(s.mostInPool).toBeLessThanOrEqual(stormLimit(spec));
    expect(s.approvals).toBe(0);
    expect(s.simProcessCpuMs).toBeGreaterThan(0);
    expect(s.simCpu.ms['simulated cluster']).toBeGreaterThan(0);
    expect(s.cpu.ms['simulated cluster']).toBe(0);
  }, 120_000);
});
