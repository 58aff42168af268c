import { mkdtempSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Nvml } from '../../../node-agent/nvml/nvml.ts';
import { oneGpu, openMockNvml } from '../../../test/support/mock-nvml.ts';

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

/** Replaces the file atomically, as the local stack does. */
const write = (path: string, text: string) => {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
};

describe('mock NVML processesFile', () => {
  it('keeps the scenario processes until the file exists, then follows each rewrite', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mock-procs-')), 'processes.json');
    const session = await openMockNvml(oneGpu({ processes: [{ pid: 11, usedMiB: 100 }] }, { processesFile: path }));
    nvml = session.nvml;
    const pids = () => (nvml!.device(0).processes() ?? []).map((p) => p.pid);
    expect(pids()).toEqual([11]);
    write(
      path,
      JSON.stringify([
        [
          { pid: 4100, usedMiB: 2000 },
          { pid: 4101, usedMiB: 1000 },
        ],
      ]),
    );
    expect(pids()).toEqual([4100, 4101]);
    expect(nvml.device(0).memory()?.usedMiB).toBe(3000);
    write(path, '[[]]');
    expect(pids()).toEqual([]);
  });

  it('keeps the last good list when the file is invalid, and says why', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mock-procs-')), 'processes.json');
    write(path, JSON.stringify([[{ pid: 7, usedMiB: 1 }]]));
    const session = await openMockNvml(oneGpu({}, { processesFile: path }));
    nvml = session.nvml;
    expect(
      nvml
        .device(0)
        .processes()
        ?.map((p) => p.pid),
    ).toEqual([7]);
    write(path, JSON.stringify([[{ usedMiB: 1 }]]));
    expect(
      nvml
        .device(0)
        .processes()
        ?.map((p) => p.pid),
    ).toEqual([7]);
    expect(session.mock.lastError()).toMatch(/processesFile\[0\]\[0\]\.pid: is required/);
  });
});
