import { statSync } from 'node:fs';
import koffi from 'koffi';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMockNvmlControls } from '../../../node-agent/nvml/mock-controls.ts';
import { inventory } from '../../../node-agent/nvml/inventory.ts';
import type { Nvml } from '../../../node-agent/nvml/nvml.ts';
import { buildMockNvml, MOCK_NVML_LIBRARY } from './build.ts';
import { oneGpu, openMockNvml } from '../../../test/support/mock-nvml.ts';

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

describe('mock NVML library', () => {
  it('skips the compiler when the sources did not change', async () => {
    const before = statSync(await buildMockNvml()).mtimeMs;
    expect(await buildMockNvml()).toBe(MOCK_NVML_LIBRARY);
    expect(statSync(MOCK_NVML_LIBRARY).mtimeMs).toBe(before);
  });

  it.each([
    [undefined, 0],
    [3, 3],
  ])(
    'answers nvmlDeviceGetComputeMode: computeMode %s → %d (3: the EXCLUSIVE_PROCESS MPS sets)',
    async (mode, want) => {
      const s = await openMockNvml(oneGpu(mode === undefined ? {} : { computeMode: mode }));
      nvml = s.nvml;
      const lib = koffi.load(s.library);
      const byIndex = lib.func('nvmlDeviceGetHandleByIndex_v2', 'int', ['uint', koffi.out(koffi.pointer('void *'))]);
      const computeMode = lib.func('nvmlDeviceGetComputeMode', 'int', ['void *', koffi.out(koffi.pointer('uint'))]);
      const handle: [unknown] = [null];
      expect(byIndex(0, handle)).toBe(0);
      const out: [number] = [-1];
      expect(computeMode(handle[0], out)).toBe(0);
      expect(out[0]).toBe(want);
    },
  );

  it.each(['dgx-a100-8x.json', 'h100-mig.json', 't4-node.json', 'h200-1x.json'])(
    'loads the example scenario %s',
    async (name) => {
      nvml = (await openMockNvml(name)).nvml;
      const inv = inventory(nvml);
      expect(inv.gpus.length).toBeGreaterThan(0);
      expect(inv.gpus.every((g) => g.state === 'ok' && /^GPU-[0-9a-f-]{36}$/.test(g.uuid))).toBe(true);
    },
  );

  it.each([
    ['a missing required field', oneGpu({ uuid: undefined }), /gpus\[0\]\.uuid: is required/],
    ['a wrong type', oneGpu({ memoryTotalMiB: '80GB' }), /gpus\[0\]\.memoryTotalMiB: expected a number/],
    ['an unknown unsupported name', oneGpu({ unsupported: ['teleport'] }), /gpus\[0\]\.unsupported: unknown name/],
    [
      'MIG devices without MIG mode',
      oneGpu({ migDevices: [{ profile: '1g.10gb', giProfileId: 19, start: 0, size: 1, uuid: 'MIG-x' }] }),
      /migDevices: needs migMode: true/,
    ],
    [
      'a placement past slice 8',
      oneGpu({ migMode: true, migDevices: [{ profile: '3g.40gb', giProfileId: 9, start: 6, size: 4, uuid: 'MIG-x' }] }),
      /migDevices\[0\]: start \+ size must be at most 8/,
    ],
    ['hardware knobs that are not objects', oneGpu({ pcieLink: 5 }), /gpus\[0\]\.pcieLink: expected an object/],
    ['a PCIe link without its maxima', oneGpu({ pcieLink: { gen: 4 } }), /gpus\[0\]\.pcieLink\.maxGen: is required/],
    ['a fabric state past completed', oneGpu({ fabric: { state: 7 } }), /gpus\[0\]\.fabric: state: 0 not-supported/],
    [
      'a MIG profile name keyed by something else than an ID',
      oneGpu({ migProfileNames: { small: '1g.10gb' } }),
      /gpus\[0\]\.migProfileNames: keys are GPU-instance profile IDs/,
    ],
    [
      'a fault on a GPU that does not exist',
      oneGpu({}, { faults: [{ atMs: 1, gpu: 3, kind: 'xid', xid: 79 }] }),
      /faults\[0\]: fault\.gpu: no such GPU index/,
    ],
    [
      'an unknown fault kind',
      oneGpu({}, { faults: [{ atMs: 1, kind: 'meteor' }] }),
      /faults\[0\]: fault\.kind: unknown kind/,
    ],
    ['a fault without atMs', oneGpu({}, { faults: [{ kind: 'gpuLost' }] }), /faults\[0\]\.atMs: is required/],
  ])('fails nvmlInit on %s, naming the field', async (_what, scenario, message) => {
    const err = await openMockNvml(scenario).then(
      (s) => {
        nvml = s.nvml;
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ nvmlName: 'NVML_ERROR_UNKNOWN' });
    expect(loadMockNvmlControls(MOCK_NVML_LIBRARY).lastError()).toMatch(message);
  });

  it('reports invalid JSON with its offset', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const path = join(mkdtempSync(join(tmpdir(), 'mock-nvml-')), 'bad.json');
    writeFileSync(path, '{"gpus": [ }');
    await expect(openMockNvml(path)).rejects.toMatchObject({ nvmlName: 'NVML_ERROR_UNKNOWN' });
    expect(loadMockNvmlControls(MOCK_NVML_LIBRARY).lastError()).toMatch(
      /invalid JSON: offset 11: unexpected character/,
    );
  });

  it('rejects an injected fault it cannot parse, naming the field', async () => {
    const s = await openMockNvml(oneGpu());
    nvml = s.nvml;
    expect(s.mock.injectFault({ kind: 'xid', gpu: 0 })).toBe(2);
    expect(s.mock.lastError()).toMatch(/fault\.xid: is required/);
  });

  it('schedules an injected fault with a later atMs', async () => {
    const s = await openMockNvml(oneGpu());
    nvml = s.nvml;
    expect(s.mock.injectFault({ kind: 'ecc', gpu: 0, corrected: 2, atMs: 1000 })).toBe(0);
    expect(nvml.device(0).ecc()?.volatileCorrected).toBe(0);
    s.mock.advanceMs(1000);
    expect(s.mock.nowMs()).toBe(1000);
    expect(nvml.device(0).ecc()?.volatileCorrected).toBe(2);
  });
});
