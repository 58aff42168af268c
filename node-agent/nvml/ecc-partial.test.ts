import { describe, expect, it } from 'vitest';
import { NVML } from './errors.ts';
import { NvmlDevice } from './device.ts';
import type { Nvml } from './nvml.ts';
import { toReading } from '../sources/nvml-source.ts';
import { HealthEvaluator } from '../collectors/health.ts';

/**
 * A driver that answers some ECC counters and NOT_SUPPORTED for others (errorType 1 = uncorrected,
 * counterType 1 = aggregate). The mock's `unsupported: ["ecc"]` turns every counter off at once, so
 * this one GPU is a hand-made library: the counts it answers, `undefined` for NOT_SUPPORTED.
 */
function deviceWith(counts: Record<string, number | undefined>): NvmlDevice {
  const lib = {
    nvmlDeviceGetTotalEccErrors: (_h: bigint, errorType: number, counterType: number, out: [number]) => {
      const v = counts[`${errorType}/${counterType}`];
      if (v === undefined) return NVML.NOT_SUPPORTED;
      out[0] = v;
      return NVML.SUCCESS;
    },
  };
  const nvml = {
    lib,
    check: (call: string, rc: number) => {
      if (rc !== NVML.SUCCESS) throw new Error(`${call}: ${rc}`);
    },
  } as unknown as Nvml;
  return new NvmlDevice(nvml, 0, 1n);
}

describe('ECC counters a driver answers NOT_SUPPORTED for one by one', () => {
  it('leaves an uncorrected counter it cannot read out, never 0', () => {
    const ecc = deviceWith({ '0/0': 4, '1/0': undefined, '0/1': 9, '1/1': undefined }).ecc();
    expect(ecc).toEqual({ volatileCorrected: 4, aggregateCorrected: 9 });
    expect(ecc).not.toHaveProperty('volatileUncorrected');
    expect(ecc).not.toHaveProperty('aggregateUncorrected');
  });

  it('reads all four where the driver answers all four', () => {
    expect(deviceWith({ '0/0': 1, '1/0': 2, '0/1': 3, '1/1': 4 }).ecc()).toEqual({
      volatileCorrected: 1,
      volatileUncorrected: 2,
      aggregateCorrected: 3,
      aggregateUncorrected: 4,
    });
  });

  it('does not resolve a firing ecc-uncorrected because the uncorrected counter stopped answering', () => {
    const h = new HealthEvaluator();
    const base = { state: 'ok' as const, index: 0, uuid: 'GPU-a', pciBusId: '00000000:3B:00.0', unsupported: [] };
    const sample = (ecc: NonNullable<ReturnType<NvmlDevice['ecc']>>) => toReading({ ...base, ecc }, 'NVIDIA H100');
    const fired = h.evaluate([sample({ volatileCorrected: 0, volatileUncorrected: 2 })], 0);
    expect(fired).toMatchObject([{ condition: 'ecc-uncorrected', state: 'firing' }]);
    const unknown = deviceWith({ '0/0': 0, '1/0': undefined, '0/1': 0, '1/1': 2 }).ecc()!;
    expect(h.evaluate([sample(unknown)], 1000)).toEqual([]);
  });
});
