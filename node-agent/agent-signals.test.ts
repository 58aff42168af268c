import { afterEach, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MOCK_NVML_SCENARIOS } from '../infra/local/mock-nvml/build.ts';
import { validateDetail } from '../events/validate.ts';
import { DEFAULT_THRESHOLDS } from './collectors/health.ts';
import type { OutgoingEvent } from './events.ts';
import { startAgent, type AgentFixture } from '../test/support/agent-fixture.ts';

// The signals a real fleet needs that the first agent lacked, each through the real path: the mock
// NVML (answering in the shapes a real H200 answered, infra/local/mock-nvml/scenarios/h200-1x.json)
// → the koffi binding → the health collector → a GPU Health Changed event.
let fx: AgentFixture | undefined;
afterEach(async () => {
  await fx?.close();
  fx = undefined;
});

type Scenario = { driverVersion: string; cudaVersion: number; gpus: Record<string, unknown>[] };
const H200 = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'h200-1x.json'), 'utf8')) as Scenario;

/** The recorded H200 with `gpu` merged over its one GPU (series replaced wholesale when given). */
function h200(gpu: Record<string, unknown>): Scenario {
  return { ...H200, gpus: [{ ...H200.gpus[0], ...gpu }] };
}
const series = (s: Record<string, number[]>) => ({
  series: { intervalMs: 1000, util: [0], tempC: [40], memTempC: [40], powerW: [80], ...s },
});

async function health(steps: number, each?: (step: number) => void): Promise<Record<string, unknown>[]> {
  const out: OutgoingEvent[] = [];
  for (let s = 0; s < steps; s++) {
    each?.(s);
    out.push(...(await fx!.agent.sampleOnce()).filter((e) => e.detailType === 'GPU Health Changed'));
    fx!.advance(1000);
  }
  for (const e of out) expect(validateDetail(e.detailType, e.detail)).toMatchObject({ ok: true });
  return out.map((e) => ({ ...(e.detail as Record<string, unknown>), priority: e.priority }));
}
const brief = (events: Record<string, unknown>[]) =>
  events.map((d) => [d.condition, d.state, d.severity, d.value, d.threshold]);

describe("temperature follows the GPU's own limits", () => {
  it('an H200 warns at its max operating temperature (87 °C) and is critical at its slowdown temperature (89 °C), not at 80/85', async () => {
    fx = await startAgent(h200(series({ tempC: [80, 86, 87, 89, 84, 82] })));
    const events = await health(6);
    // 86 °C would have been critical under the fixed 85 °C limit (and quarantined a healthy GPU).
    expect(brief(events)).toEqual([
      ['temperature', 'firing', 'warning', 87, 87],
      ['temperature', 'firing', 'critical', 89, 89],
      ['temperature', 'firing', 'warning', 82, 87],
    ]);
    expect(String(events[1]!.message)).toContain("reached this GPU's slowdown temperature (89 °C)");
  });

  it('a GPU that reports no limits keeps the configured 80/85 °C', async () => {
    fx = await startAgent(h200({ temperatureLimits: undefined, ...series({ tempC: [80, 81, 86] }) }));
    expect(brief(await health(3))).toEqual([
      ['temperature', 'firing', 'warning', 81, 80],
      ['temperature', 'firing', 'critical', 86, 85],
    ]);
  });

  it("configured limits (TEMP_WARN_C/TEMP_CRIT_C set) win over the GPU's own", async () => {
    fx = await startAgent(h200(series({ tempC: [70, 76] })), {
      overrides: {
        thresholds: { ...DEFAULT_THRESHOLDS, temperatureWarnC: 75, temperatureCritC: 90, temperatureFromGpu: false },
      },
    });
    expect(brief(await health(2))).toEqual([['temperature', 'firing', 'warning', 76, 75]]);
  });
});

describe('memory (HBM) temperature', () => {
  it("warns within 5 °C of the GPU's memory limit and is critical at it (field 82 against memMax 95 °C)", async () => {
    fx = await startAgent(h200(series({ memTempC: [44, 90, 95, 88] })));
    expect(brief(await health(4))).toEqual([
      ['memory-temperature', 'firing', 'warning', 90, 90],
      ['memory-temperature', 'firing', 'critical', 95, 95],
      ['memory-temperature', 'firing', 'warning', 88, 90],
    ]);
  });

  it('nothing when the driver has no memory temperature', async () => {
    const s = series({ tempC: [40] }).series as Record<string, unknown>;
    delete s.memTempC;
    fx = await startAgent(h200({ series: s }));
    expect(await health(2)).toEqual([]);
  });
});

describe('PCIe link', () => {
  it('a link that loses lanes is reported, and its return', async () => {
    fx = await startAgent(h200(series({ util: [100] })));
    const events = await health(4, (s) => {
      if (s === 1) fx!.mock.injectFault({ kind: 'pcieLink', gpu: 0, width: 8 });
      if (s === 3) fx!.mock.injectFault({ kind: 'pcieLink', gpu: 0, width: 16 });
    });
    expect(brief(events)).toEqual([
      ['pcie-link-degraded', 'firing', 'warning', 8, 16],
      ['pcie-link-degraded', 'resolved', 'info', 16, 16],
    ]);
    expect(String(events[0]!.message)).toContain('x8 of x16');
  });

  it('a slower generation counts only while the GPU is busy (idle links slow down on purpose)', async () => {
    fx = await startAgent(
      h200({ pcieLink: { gen: 1, maxGen: 5, width: 16, maxWidth: 16 }, ...series({ util: [0, 0, 90, 0, 0] }) }),
    );
    const events = await health(5, (s) => {
      if (s === 4) fx!.mock.injectFault({ kind: 'pcieLink', gpu: 0, gen: 5 });
    });
    // idle at Gen1: nothing; busy at Gen1: found; idle again: still found (idle says nothing); Gen5: back.
    expect(events.map((d) => [d.condition, d.state])).toEqual([
      ['pcie-link-degraded', 'firing'],
      ['pcie-link-degraded', 'resolved'],
    ]);
    expect(String(events[0]!.message)).toContain('Gen1 of Gen5 at 90% utilization');
    expect(String(events[1]!.message)).toBe('PCIe link back to Gen5 x16');
  });
});

describe('NVLink fabric (HGX)', () => {
  it('a probe that never completes is reported after the grace time; its completion resolves it', async () => {
    fx = await startAgent(h200({ fabric: { state: 2 }, ...series({}) }));
    expect(await health(1)).toEqual([]);
    fx.advance(DEFAULT_THRESHOLDS.fabricGraceMs);
    const late = await health(1);
    expect(brief(late)).toEqual([['fabric', 'firing', 'critical', undefined, undefined]]);
    expect(String(late[0]!.message)).toContain('probe in-progress');
    fx.mock.injectFault({ kind: 'fabric', gpu: 0, state: 3, status: 0 });
    expect(brief(await health(1))).toEqual([['fabric', 'resolved', 'info', undefined, undefined]]);
  });

  it("a failed registration is critical at once and names NVML's error", async () => {
    fx = await startAgent(h200({ fabric: { state: 3, status: 999 }, ...series({}) }));
    const events = await health(1);
    expect(brief(events)).toEqual([['fabric', 'firing', 'critical', undefined, undefined]]);
    expect(String(events[0]!.message)).toContain('NVML_ERROR_UNKNOWN');
  });

  it('a GPU with no fabric (what the real H200 answered: state not-supported) reports nothing', async () => {
    fx = await startAgent(h200(series({})));
    expect(await health(3)).toEqual([]);
  });
});

describe('NVLink error rates', () => {
  const withLinks = (extra: Record<string, unknown> = {}) =>
    h200({ nvlinkErrors: { crcFlit: 10, crcData: 0, replay: 3, recovery: 0 }, ...series({}), ...extra });

  it('a link recovery (down and back) is reported at once, and cleared after a quiet minute', async () => {
    fx = await startAgent(withLinks());
    const events = await health(3, (s) => {
      if (s === 1) fx!.mock.injectFault({ kind: 'nvlinkErrors', gpu: 0, recovery: 1 });
    });
    expect(brief(events)).toEqual([['nvlink-errors', 'firing', 'warning', 1, undefined]]);
    expect(String(events[0]!.message)).toContain('1 link recovery');
    fx.advance(61_000);
    expect(brief(await health(1))).toEqual([['nvlink-errors', 'resolved', 'info', 0, undefined]]);
  });

  it('CRC errors count only above their per-minute limit, across samples of the same minute', async () => {
    fx = await startAgent(withLinks());
    const events = await health(4, (s) => {
      if (s === 1) fx!.mock.injectFault({ kind: 'nvlinkErrors', gpu: 0, crcFlit: 60 });
      if (s === 3) fx!.mock.injectFault({ kind: 'nvlinkErrors', gpu: 0, crcData: 50 });
    });
    // 60 in the minute: under 100; 110 within the same minute: over.
    expect(brief(events)).toEqual([['nvlink-errors', 'firing', 'warning', 110, undefined]]);
    expect(String(events[0]!.message)).toContain('110 CRC errors (limit 100)');
  });

  it('counters a GPU reset cleared start a new count: what came after the reset is what counts', async () => {
    fx = await startAgent(withLinks({ nvlinkErrors: { crcFlit: 5000, crcData: 0, replay: 0, recovery: 0 } }));
    const events = await health(3, (s) => {
      if (s === 1) expect(fx!.mock.resetGpu(0)).toBe(0); // counters back to 0
      if (s === 2) fx!.mock.injectFault({ kind: 'nvlinkErrors', gpu: 0, crcFlit: 150 });
    });
    // 150 new errors since the reset (not 150 - 5000, not 5000 + 150): over the limit.
    expect(brief(events)).toEqual([['nvlink-errors', 'firing', 'warning', 150, undefined]]);
  });
});

describe("SRAM threshold (XID 48's RMA test)", () => {
  it('fires once when NVML says the SRAM error threshold is exceeded', async () => {
    fx = await startAgent(h200(series({})));
    const events = await health(3, (s) => {
      if (s === 1) fx!.mock.injectFault({ kind: 'sramThresholdExceeded', gpu: 0 });
    });
    expect(brief(events)).toEqual([['sram-threshold-exceeded', 'firing', 'critical', undefined, undefined]]);
  });
});

describe('power at the limit is load, not a fault', () => {
  it('a busy H200 at 99% of 700 W (as read on the real one) is information, sent with normal priority', async () => {
    fx = await startAgent(h200(series({ util: [100], powerW: [696] })));
    const events = await health(2);
    expect(brief(events)).toEqual([['power', 'firing', 'info', 99.4, 90]]);
    expect(events[0]!.priority).toBe('normal');
  });
});
