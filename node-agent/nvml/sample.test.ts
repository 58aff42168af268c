import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import type { Nvml } from './nvml.ts';
import { sampleDevice, type GpuSample, type GpuSampleResult } from './sample.ts';

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

async function session(scenario: string | object) {
  const s = await openMockNvml(scenario);
  nvml = s.nvml;
  return s;
}

function ok(result: GpuSampleResult): GpuSample {
  if (result.state !== 'ok') throw new Error(`expected an ok sample, got ${JSON.stringify(result)}`);
  return result;
}

const series = {
  intervalMs: 1000,
  util: [10, 20, 30],
  memUtil: [1, 2, 3],
  tempC: [40, 41, 42],
  powerW: [100, 150, 200],
  clockEventReasons: [0, 0x44],
};

describe('sampleDevice', () => {
  it('reads every field of a healthy A100 with nothing unsupported', async () => {
    const { nvml } = await session(
      oneGpu({
        series: { ...series, memTempC: [50], encUtil: [3], decUtil: [7] },
        processes: [{ pid: 4242, usedMiB: 4000 }],
        ecc: { aggregateCorrected: 3 },
        temperatureLimits: { shutdownC: 92, slowdownC: 89, memMaxC: 95, gpuMaxC: 85 },
        pcieLink: { gen: 4, maxGen: 4, width: 16, maxWidth: 16 },
        fabric: { state: 3, status: 0, healthMask: 2 },
        sram: { thresholdExceeded: false },
        nvlinkErrors: { crcFlit: 1, crcData: 2, replay: 3, recovery: 4 },
      }),
    );
    const s = ok(sampleDevice(nvml, 0));
    expect(s).toEqual({
      state: 'ok',
      index: 0,
      uuid: 'GPU-00000000-1111-2222-3333-444444444444',
      pciBusId: '00000000:3B:00.0',
      utilization: { gpu: 10, memory: 1 },
      codecUtilization: { encoder: 3, decoder: 7 },
      memory: { totalMiB: 81920, usedMiB: 4000, freeMiB: 77920 },
      temperatureC: 40,
      memoryTemperatureC: 50,
      temperatureLimits: { shutdownC: 92, slowdownC: 89, memMaxC: 95, gpuMaxC: 85 },
      powerW: 100,
      powerLimitW: 400,
      ecc: { volatileCorrected: 0, volatileUncorrected: 0, aggregateCorrected: 3, aggregateUncorrected: 0 },
      retiredPagesPending: false,
      remappedRows: { correctable: 0, uncorrectable: 0, pending: false, failure: false },
      clockEventReasons: { mask: 0, reasons: [] },
      nvlinks: Array.from({ length: 12 }, (_, link) => ({ link, active: true })),
      nvlinkErrors: { crcFlit: 1, crcData: 2, replay: 3, recovery: 4 },
      processes: [{ pid: 4242, usedMiB: 4000 }],
      mpsProcesses: [],
      migMode: { current: false, pending: false },
      recoveryAction: { code: 0, action: 'none' },
      pcieLink: { gen: 4, maxGen: 4, width: 16, maxWidth: 16 },
      fabric: { state: 'completed', status: 0, statusName: 'NVML_SUCCESS', cliqueId: 0, degradedBandwidth: false },
      sramEcc: { thresholdExceeded: false, aggregateUncorrected: 0, volatileUncorrected: 0 },
      unsupported: [],
    });
  });

  it("reads a GPU's temperature limits once (they are its SKU's), not every sample", async () => {
    const { nvml } = await session('h200-1x.json');
    const lib = nvml.lib as { nvmlDeviceGetTemperatureThreshold?: (...a: never[]) => number };
    const real = lib.nvmlDeviceGetTemperatureThreshold!;
    let calls = 0;
    lib.nvmlDeviceGetTemperatureThreshold = (...a) => (calls++, real(...a));
    const first = ok(sampleDevice(nvml, 0)).temperatureLimits;
    expect(ok(sampleDevice(nvml, 0)).temperatureLimits).toEqual(first);
    expect(first).toEqual({ shutdownC: 95, slowdownC: 89, memMaxC: 95, gpuMaxC: 87 });
    expect(calls).toBe(4);
  });

  it('indexes series by mock time and holds the last value past the end', async () => {
    const { nvml, mock } = await session(oneGpu({ series }));
    const at = () => {
      const s = ok(sampleDevice(nvml, 0));
      return [s.utilization?.gpu, s.temperatureC, s.powerW, s.clockEventReasons?.reasons];
    };
    expect(at()).toEqual([10, 40, 100, []]);
    mock.advanceMs(1000);
    expect(at()).toEqual([20, 41, 150, ['swPowerCap', 'hwThermalSlowdown']]);
    mock.advanceMs(60_000);
    expect(at()).toEqual([30, 42, 200, ['swPowerCap', 'hwThermalSlowdown']]);
  });

  it('omits what the GPU does not support and names it', async () => {
    const { nvml } = await session('t4-node.json');
    const s = ok(sampleDevice(nvml, 0));
    expect(s.unsupported.sort()).toEqual([
      'codecUtilization',
      'memoryTemperatureC',
      'migMode',
      'nvlinkErrors',
      'nvlinks',
      'recoveryAction',
      'remappedRows',
      'sramEcc',
      'temperatureLimits',
    ]);
    for (const field of s.unsupported) expect(s).not.toHaveProperty(field);
    expect(s.utilization).toEqual({ gpu: 35, memory: 20 });
  });

  it('under MPS lists the clients apart: the compute listing holds only the MPS server (issue #32)', async () => {
    const { nvml } = await session(
      oneGpu({
        processes: [
          { pid: 900, usedMiB: 30 },
          { pid: 4100, usedMiB: 4000, mps: 1 },
          { pid: 4101, usedMiB: 4000, mps: 1 },
        ],
      }),
    );
    const s = ok(sampleDevice(nvml, 0));
    expect(s.processes?.map((p) => p.pid)).toEqual([900]);
    expect(s.mpsProcesses?.map((p) => p.pid)).toEqual([4100, 4101]);
  });

  it('on a MIG GPU omits utilization and remapped rows and lists MIG devices and processes', async () => {
    const { nvml } = await session('h100-mig.json');
    const s = ok(sampleDevice(nvml, 0));
    expect(s.unsupported.sort()).toEqual([
      'codecUtilization',
      'memoryTemperatureC',
      'nvlinkErrors',
      'remappedRows',
      'sramEcc',
      'temperatureLimits',
      'utilization',
    ]);
    expect(s.migDevices).toHaveLength(7);
    expect(s.processes).toEqual([
      { pid: 2201, usedMiB: 8000, gpuInstanceId: 7, computeInstanceId: 0 },
      { pid: 2202, usedMiB: 9000, gpuInstanceId: 9, computeInstanceId: 0 },
    ]);
  });

  it.each([
    [
      { kind: 'ecc', corrected: 5, uncorrected: 2 },
      (s: GpuSample) => [s.ecc?.volatileCorrected, s.ecc?.volatileUncorrected, s.ecc?.aggregateUncorrected],
      [5, 2, 2],
    ],
    [
      { kind: 'rowRemapPending' },
      (s: GpuSample) => [s.remappedRows?.pending, s.remappedRows?.uncorrectable],
      [true, 1],
    ],
    [{ kind: 'rowRemapFailure' }, (s: GpuSample) => [s.remappedRows?.failure], [true]],
    [{ kind: 'retiredPagesPending' }, (s: GpuSample) => [s.retiredPagesPending], [true]],
    [{ kind: 'recoveryAction', action: 2 }, (s: GpuSample) => [s.recoveryAction?.action], ['node-reboot']],
    [{ kind: 'nvlinkDown', link: 3 }, (s: GpuSample) => s.nvlinks?.filter((l) => !l.active).map((l) => l.link), [3]],
  ])('shows a %o fault in the next sample once its time has come', async (fault, read, expected) => {
    const { nvml, mock } = await session(oneGpu({}, { faults: [{ ...fault, gpu: 0, atMs: 500 }] }));
    const before = read(ok(sampleDevice(nvml, 0)));
    expect(before).not.toEqual(expected);
    mock.advanceMs(500);
    expect(read(ok(sampleDevice(nvml, 0)))).toEqual(expected);
  });

  it('turns a lost GPU into a lost sample, not a crash, and keeps sampling the others', async () => {
    const { nvml, mock } = await session('dgx-a100-8x.json');
    const before = ok(sampleDevice(nvml, 5));
    mock.injectFault({ kind: 'gpuLost', gpu: 5 });
    expect(sampleDevice(nvml, 5)).toEqual({
      state: 'lost',
      index: 5,
      uuid: before.uuid,
      pciBusId: '00000000:90:00.0',
      error: 'NVML_ERROR_GPU_IS_LOST',
    });
    expect(sampleDevice(nvml, 4).state).toBe('ok');
  });

  it('reports a GPU lost before it was ever sampled without its identity', async () => {
    const { nvml, mock } = await session(oneGpu());
    mock.injectFault({ kind: 'gpuLost', gpu: 0 });
    expect(sampleDevice(nvml, 0)).toEqual({ state: 'lost', index: 0, error: 'NVML_ERROR_GPU_IS_LOST' });
  });
});
