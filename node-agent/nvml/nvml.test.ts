import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';
import { oneGpu, openMockNvml } from '../../test/support/mock-nvml.ts';
import { inventory } from './inventory.ts';
import { Nvml, NvmlError, NvmlNotFoundError } from './nvml.ts';

// The real binding (koffi + ffi.ts) against the mock C library: no TypeScript-level fake.
let open: Nvml | undefined;
afterEach(() => {
  open?.close();
  open = undefined;
});

async function session(scenario: string | object) {
  const s = await openMockNvml(scenario);
  open = s.nvml;
  return s;
}

describe('Nvml inventory', () => {
  it('reads versions and all eight GPUs of the DGX A100 scenario', async () => {
    const { nvml } = await session('dgx-a100-8x.json');
    const file = JSON.parse(readFileSync(join(MOCK_NVML_SCENARIOS, 'dgx-a100-8x.json'), 'utf8')) as {
      gpus: { uuid: string; pciBusId: string }[];
    };
    const inv = inventory(nvml);
    expect(inv.driverVersion).toBe('550.54.15');
    expect(inv.nvmlVersion).toBe('12.550.54.15');
    expect(inv.cudaVersion).toBe('12.4');
    expect(inv.gpus).toHaveLength(8);
    expect(inv.gpus.map((g) => (g.state === 'ok' ? g.uuid : g.state))).toEqual(file.gpus.map((g) => g.uuid));
    expect(inv.gpus.map((g) => (g.state === 'ok' ? g.pciBusId : g.state))).toEqual(
      ['07', '0F', '47', '4E', '87', '90', 'B7', 'BD'].map((b) => `00000000:${b}:00.0`),
    );
    const first = inv.gpus[0];
    if (first?.state !== 'ok') throw new Error('GPU 0 should be ok');
    expect(first).toMatchObject({
      name: 'NVIDIA A100-SXM4-80GB',
      pciDeviceId: 0x20b210de,
      memoryTotalMiB: 81920,
      migMode: { current: false, pending: false },
      migDevices: [],
    });
  });

  it('lists the MIG profiles an A100 offers with every placement NVML allows', async () => {
    const { nvml } = await session('dgx-a100-8x.json');
    const gpu = inventory(nvml).gpus[0];
    if (gpu?.state !== 'ok') throw new Error('GPU 0 should be ok');
    const byName = Object.fromEntries(
      gpu.migProfiles.map((p) => [
        p.name,
        { id: p.id, starts: p.placements.map((x) => x.start), size: p.placements[0]?.size, max: p.instanceCount },
      ]),
    );
    expect(byName).toEqual({
      '1g.10gb': { id: 19, starts: [0, 1, 2, 3, 4, 5, 6], size: 1, max: 7 },
      '2g.20gb': { id: 14, starts: [0, 2, 4], size: 2, max: 3 },
      '3g.40gb': { id: 9, starts: [0, 4], size: 4, max: 2 },
      '4g.40gb': { id: 5, starts: [0], size: 4, max: 1 },
      '7g.80gb': { id: 0, starts: [0], size: 8, max: 1 },
      '1g.10gb+me': { id: 20, starts: [0, 1, 2, 3, 4, 5, 6], size: 1, max: 1 },
      '1g.20gb': { id: 15, starts: [0, 2, 4, 6], size: 2, max: 4 },
    });
  });

  it('reads MIG devices with GPU/compute instance ids, profile and placement', async () => {
    const { nvml } = await session('h100-mig.json');
    const [a, b] = inventory(nvml).gpus;
    if (a?.state !== 'ok' || b?.state !== 'ok') throw new Error('both GPUs should be ok');
    expect(a.migMode).toEqual({ current: true, pending: true });
    expect(
      a.migDevices.map((m) => [
        m.profile,
        m.giProfileId,
        m.gpuInstanceId,
        m.computeInstanceId,
        m.placement?.start,
        m.placement?.size,
      ]),
    ).toEqual([0, 1, 2, 3, 4, 5, 6].map((s) => ['1g.10gb', 19, s + 7, 0, s, 1]));
    expect(b.migDevices.map((m) => `${m.profile}@${m.placement?.start}`)).toEqual([
      '3g.40gb@4',
      '2g.20gb@0',
      '2g.20gb@2',
    ]);
    expect(b.migDevices[0]?.uuid).toMatch(/^MIG-/);
  });

  it('reads the framebuffer in use per MIG instance: the processes on that instance', async () => {
    const { nvml } = await session('h100-mig.json');
    const [a, b] = inventory(nvml).gpus;
    if (a?.state !== 'ok' || b?.state !== 'ok') throw new Error('both GPUs should be ok');
    expect(a.migDevices.map((m) => m.memoryUsedMiB)).toEqual([8000, 0, 9000, 0, 0, 0, 0]);
    expect(b.migDevices.map((m) => [m.profile, m.memoryUsedMiB])).toEqual([
      ['3g.40gb', 35000],
      ['2g.20gb', 0],
      ['2g.20gb', 0],
    ]);
  });

  it('reports a GPU without MIG with no MIG mode and no profiles', async () => {
    const { nvml } = await session('t4-node.json');
    const gpu = inventory(nvml).gpus[0];
    if (gpu?.state !== 'ok') throw new Error('GPU 0 should be ok');
    expect(gpu.migMode).toBeUndefined();
    expect(gpu.migProfiles).toEqual([]);
    expect(gpu.name).toBe('Tesla T4');
  });
});

describe('Nvml errors', () => {
  it('names the path and the driver when the library is missing', () => {
    expect(() => Nvml.open({ libraryPath: '/nonexistent/libnvidia-ml.so.1' })).toThrow(
      new NvmlNotFoundError('/nonexistent/libnvidia-ml.so.1'),
    );
    expect(() => Nvml.open({ libraryPath: '/nonexistent/libnvidia-ml.so.1' })).toThrow(
      'NVML not found at /nonexistent/libnvidia-ml.so.1: is the NVIDIA driver installed?',
    );
  });

  it("carries NVML's name, string and code for a failed call", async () => {
    const { nvml } = await session(oneGpu());
    let caught: unknown;
    try {
      nvml.device(5);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(NvmlError);
    expect(caught).toMatchObject({
      code: 2,
      nvmlName: 'NVML_ERROR_INVALID_ARGUMENT',
      nvmlString: 'Invalid Argument',
      call: 'nvmlDeviceGetHandleByIndex_v2',
    });
  });

  it('fails nvmlInit with the field the scenario gets wrong', async () => {
    const bad = oneGpu({ pciBusId: 'not-a-bus-id' });
    const err = await openMockNvml(bad).then(
      (s) => {
        s.nvml.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ nvmlName: 'NVML_ERROR_UNKNOWN', call: 'nvmlInit_v2' });
    const { loadMockNvmlControls } = await import('./mock-controls.ts');
    const { MOCK_NVML_LIBRARY } = await import('../../infra/local/mock-nvml/build.ts');
    expect(loadMockNvmlControls(MOCK_NVML_LIBRARY).lastError()).toMatch(
      /gpus\[0\]\.pciBusId: expected DOMAIN:BUS:DEVICE\.FUNCTION/,
    );
  });
});

describe('nvmlLibraryPath', () => {
  it('prefers the argument, then NVML_LIBRARY_PATH, then the driver soname', async () => {
    const { nvmlLibraryPath } = await import('./ffi.ts');
    const saved = process.env.NVML_LIBRARY_PATH;
    try {
      process.env.NVML_LIBRARY_PATH = '/opt/mock/libnvidia-ml.so.1';
      expect(nvmlLibraryPath('/x/lib.so')).toBe('/x/lib.so');
      expect(nvmlLibraryPath()).toBe('/opt/mock/libnvidia-ml.so.1');
      delete process.env.NVML_LIBRARY_PATH;
      expect(nvmlLibraryPath()).toBe('libnvidia-ml.so.1');
    } finally {
      if (saved === undefined) delete process.env.NVML_LIBRARY_PATH;
      else process.env.NVML_LIBRARY_PATH = saved;
    }
  });
});
