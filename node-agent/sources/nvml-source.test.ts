import { describe, expect, it } from 'vitest';
import type { GpuSample } from '../nvml/sample.ts';
import { toReading } from './nvml-source.ts';

const id = {
  state: 'ok' as const,
  index: 2,
  uuid: 'GPU-00000000-1111-2222-3333-444444444444',
  pciBusId: '00000000:3B:00.0',
};
const NAME = 'NVIDIA A100-SXM4-80GB';
const bare: GpuSample = { ...id, unsupported: [] };

describe('toReading (GpuSample → GpuReading)', () => {
  it('keeps only the identity when NVML supported nothing', () => {
    const all = [
      'utilization',
      'memory',
      'temperatureC',
      'powerW',
      'powerLimitW',
      'ecc',
      'retiredPagesPending',
      'remappedRows',
      'clockEventReasons',
      'nvlinks',
      'processes',
      'migMode',
      'recoveryAction',
    ];
    expect(toReading({ ...bare, unsupported: all }, NAME)).toStrictEqual({
      index: 2,
      uuid: id.uuid,
      pciBusId: id.pciBusId,
      name: NAME,
    });
  });

  it.each<[string, Partial<GpuSample>, Record<string, unknown>]>([
    ['utilization', { utilization: { gpu: 97, memory: 61 } }, { utilPercent: 97, memoryUtilPercent: 61 }],
    [
      'memory',
      { memory: { totalMiB: 81920, usedMiB: 70000, freeMiB: 11920 } },
      { memoryUsedMiB: 70000, memoryTotalMiB: 81920 },
    ],
    [
      'temperature and power',
      { temperatureC: 64, powerW: 312.5, powerLimitW: 400 },
      { temperatureC: 64, powerW: 312.5, powerLimitW: 400 },
    ],
    [
      'volatile uncorrected ECC only',
      { ecc: { volatileCorrected: 9, volatileUncorrected: 2, aggregateCorrected: 90, aggregateUncorrected: 20 } },
      { eccUncorrectedVolatile: 2 },
    ],
    [
      'zero is not absent',
      {
        ecc: { volatileCorrected: 0, volatileUncorrected: 0, aggregateCorrected: 0, aggregateUncorrected: 0 },
        retiredPagesPending: false,
      },
      { eccUncorrectedVolatile: 0, retiredPagesPending: false },
    ],
    [
      'remapped rows',
      { remappedRows: { correctable: 1, uncorrectable: 2, pending: true, failure: false } },
      { remappedRows: { correctable: 1, uncorrectable: 2, pending: true, failure: false } },
    ],
    [
      'clock reasons by name',
      { clockEventReasons: { mask: 0x8, reasons: ['hwSlowdown'] } },
      { throttleReasons: ['hwSlowdown'] },
    ],
    [
      'NVLinks by link index',
      {
        nvlinks: [
          { link: 0, active: true },
          { link: 1, active: false },
          { link: 2, active: true },
        ],
      },
      { nvlinkActive: [true, false, true] },
    ],
    [
      'a named recovery action',
      { recoveryAction: { code: 4, action: 'drain-and-reset' } },
      { recoveryAction: 'drain-and-reset' },
    ],
    ['an unnamed recovery action code stays absent', { recoveryAction: { code: 42 } }, {}],
    ['MIG mode off', { migMode: { current: false, pending: true } }, { migMode: 'disabled' }],
    [
      'processes without unknown fields',
      { processes: [{ pid: 7, usedMiB: 100, gpuInstanceId: 3, computeInstanceId: 0 }, { pid: 8 }] },
      { processes: [{ pid: 7, usedMiB: 100, gpuInstanceId: 3 }, { pid: 8 }] },
    ],
  ])('maps %s', (_name, fields, expected) => {
    expect(toReading({ ...bare, ...fields }, NAME)).toStrictEqual({
      index: 2,
      uuid: id.uuid,
      pciBusId: id.pciBusId,
      name: NAME,
      ...expected,
    });
  });

  it('maps MIG devices with their framebuffer in use, and leaves out those it cannot describe (no placement without privileges)', () => {
    const r = toReading(
      {
        ...bare,
        migMode: { current: true, pending: true },
        migDevices: [
          {
            index: 0,
            uuid: 'MIG-11111111-2222-3333-4444-555555555555',
            profile: '3g.40gb',
            gpuInstanceId: 1,
            computeInstanceId: 0,
            giProfileId: 9,
            placement: { start: 4, size: 4 },
            memoryMiB: 40192,
            memoryUsedMiB: 10048,
          },
          {
            index: 1,
            uuid: 'MIG-11111111-2222-3333-4444-666666666666',
            profile: '1g.10gb',
            gpuInstanceId: 9,
            computeInstanceId: 0,
          },
        ],
      },
      NAME,
    );
    expect(r.migMode).toBe('enabled');
    expect(r.migDevices).toStrictEqual([
      {
        uuid: 'MIG-11111111-2222-3333-4444-555555555555',
        gpuInstanceId: 1,
        computeInstanceId: 0,
        profile: '3g.40gb',
        placement: { start: 4, size: 4 },
        memoryTotalMiB: 40192,
        memoryUsedMiB: 10048,
      },
    ]);
  });
});
