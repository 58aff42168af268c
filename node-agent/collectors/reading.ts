/**
 * What one sample of one GPU looks like to the collectors: plain data, every NVML field optional
 * because NOT_SUPPORTED omits it. The NVML wrapper fills it; tests write it by hand.
 */
import type { GpuRecoveryAction } from '../../events/xid.ts';

export interface MigReading {
  uuid?: string;
  gpuInstanceId: number;
  computeInstanceId: number;
  profile: string;
  placement: { start: number; size: number };
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
}

export interface ProcessReading {
  pid: number;
  usedMiB?: number;
  gpuInstanceId?: number;
  /** An MPS client (NVML's MPS listing), not a process with its own compute context. */
  mps?: boolean;
}

export interface GpuReading {
  index: number;
  uuid: string;
  pciBusId: string;
  name: string;
  /** True when NVML answered GPU_IS_LOST: nothing else is known. */
  lost?: boolean;
  utilPercent?: number;
  memoryUtilPercent?: number;
  memoryUsedMiB?: number;
  memoryTotalMiB?: number;
  temperatureC?: number;
  /** HBM temperature, °C. */
  memoryTemperatureC?: number;
  /** This GPU's own limits (°C): the temperature thresholds follow them unless configured. */
  temperatureLimits?: { shutdownC?: number; slowdownC?: number; gpuMaxC?: number; memMaxC?: number };
  powerW?: number;
  powerLimitW?: number;
  eccUncorrectedVolatile?: number;
  retiredPagesPending?: boolean;
  remappedRows?: { correctable: number; uncorrectable: number; pending: boolean; failure: boolean };
  /** Clock-event (throttle) reasons by name, e.g. `hw-slowdown`, `sw-thermal-slowdown`. */
  throttleReasons?: string[];
  /** Per NVLink index: true when active. */
  nvlinkActive?: boolean[];
  /** NVLink error totals, all links summed: CRC flit/data errors, replays, link recoveries. */
  nvlinkErrors?: { crcFlit: number; crcData: number; replay: number; recovery: number };
  recoveryAction?: GpuRecoveryAction;
  /** PCIe link generation and width now, and the most the link can do. */
  pcieLink?: { gen: number; maxGen: number; width: number; maxWidth: number };
  /** NVLink fabric probe (HGX): absent where the GPU has no fabric (state not-supported). */
  fabric?: {
    state: 'not-started' | 'in-progress' | 'completed';
    status?: number;
    statusName?: string;
    degradedBandwidth?: boolean;
  };
  /** The SRAM uncorrectable-error threshold (NVIDIA's RMA test for XID 48) is exceeded. */
  sramThresholdExceeded?: boolean;
  /** Absent when unknown: NOT_SUPPORTED is `unsupported`, a read that failed is listed in `unreadable`. */
  migMode?: 'enabled' | 'disabled' | 'unsupported';
  migDevices?: MigReading[];
  processes?: ProcessReading[];
  /**
   * Fields whose NVML call failed this sample with an error other than NOT_SUPPORTED (the sample's
   * `unavailable`): unknown, where an absent field alone would read as "not supported".
   */
  unreadable?: string[];
}

export interface GpuRef {
  index: number;
  uuid: string;
  pciBusId: string;
  name: string;
}

export const refOf = (r: GpuReading): GpuRef => ({ index: r.index, uuid: r.uuid, pciBusId: r.pciBusId, name: r.name });
