import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadMockNvmlControls, type MockNvmlControls } from '../../node-agent/nvml/mock-controls.ts';
import { Nvml } from '../../node-agent/nvml/nvml.ts';
import { buildMockNvml, MOCK_NVML_SCENARIOS } from '../../infra/local/mock-nvml/build.ts';

/**
 * Opens the real NVML binding on the mock library with a scenario (a file name from scenarios/,
 * a path, or an object written to a temp file) and the manual clock, so tests step time with
 * `mock.advanceMs` and never sleep (`manualClock: false` for the real-clock path). Close the session before opening another: the scenario is
 * (re)read by the first nvmlInit only.
 */
export async function openMockNvml(
  scenario: string | object,
  options: { manualClock?: boolean } = {},
): Promise<{ nvml: Nvml; mock: MockNvmlControls; library: string }> {
  const library = await buildMockNvml();
  // Init failures reach the test as NvmlError plus mock.lastError(); keep stderr for real output.
  process.env.MOCK_NVML_QUIET ??= '1';
  let path: string;
  if (typeof scenario === 'string') {
    path = scenario.includes('/') ? scenario : join(MOCK_NVML_SCENARIOS, scenario);
  } else {
    path = join(mkdtempSync(join(tmpdir(), 'mock-nvml-')), 'scenario.json');
    writeFileSync(path, JSON.stringify(scenario));
  }
  const mock = loadMockNvmlControls(library);
  mock.setScenario(path);
  mock.setManualClock(options.manualClock ?? true);
  const nvml = Nvml.open({ libraryPath: library });
  return { nvml, mock, library };
}

/** A one-GPU scenario to spread overrides into. */
export function oneGpu(overrides: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): object {
  return {
    driverVersion: '550.54.15',
    cudaVersion: 12040,
    gpus: [
      {
        name: 'NVIDIA A100-SXM4-80GB',
        uuid: 'GPU-00000000-1111-2222-3333-444444444444',
        pciBusId: '00000000:3B:00.0',
        memoryTotalMiB: 81920,
        powerLimitW: 400,
        nvlinkCount: 12,
        ...overrides,
      },
    ],
    ...extra,
  };
}
