import { afterEach, describe, expect, it } from 'vitest';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import { nvmlGpus } from '../actuator/ports.ts';
import { NvmlError, type Nvml } from './nvml.ts';

// The real binding (koffi, nvmlPciInfo_t passed by pointer) against the mock C library.
let open: Nvml | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

describe('NVML drain state', () => {
  it('turns on and off by PCI address, as nvidia-smi drain does', async () => {
    const s = await openMockNvml(oneGpu());
    open = s.nvml;
    const d = s.nvml.device(0);
    expect(d.drainState()).toBe(false);
    d.setDrainState(true);
    expect(d.drainState()).toBe(true);
    d.setDrainState(false);
    expect(d.drainState()).toBe(false);
  });

  it("refuses to drain a GPU processes hold, naming NVML's error", async () => {
    const s = await openMockNvml(oneGpu({ processes: [{ pid: 4242, usedMiB: 1000 }] }));
    open = s.nvml;
    const d = s.nvml.device(0);
    expect(() => d.setDrainState(true)).toThrow(NvmlError);
    expect(() => d.setDrainState(true)).toThrow(/nvmlDeviceModifyDrainState: NVML_ERROR_IN_USE/);
    expect(d.drainState()).toBe(false);
  });

  it("is what the actuator's drain port drives", async () => {
    const s = await openMockNvml(oneGpu());
    open = s.nvml;
    const gpus = nvmlGpus(s.nvml, async () => ({ ok: true }));
    const uuid = s.nvml.device(0).uuid();
    expect(gpus.drain!(uuid, true)).toEqual({ ok: true });
    expect(s.nvml.device(0).drainState()).toBe(true);
    expect(gpus.drain!('GPU-ffffffff-0000-4000-8000-000000000000', true)).toEqual({
      ok: false,
      reason: 'NVML does not know this GPU',
    });
  });
});
