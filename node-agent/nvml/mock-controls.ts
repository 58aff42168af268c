import { loadLibrary, nvmlLibraryPath } from './ffi.ts';

const uint = 'uint32';
const ulonglong = 'uint64';

/**
 * The mock library's extra symbols (infra/local/mock-nvml, docs/mock-nvml.md). Loading the same
 * path again shares the one dlopen'ed copy, so these steer the library `loadNvml` bound. Throws
 * when the library is not the mock.
 */
export interface MockNvmlControls {
  setScenario(path: string | null): number;
  /** Applies from the next first nvmlInit: true manual clock, false real, undefined $MOCK_NVML_CLOCK. */
  setManualClock(manual: boolean | undefined): number;
  advanceMs(ms: number): number;
  nowMs(): number;
  injectXid(gpu: number, xid: number, gpuInstanceId?: number, computeInstanceId?: number): number;
  injectFault(fault: object): number;
  /** What `nvidia-smi --gpu-reset` does to the mock GPU at `index` (0, or an NVML error code). */
  resetGpu(index: number): number;
  lastError(): string;
}

export function loadMockNvmlControls(path?: string): MockNvmlControls {
  const lib = loadLibrary(nvmlLibraryPath(path));
  const setScenario = lib.func('mockNvmlSetScenario', 'int32', ['const char *']);
  const setClock = lib.func('mockNvmlSetManualClock', 'int32', ['int32']);
  const advance = lib.func('mockNvmlAdvanceMs', 'int32', [ulonglong]);
  const now = lib.func('mockNvmlNowMs', ulonglong, []);
  const xid = lib.func('mockNvmlInjectXid', 'int32', [uint, ulonglong, uint, uint]);
  const fault = lib.func('mockNvmlInjectFault', 'int32', ['const char *']);
  const lastError = lib.func('mockNvmlLastError', 'const char *', []);
  const reset = lib.func('mockNvmlResetGpu', 'int32', [uint]);
  const NONE = 0xffffffff;
  return {
    setScenario: (p) => setScenario(p) as number,
    setManualClock: (manual) => setClock(manual === undefined ? -1 : manual ? 1 : 0) as number,
    advanceMs: (ms) => advance(ms) as number,
    nowMs: () => Number(now()),
    injectXid: (gpu, x, gi = NONE, ci = NONE) => xid(gpu, x, gi, ci) as number,
    injectFault: (f) => fault(JSON.stringify(f)) as number,
    resetGpu: (index) => reset(index) as number,
    lastError: () => lastError() as string,
  };
}
