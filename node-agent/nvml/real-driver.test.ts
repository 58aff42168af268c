import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import type { Nvml } from './nvml.ts';
import { inventory } from './inventory.ts';
import { gpuInstanceProfiles } from './mig.ts';
import { sampleDevice, type GpuSample } from './sample.ts';

/**
 * The mock NVML is only as good as its likeness to a real driver. test/fixtures/real-driver/ holds
 * what the agent's own binding read on a real GPU (scripts/real-driver/nvml-probe.ts: `agent` is
 * what `gpu-reflex agent` sees, `raw` each NVML call with its return code), beside NVIDIA's Python
 * binding and nvidia-smi on the same machine. The mock's scenario for that GPU must answer the
 * binding the same way; where it cannot, the difference is listed in docs/node-agent.md.
 */
const FIXTURE = join(import.meta.dirname, '..', '..', 'test', 'fixtures', 'real-driver', 'h200-580.159.04');
const read = <T>(file: string): T => JSON.parse(readFileSync(join(FIXTURE, file), 'utf8')) as T;

interface Probe {
  agent: {
    inventory: { driverVersion: string; nvmlVersion: string; cudaVersion: string; gpus: Record<string, unknown>[] };
    samples: GpuSample[];
    migProfiles: unknown[][];
  };
  raw: {
    temperatureThresholds: Record<string, { rc?: number; value: number }>;
    pcie: Record<string, { rc?: number; value: number }>;
    fieldValues: { values: Record<string, { rc: number; raw: string }> };
    fabricV3: { rc: number; value: { state: number } };
    sramEccErrorStatus: { rc: number; value: { bThresholdExceeded: number } };
  }[];
}
const real = read<Probe>('nvml-probe.json');
const python = read<{ gpus: { supportedEvents: { ok: number }; clockReasons: { ok: number } }[] }>('pynvml-probe.json');

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

describe("the mock H200 answers the agent's binding as the real H200 did (driver 580.159.04)", () => {
  it("the same inventory: identity, memory, MIG mode, and every GPU-instance profile with NVML's names, sizes and placements", async () => {
    ({ nvml } = await openMockNvml('h200-1x.json'));
    const inv = inventory(nvml);
    const { migProfiles: realProfiles, ...realGpu } = real.agent.inventory.gpus[0]!;
    const { migProfiles, ...gpu } = inv.gpus[0] as Record<string, unknown>;
    expect(gpu).toEqual(realGpu);
    expect(migProfiles).toEqual(realProfiles);
    expect(gpuInstanceProfiles(nvml, nvml.device(0))).toEqual(real.agent.migProfiles[0]);
    expect(inv.driverVersion).toBe(real.agent.inventory.driverVersion);
    expect(inv.cudaVersion).toBe(real.agent.inventory.cudaVersion);
  });

  it('profile names come from NVML where the driver names them (…ProfileInfoV, "MIG 1g.18gb"), from NVIDIA\'s rule where not', async () => {
    interface Raw {
      profileInfoV2: { profile: number; rc?: number; value?: { id: number; name: string } }[];
    }
    const realNames = Object.fromEntries(
      (real.raw[0] as unknown as Raw).profileInfoV2.filter((p) => p.rc === 0).map((p) => [p.value!.id, p.value!.name]),
    );
    expect(realNames[19]).toBe('MIG 1g.18gb');
    // A name NVIDIA's rule would never give, for profile 19 only: the driver's word wins there.
    ({ nvml } = await openMockNvml(oneGpu({ migProfileNames: { 19: '1g.9gb' } })));
    const names = Object.fromEntries(gpuInstanceProfiles(nvml, nvml.device(0)).map((p) => [p.id, p.name]));
    expect(names).toMatchObject({ 19: '1g.9gb', 14: '2g.20gb', 9: '3g.40gb', 20: '1g.10gb+me' });
  });

  it('the same unsupported fields (no page retirement on Hopper, no NVLink in a one-GPU VM) and no field failing', async () => {
    ({ nvml } = await openMockNvml('h200-1x.json'));
    const s = sampleDevice(nvml, 0) as GpuSample;
    expect(s.state).toBe('ok');
    // The recording predates the newer fields; those it has, the mock must answer alike. NVLink
    // error totals came later: the real driver answered NOT_SUPPORTED for each of their fields.
    expect(s.unsupported.filter((f) => f !== 'nvlinkErrors')).toEqual(real.agent.samples[0]!.unsupported);
    for (const f of ['nvlinkCrcFlitTotal', 'nvlinkCrcDataTotal', 'nvlinkReplayTotal', 'nvlinkRecoveryTotal'])
      expect(real.raw[0]!.fieldValues.values[f]!.rc, f).toBe(3);
    expect(s.unsupported).toContain('nvlinkErrors');
    expect(s.unavailable).toBeUndefined();
    expect(nvml.device(0).supportedEventTypes()).toBe(BigInt(python.gpus[0]!.supportedEvents.ok));
  });

  it('the second recording, through the new binding on the real driver, reads what the mock H200 answers', async () => {
    const second = read<Probe>('nvml-probe-2.json');
    ({ nvml } = await openMockNvml('h200-1x.json'));
    const s = sampleDevice(nvml, 0) as GpuSample;
    const r = second.agent.samples[0]!;
    expect(r.unavailable).toBeUndefined();
    expect({
      limits: s.temperatureLimits,
      pcie: s.pcieLink,
      fabric: s.fabric,
      sram: s.sramEcc,
      unsupported: s.unsupported.filter((f) => f !== 'nvlinkErrors'),
    }).toEqual({
      limits: r.temperatureLimits,
      pcie: r.pcieLink,
      fabric: r.fabric,
      sram: r.sramEcc,
      unsupported: r.unsupported,
    });
    expect(r.memoryTemperatureC).toEqual(expect.any(Number));
    expect(gpuInstanceProfiles(nvml, nvml.device(0))).toEqual(second.agent.migProfiles[0]);
  });

  it('video encoder and decoder utilization: the real H200 answers both (0 when idle), the mock alike', async () => {
    const fourth = read<Probe & { raw: { codec: Record<string, { rc: number }> }[] }>('nvml-probe-4.json');
    expect(fourth.raw[0]!.codec.nvmlDeviceGetEncoderUtilization!.rc).toBe(0);
    expect(fourth.raw[0]!.codec.nvmlDeviceGetDecoderUtilization!.rc).toBe(0);
    ({ nvml } = await openMockNvml('h200-1x.json'));
    expect((sampleDevice(nvml, 0) as GpuSample).codecUtilization).toEqual(fourth.agent.samples[0]!.codecUtilization);
  });

  it('the same raw answers for the limits, the PCIe link, HBM temperature, fabric and SRAM', async () => {
    ({ nvml } = await openMockNvml('h200-1x.json'));
    const r = real.raw[0]!;
    const s = sampleDevice(nvml, 0) as GpuSample;
    const t = r.temperatureThresholds;
    expect(s.temperatureLimits).toEqual({
      shutdownC: t.shutdown!.value,
      slowdownC: t.slowdown!.value,
      memMaxC: t.memMax!.value,
      gpuMaxC: t.gpuMax!.value,
    });
    const p = r.pcie;
    expect(s.pcieLink).toEqual({
      gen: p.nvmlDeviceGetCurrPcieLinkGeneration!.value,
      maxGen: p.nvmlDeviceGetMaxPcieLinkGeneration!.value,
      width: p.nvmlDeviceGetCurrPcieLinkWidth!.value,
      maxWidth: p.nvmlDeviceGetMaxPcieLinkWidth!.value,
    });
    expect(r.fieldValues.values.memoryTemp!.rc).toBe(0);
    expect(s.memoryTemperatureC).toEqual(expect.any(Number));
    expect(r.fieldValues.values.recoveryAction).toMatchObject({ rc: 0, raw: String(s.recoveryAction!.code) });
    expect(r.fabricV3).toMatchObject({ rc: 0, value: { state: 0 } });
    expect(s.fabric).toEqual({ state: 'not-supported' });
    expect(r.sramEccErrorStatus).toMatchObject({ rc: 0, value: { bThresholdExceeded: 0 } });
    expect(s.sramEcc).toEqual({ thresholdExceeded: false, aggregateUncorrected: 0, volatileUncorrected: 0 });
  });
});
