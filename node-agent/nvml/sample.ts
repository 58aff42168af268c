import { isGpuLost, NvmlError } from './errors.ts';
import type {
  ClockEventReasons,
  EccCounts,
  FabricInfo,
  GpuProcess,
  MemoryInfo,
  NvLinkErrors,
  NvLinkState,
  NvmlDevice,
  PcieLink,
  RecoveryAction,
  RemappedRows,
  SramEccStatus,
  TemperatureLimits,
} from './device.ts';
import { migDevices, migMode, type MigDeviceInfo } from './mig.ts';
import type { Nvml } from './nvml.ts';

/**
 * One health/utilization sample of one GPU as plain data. Whatever NVML does not support on this
 * GPU is omitted, and its field name is listed in `unsupported`, so consumers can tell "zero"
 * from "not measured".
 */
export interface GpuSample {
  state: 'ok';
  index: number;
  uuid: string;
  pciBusId: string;
  utilization?: { gpu: number; memory: number };
  /** Video encoder / decoder utilization (%): dcgm-exporter's ENC_UTIL / DEC_UTIL. */
  codecUtilization?: { encoder?: number; decoder?: number };
  memory?: MemoryInfo;
  temperatureC?: number;
  /** HBM temperature (field 82). */
  memoryTemperatureC?: number;
  /** The GPU's own slowdown/shutdown/max-operating limits: the health thresholds of this SKU. */
  temperatureLimits?: TemperatureLimits;
  powerW?: number;
  powerLimitW?: number;
  ecc?: EccCounts;
  retiredPagesPending?: boolean;
  remappedRows?: RemappedRows;
  clockEventReasons?: ClockEventReasons;
  nvlinks?: NvLinkState[];
  /** NVLink error totals over all links (fields 38/45/52/59). */
  nvlinkErrors?: NvLinkErrors;
  processes?: GpuProcess[];
  /** MPS clients (nvmlDeviceGetMPSComputeRunningProcesses_v3), listed apart from `processes`. */
  mpsProcesses?: GpuProcess[];
  migMode?: { current: boolean; pending: boolean };
  migDevices?: MigDeviceInfo[];
  recoveryAction?: RecoveryAction;
  pcieLink?: PcieLink;
  fabric?: FabricInfo;
  sramEcc?: SramEccStatus;
  unsupported: string[];
  /**
   * Optional fields whose NVML call failed with an error other than NOT_SUPPORTED (an older driver
   * answering field 230 with something odd, a transient driver error): each fails alone, named here
   * with NVML's error, and the rest of the sample stands.
   */
  unavailable?: { field: string; error: string }[];
}

/** The GPU answered NVML_ERROR_GPU_IS_LOST: the health collector turns this into "GPU lost". */
export interface GpuLostSample {
  state: 'lost';
  index: number;
  uuid?: string;
  pciBusId?: string;
  error: string;
}

export type GpuSampleResult = GpuSample | GpuLostSample;

/**
 * A GPU's temperature limits are its SKU's: read once. On a real H200 the four threshold calls took
 * ~0.6 ms, 40% of a whole sample (docs/node-agent.md "Read on a real driver").
 */
const limits = new WeakMap<NvmlDevice, { value: GpuSample['temperatureLimits'] }>();

function temperatureLimitsOf(device: NvmlDevice): GpuSample['temperatureLimits'] {
  let known = limits.get(device);
  if (!known) {
    known = { value: device.temperatureLimits() };
    limits.set(device, known);
  }
  return known.value;
}

/** Identity read at open, so a lost GPU can still be named. */
const identities = new WeakMap<NvmlDevice, { uuid: string; pciBusId: string }>();

function identity(device: NvmlDevice): { uuid: string; pciBusId: string } {
  let known = identities.get(device);
  if (!known) {
    known = { uuid: device.uuid(), pciBusId: device.pci().busId };
    identities.set(device, known);
  }
  return known;
}

/**
 * Samples GPU `index`. Never throws for a lost GPU (returns `{ state: 'lost' }`); other NVML
 * failures (a driver error, a bug) still throw NvmlError.
 */
export function sampleDevice(nvml: Nvml, index: number): GpuSampleResult {
  let device: NvmlDevice | undefined;
  try {
    device = nvml.device(index);
    const { uuid, pciBusId } = identity(device);
    const sample: GpuSample = { state: 'ok', index, uuid, pciBusId, unsupported: [] };
    const d = device;
    const fields: { [K in keyof GpuSample]?: () => GpuSample[K] | undefined } = {
      utilization: () => d.utilization(),
      codecUtilization: () => d.codecUtilization(),
      memory: () => d.memory(),
      temperatureC: () => d.temperatureC(),
      memoryTemperatureC: () => d.memoryTemperatureC(),
      temperatureLimits: () => temperatureLimitsOf(d),
      powerW: () => d.powerW(),
      powerLimitW: () => d.powerLimitW(),
      ecc: () => d.ecc(),
      retiredPagesPending: () => d.retiredPagesPending(),
      remappedRows: () => d.remappedRows(),
      clockEventReasons: () => d.clockEventReasons(),
      nvlinks: () => d.nvlinks(),
      nvlinkErrors: () => d.nvlinkErrors(),
      processes: () => d.processes(),
      mpsProcesses: () => d.mpsProcesses(),
      migMode: () => migMode(nvml, d),
      recoveryAction: () => d.recoveryAction(),
      pcieLink: () => d.pcieLink(),
      fabric: () => d.fabric(),
      sramEcc: () => d.sramEcc(),
    };
    for (const [name, read] of Object.entries(fields) as [keyof GpuSample, () => unknown][]) {
      let value: unknown;
      try {
        value = read();
      } catch (err) {
        // A lost GPU is the whole sample's story; any other NVML error is this field's alone.
        if (!(err instanceof NvmlError) || isGpuLost(err)) throw err;
        (sample.unavailable ??= []).push({ field: name, error: (err as NvmlError).nvmlName });
        continue;
      }
      if (value === undefined) sample.unsupported.push(name);
      else (sample as unknown as Record<string, unknown>)[name] = value;
    }
    if (sample.migMode?.current) sample.migDevices = migDevices(nvml, d);
    return sample;
  } catch (err) {
    if (!isGpuLost(err)) throw err;
    const known = device ? identities.get(device) : undefined;
    return { state: 'lost', index, ...known, error: err.nvmlName };
  }
}
