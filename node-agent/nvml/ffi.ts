import koffi, { type LibraryHandle, type TypeObject } from 'koffi';
import { GpuInstanceInfo, GpuInstanceProfileInfo, Memory, PciInfo, Utilization } from './structs.ts';

type TypeSpec = string | TypeObject | ReturnType<typeof koffi.out>;

/**
 * With structs.ts (the ABI's structs) and mock-controls.ts (the mock library's extra symbols), the
 * files that touch koffi: it loads libnvidia-ml and binds the NVML functions. Everything
 * above it (nvml.ts) sees plain functions returning NVML return codes, with out-parameters written
 * into one-element arrays, objects or Buffers.
 *
 * Why the choices:
 * - The soname `libnvidia-ml.so.1`: the unversioned name exists only with the dev packages
 *   (docs/node-agent.md).
 * - Types are declared once here, at module scope, and left anonymous: named koffi types are
 *   process-global, so a second evaluation of this module (test isolation, hot reload) would
 *   otherwise fail with a duplicate-name error.
 * - Handles are BigInts (koffi 3 pointers). Struct arrays go through Buffers decoded here, which
 *   also keeps async calls (nvmlEventSetWait_v2) safe: the Buffer outlives the worker thread.
 */

const handle = koffi.pointer(koffi.opaque());
const uint = 'uint32';
const ulonglong = 'uint64';

export type Handle = bigint;
export type Out<T> = [T];
type Rc = number;

/** The bound NVML functions (same names and argument order as nvml.h). */
export interface NvmlLibrary {
  readonly path: string;
  nvmlInit_v2(): Rc;
  nvmlShutdown(): Rc;
  nvmlErrorString(rc: number): string;
  nvmlSystemGetDriverVersion(buf: Buffer, len: number): Rc;
  nvmlSystemGetNVMLVersion(buf: Buffer, len: number): Rc;
  nvmlSystemGetCudaDriverVersion_v2(out: Out<number>): Rc;
  nvmlDeviceGetCount_v2(out: Out<number>): Rc;
  nvmlDeviceGetHandleByIndex_v2(index: number, out: Out<Handle>): Rc;
  nvmlDeviceGetName(device: Handle, buf: Buffer, len: number): Rc;
  nvmlDeviceGetUUID(device: Handle, buf: Buffer, len: number): Rc;
  nvmlDeviceGetPciInfo_v3(device: Handle, out: object): Rc;
  nvmlDeviceGetMemoryInfo(device: Handle, out: object): Rc;
  nvmlDeviceGetUtilizationRates(device: Handle, out: object): Rc;
  nvmlDeviceGetTemperature(device: Handle, sensor: number, out: Out<number>): Rc;
  nvmlDeviceGetPowerUsage(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetEnforcedPowerLimit(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetTotalEccErrors(device: Handle, errorType: number, counterType: number, out: Out<number | bigint>): Rc;
  nvmlDeviceGetRetiredPagesPendingStatus(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetRemappedRows(
    device: Handle,
    corr: Out<number>,
    unc: Out<number>,
    pending: Out<number>,
    failure: Out<number>,
  ): Rc;
  /** nvmlDeviceGetCurrentClocksEventReasons, or the older ...ThrottleReasons on drivers before 535. */
  clocksEventReasons(device: Handle, out: Out<number | bigint>): Rc;
  /** Drain state by PCI address (`nvidia-smi drain`); undefined where the library lacks it. */
  nvmlDeviceQueryDrainState?: (pci: object, out: Out<number>) => Rc;
  nvmlDeviceModifyDrainState?: (pci: object, state: number) => Rc;
  nvmlDeviceGetNvLinkState(device: Handle, link: number, out: Out<number>): Rc;
  /**
   * Calls newer than the agent's oldest supported driver: undefined where the library lacks them
   * (the reading is then absent, as for NOT_SUPPORTED).
   */
  nvmlDeviceGetTemperatureThreshold?: (device: Handle, type: number, out: Out<number>) => Rc;
  nvmlDeviceGetEncoderUtilization?: (device: Handle, util: Out<number>, samplingPeriodUs: Out<number>) => Rc;
  nvmlDeviceGetDecoderUtilization?: (device: Handle, util: Out<number>, samplingPeriodUs: Out<number>) => Rc;
  nvmlDeviceGetCurrPcieLinkGeneration?: (device: Handle, out: Out<number>) => Rc;
  nvmlDeviceGetMaxPcieLinkGeneration?: (device: Handle, out: Out<number>) => Rc;
  nvmlDeviceGetCurrPcieLinkWidth?: (device: Handle, out: Out<number>) => Rc;
  nvmlDeviceGetMaxPcieLinkWidth?: (device: Handle, out: Out<number>) => Rc;
  /** `info` is a Buffer holding a versioned nvmlGpuFabricInfoV_t (its first 4 bytes the version). */
  nvmlDeviceGetGpuFabricInfoV?: (device: Handle, info: Buffer) => Rc;
  /** `status` is a Buffer holding nvmlEccSramErrorStatus_v1_t with its version set. */
  nvmlDeviceGetSramEccErrorStatus?: (device: Handle, status: Buffer) => Rc;
  nvmlDeviceGetComputeRunningProcesses_v3(device: Handle, count: Out<number>, infos: Buffer | null): Rc;
  /**
   * MPS clients only (Volta and newer; the compute listing then shows the MPS server): same struct and
   * protocol as the compute listing (NVIDIA/go-nvml pkg/nvml/nvml.h). Undefined where the library lacks it.
   */
  nvmlDeviceGetMPSComputeRunningProcesses_v3?: (device: Handle, count: Out<number>, infos: Buffer | null) => Rc;
  nvmlDeviceGetMigMode(device: Handle, current: Out<number>, pending: Out<number>): Rc;
  nvmlDeviceGetMaxMigDeviceCount(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetMigDeviceHandleByIndex(device: Handle, index: number, out: Out<Handle>): Rc;
  nvmlDeviceGetGpuInstanceId(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetComputeInstanceId(device: Handle, out: Out<number>): Rc;
  nvmlDeviceGetGpuInstanceProfileInfo(device: Handle, profile: number, out: object): Rc;
  /** `info` is a Buffer holding nvmlGpuInstanceProfileInfo_v2_t with its version set; undefined before R470. */
  nvmlDeviceGetGpuInstanceProfileInfoV?: (device: Handle, profile: number, info: Buffer) => Rc;
  nvmlDeviceGetGpuInstancePossiblePlacements_v2(
    device: Handle,
    profileId: number,
    placements: Buffer | null,
    count: Out<number>,
  ): Rc;
  nvmlDeviceGetGpuInstanceById(device: Handle, id: number, out: Out<Handle>): Rc;
  nvmlGpuInstanceGetInfo(gpuInstance: Handle, out: object): Rc;
  nvmlDeviceGetFieldValues(device: Handle, count: number, values: Buffer): Rc;
  nvmlDeviceGetSupportedEventTypes(device: Handle, out: Out<number | bigint>): Rc;
  nvmlEventSetCreate(out: Out<Handle>): Rc;
  nvmlDeviceRegisterEvents(device: Handle, eventTypes: bigint, set: Handle): Rc;
  nvmlEventSetFree(set: Handle): Rc;
  /** Blocks up to timeoutMs, so only ever called through `async` (libuv's thread pool). */
  nvmlEventSetWait_v2Async(set: Handle, data: Buffer, timeoutMs: number): Promise<Rc>;
}

/** The library could not be loaded: no driver on this machine, or a wrong NVML_LIBRARY_PATH. */
export class NvmlNotFoundError extends Error {
  override name = 'NvmlNotFoundError';
  constructor(
    readonly path: string,
    options?: ErrorOptions,
  ) {
    super(`NVML not found at ${path}: is the NVIDIA driver installed?`, options);
  }
}

export const DEFAULT_NVML_LIBRARY = 'libnvidia-ml.so.1';

/** Which library to load: the argument, else $NVML_LIBRARY_PATH, else the driver's soname. */
export function nvmlLibraryPath(path?: string): string {
  return path ?? (process.env.NVML_LIBRARY_PATH || DEFAULT_NVML_LIBRARY);
}

export function loadLibrary(path: string): LibraryHandle {
  try {
    return koffi.load(path);
  } catch (err) {
    throw new NvmlNotFoundError(path, { cause: err });
  }
}

/** Loads and binds libnvidia-ml. Throws NvmlNotFoundError when it cannot be loaded. */
export function loadNvml(path?: string): NvmlLibrary {
  const where = nvmlLibraryPath(path);
  const lib = loadLibrary(where);
  const fn = (name: string, args: TypeSpec[], result: TypeSpec = 'int32') => lib.func(name, result, args);
  const optional = (name: string, args: TypeSpec[]) => {
    try {
      return fn(name, args);
    } catch {
      return undefined;
    }
  };
  const outU32 = koffi.out(koffi.pointer(uint));
  const outU64 = koffi.out(koffi.pointer(ulonglong));
  const outHandle = koffi.out(koffi.pointer(handle));
  const outStruct = (t: TypeObject) => koffi.out(koffi.pointer(t));
  const clocks =
    optional('nvmlDeviceGetCurrentClocksEventReasons', [handle, outU64]) ??
    fn('nvmlDeviceGetCurrentClocksThrottleReasons', [handle, outU64]);
  const wait = fn('nvmlEventSetWait_v2', [handle, 'void *', uint]);

  return {
    path: where,
    nvmlInit_v2: fn('nvmlInit_v2', []),
    nvmlShutdown: fn('nvmlShutdown', []),
    nvmlErrorString: fn('nvmlErrorString', ['int32'], 'const char *'),
    nvmlSystemGetDriverVersion: fn('nvmlSystemGetDriverVersion', ['void *', uint]),
    nvmlSystemGetNVMLVersion: fn('nvmlSystemGetNVMLVersion', ['void *', uint]),
    nvmlSystemGetCudaDriverVersion_v2: fn('nvmlSystemGetCudaDriverVersion_v2', [koffi.out(koffi.pointer('int32'))]),
    nvmlDeviceGetCount_v2: fn('nvmlDeviceGetCount_v2', [outU32]),
    nvmlDeviceGetHandleByIndex_v2: fn('nvmlDeviceGetHandleByIndex_v2', [uint, outHandle]),
    nvmlDeviceGetName: fn('nvmlDeviceGetName', [handle, 'void *', uint]),
    nvmlDeviceGetUUID: fn('nvmlDeviceGetUUID', [handle, 'void *', uint]),
    nvmlDeviceGetPciInfo_v3: fn('nvmlDeviceGetPciInfo_v3', [handle, outStruct(PciInfo)]),
    nvmlDeviceGetMemoryInfo: fn('nvmlDeviceGetMemoryInfo', [handle, outStruct(Memory)]),
    nvmlDeviceGetUtilizationRates: fn('nvmlDeviceGetUtilizationRates', [handle, outStruct(Utilization)]),
    nvmlDeviceGetTemperature: fn('nvmlDeviceGetTemperature', [handle, 'int32', outU32]),
    nvmlDeviceGetPowerUsage: fn('nvmlDeviceGetPowerUsage', [handle, outU32]),
    nvmlDeviceGetEnforcedPowerLimit: fn('nvmlDeviceGetEnforcedPowerLimit', [handle, outU32]),
    nvmlDeviceGetTotalEccErrors: fn('nvmlDeviceGetTotalEccErrors', [handle, 'int32', 'int32', outU64]),
    nvmlDeviceGetRetiredPagesPendingStatus: fn('nvmlDeviceGetRetiredPagesPendingStatus', [
      handle,
      koffi.out(koffi.pointer('int32')),
    ]),
    nvmlDeviceGetRemappedRows: fn('nvmlDeviceGetRemappedRows', [handle, outU32, outU32, outU32, outU32]),
    clocksEventReasons: clocks,
    nvmlDeviceQueryDrainState: optional('nvmlDeviceQueryDrainState', [
      koffi.pointer(PciInfo),
      koffi.out(koffi.pointer('int32')),
    ]),
    nvmlDeviceModifyDrainState: optional('nvmlDeviceModifyDrainState', [koffi.pointer(PciInfo), 'int32']),
    nvmlDeviceGetNvLinkState: fn('nvmlDeviceGetNvLinkState', [handle, uint, koffi.out(koffi.pointer('int32'))]),
    nvmlDeviceGetTemperatureThreshold: optional('nvmlDeviceGetTemperatureThreshold', [handle, 'int32', outU32]),
    nvmlDeviceGetEncoderUtilization: optional('nvmlDeviceGetEncoderUtilization', [handle, outU32, outU32]),
    nvmlDeviceGetDecoderUtilization: optional('nvmlDeviceGetDecoderUtilization', [handle, outU32, outU32]),
    nvmlDeviceGetCurrPcieLinkGeneration: optional('nvmlDeviceGetCurrPcieLinkGeneration', [handle, outU32]),
    nvmlDeviceGetMaxPcieLinkGeneration: optional('nvmlDeviceGetMaxPcieLinkGeneration', [handle, outU32]),
    nvmlDeviceGetCurrPcieLinkWidth: optional('nvmlDeviceGetCurrPcieLinkWidth', [handle, outU32]),
    nvmlDeviceGetMaxPcieLinkWidth: optional('nvmlDeviceGetMaxPcieLinkWidth', [handle, outU32]),
    nvmlDeviceGetGpuFabricInfoV: optional('nvmlDeviceGetGpuFabricInfoV', [handle, 'void *']),
    nvmlDeviceGetSramEccErrorStatus: optional('nvmlDeviceGetSramEccErrorStatus', [handle, 'void *']),
    nvmlDeviceGetComputeRunningProcesses_v3: fn('nvmlDeviceGetComputeRunningProcesses_v3', [
      handle,
      koffi.inout(koffi.pointer(uint)),
      'void *',
    ]),
    nvmlDeviceGetMPSComputeRunningProcesses_v3: optional('nvmlDeviceGetMPSComputeRunningProcesses_v3', [
      handle,
      koffi.inout(koffi.pointer(uint)),
      'void *',
    ]),
    nvmlDeviceGetMigMode: fn('nvmlDeviceGetMigMode', [handle, outU32, outU32]),
    nvmlDeviceGetMaxMigDeviceCount: fn('nvmlDeviceGetMaxMigDeviceCount', [handle, outU32]),
    nvmlDeviceGetMigDeviceHandleByIndex: fn('nvmlDeviceGetMigDeviceHandleByIndex', [handle, uint, outHandle]),
    nvmlDeviceGetGpuInstanceId: fn('nvmlDeviceGetGpuInstanceId', [handle, outU32]),
    nvmlDeviceGetComputeInstanceId: fn('nvmlDeviceGetComputeInstanceId', [handle, outU32]),
    nvmlDeviceGetGpuInstanceProfileInfo: fn('nvmlDeviceGetGpuInstanceProfileInfo', [
      handle,
      uint,
      outStruct(GpuInstanceProfileInfo),
    ]),
    nvmlDeviceGetGpuInstanceProfileInfoV: optional('nvmlDeviceGetGpuInstanceProfileInfoV', [handle, uint, 'void *']),
    nvmlDeviceGetGpuInstancePossiblePlacements_v2: fn('nvmlDeviceGetGpuInstancePossiblePlacements_v2', [
      handle,
      uint,
      'void *',
      koffi.inout(koffi.pointer(uint)),
    ]),
    nvmlDeviceGetGpuInstanceById: fn('nvmlDeviceGetGpuInstanceById', [handle, uint, outHandle]),
    nvmlGpuInstanceGetInfo: fn('nvmlGpuInstanceGetInfo', [handle, outStruct(GpuInstanceInfo)]),
    nvmlDeviceGetFieldValues: fn('nvmlDeviceGetFieldValues', [handle, 'int32', 'void *']),
    nvmlDeviceGetSupportedEventTypes: fn('nvmlDeviceGetSupportedEventTypes', [handle, outU64]),
    nvmlEventSetCreate: fn('nvmlEventSetCreate', [outHandle]),
    nvmlDeviceRegisterEvents: fn('nvmlDeviceRegisterEvents', [handle, ulonglong, handle]),
    nvmlEventSetFree: fn('nvmlEventSetFree', [handle]),
    nvmlEventSetWait_v2Async: (set, data, timeoutMs) =>
      new Promise((resolve, reject) => {
        wait.async(set, data, timeoutMs, (err: unknown, rc: number) => (err ? reject(err) : resolve(rc)));
      }),
  };
}

/** Decodes `count` structs of `type` laid out back to back in `buf`. */
export function decodeArray<T>(buf: Buffer, type: TypeObject, count: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < count; i++) out.push(koffi.decode(buf, i * type.size, type) as T);
  return out;
}

export function decodeStruct<T>(buf: Buffer, type: TypeObject): T {
  return koffi.decode(buf, type) as T;
}

export function encodeStruct(buf: Buffer, offset: number, type: TypeObject, value: object): void {
  koffi.encode(buf, offset, type, value);
}
