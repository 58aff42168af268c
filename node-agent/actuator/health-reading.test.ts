import { describe, expect, it } from 'vitest';
import type { Nvml } from '../nvml/nvml.ts';
import { nvmlGpus } from './ports.ts';

const G0 = 'GPU-00000000-0000-4000-8000-000000000000';

/** One NVML device as far as the actuator's health reading needs it. */
function nvmlWith(recoveryAction: { code: number; action?: string } | undefined): Nvml {
  const d = {
    uuid: () => G0,
    remappedRows: () => ({ pending: false, failure: false }),
    ecc: () => ({ aggregateUncorrected: 0 }),
    recoveryAction: () => recoveryAction,
  };
  return { devices: () => [d], device: () => d } as unknown as Nvml;
}

describe("the actuator's health reading through NVML", () => {
  it.each([
    ['a driver without field 230', undefined, 'unknown'],
    ['a code nvml.h does not name (6)', { code: 6 }, 'code 6'],
    ['NONE', { code: 0, action: 'none' }, 'none'],
  ] as const)('reads %s as %s', (_what, ra, want) => {
    const gpus = nvmlGpus(nvmlWith(ra), async () => ({ ok: true }));
    expect(gpus.health(G0).recoveryAction).toBe(want);
  });

  it('says the aggregate uncorrected ECC count is unreadable when ECC answers but that counter does not', () => {
    // nvml/device-base.ts leaves out a counter NVML does not give while the first answers (ECC on): read as 0 it
    // was a clean count a probe passed on. ECC off or absent (no counter at all) is no ECC to count: 0, readable.
    const withEcc = (ecc: object | undefined): Nvml => {
      const d = {
        uuid: () => G0,
        remappedRows: () => ({ pending: false, failure: false }),
        ecc: () => ecc,
        recoveryAction: () => ({ code: 0, action: 'none' }),
      };
      return { devices: () => [d], device: () => d } as unknown as Nvml;
    };
    const read = (ecc: object | undefined) => nvmlGpus(withEcc(ecc), async () => ({ ok: true })).health(G0);
    expect(read({ volatileCorrected: 0, volatileUncorrected: 0 })).toMatchObject({ eccUnreadable: true });
    expect(read({ volatileCorrected: 0, aggregateUncorrected: 2 })).not.toHaveProperty('eccUnreadable');
    expect(read(undefined)).toMatchObject({ eccUncorrected: 0 });
    expect(read(undefined)).not.toHaveProperty('eccUnreadable');
  });

  it('finds a GPU past one that fell off the bus (its UUID throws), and counts the lost one as not there', () => {
    const lost = {
      uuid: () => {
        throw new Error('nvmlDeviceGetUUID: NVML_ERROR_GPU_IS_LOST');
      },
    };
    const ok = {
      uuid: () => G0,
      remappedRows: () => ({ pending: false, failure: false }),
      ecc: () => ({ aggregateUncorrected: 0 }),
      recoveryAction: () => ({ code: 0, action: 'none' }),
    };
    const nvml = { devices: () => [lost, ok], device: (i: number) => [lost, ok][i] } as unknown as Nvml;
    const gpus = nvmlGpus(nvml, async () => ({ ok: true }));
    expect(gpus.indexOf(G0)).toBe(1);
    expect(gpus.indexOf('GPU-gone')).toBeUndefined();
    expect(gpus.health('GPU-gone')).toMatchObject({ nvmlAnswers: false });
  });
});
