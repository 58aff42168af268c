import { mkdtempSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { migDevices, migMode } from '../../../node-agent/nvml/mig.ts';
import type { Nvml } from '../../../node-agent/nvml/nvml.ts';
import { oneGpu, openMockNvml } from '../../../test/support/mock-nvml.ts';

let nvml: Nvml | undefined;
afterEach(() => {
  nvml?.close();
  nvml = undefined;
});

const write = (path: string, text: string) => {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
};
const UUID = 'MIG-00000000-1111-2222-3333-4444444444';
const seven = Array.from({ length: 7 }, (_, i) => ({
  profile: '1g.10gb',
  giProfileId: 19,
  start: i,
  size: 1,
  giId: i + 1,
  uuid: `${UUID}${String(i + 1).padStart(2, '0')}`,
}));

describe('mock NVML migFile (what mig-manager leaves after a relayout)', () => {
  it("lists the scenario instances until the file changes, then the file's", async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mock-mig-')), 'mig.json');
    const s = await openMockNvml(oneGpu({ migMode: true, migDevices: seven }, { migFile: path }));
    nvml = s.nvml;
    const profiles = () => migDevices(nvml!, nvml!.device(0)).map((m) => `${m.profile}@${m.placement?.start ?? '?'}`);
    expect(profiles()).toEqual(seven.map((m) => `1g.10gb@${m.start}`));
    write(
      path,
      JSON.stringify([
        [
          { profile: '3g.40gb', giProfileId: 9, start: 0, size: 4, giId: 1, uuid: `${UUID}01` },
          { profile: '3g.40gb', giProfileId: 9, start: 4, size: 4, giId: 2, uuid: `${UUID}02` },
        ],
      ]),
    );
    expect(profiles()).toEqual(['3g.40gb@0', '3g.40gb@4']);
  });

  it('keeps the last good layout when the file is invalid, and says why', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mock-mig-')), 'mig.json');
    const s = await openMockNvml(oneGpu({ migMode: true, migDevices: seven }, { migFile: path }));
    nvml = s.nvml;
    write(
      path,
      JSON.stringify([[{ profile: '3g.40gb', giProfileId: 9, start: 6, size: 4, giId: 1, uuid: `${UUID}01` }]]),
    );
    expect(migDevices(nvml, nvml.device(0))).toHaveLength(7);
    expect(s.mock.lastError()).toContain('migFile[0].migDevices[0]: start + size must be at most 8 memory slices');
  });
});

describe('mock NVML reset of a MIG GPU', () => {
  it('destroys every instance and leaves MIG mode on; a rewritten migFile, even the same layout, brings them back', async () => {
    const path = join(mkdtempSync(join(tmpdir(), 'mock-mig-')), 'mig.json');
    const s = await openMockNvml(oneGpu({ migMode: true, migDevices: seven }, { migFile: path }));
    nvml = s.nvml;
    const d = nvml.device(0);
    const same = JSON.stringify([seven]);
    write(path, same);
    expect(migDevices(nvml, d)).toHaveLength(7);
    expect(s.mock.resetGpu(0)).toBe(0);
    expect(migDevices(nvml, d)).toEqual([]);
    expect(migMode(nvml, d)).toEqual({ current: true, pending: true });
    // Nothing recreates them by itself: the next calls still see an empty GPU.
    expect(migDevices(nvml, d)).toEqual([]);
    write(path, same);
    // The mock sees a rewrite by mtime and size; the same bytes written within the file system's
    // timestamp granularity would look unchanged, so the rewrite is stamped a second later.
    const later = new Date(statSync(path).mtimeMs + 1000);
    utimesSync(path, later, later);
    expect(migDevices(nvml, d).map((m) => m.profile)).toEqual(Array(7).fill('1g.10gb'));
  });
});
