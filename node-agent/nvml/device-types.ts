/**
 * What an NVML device answers, as the agent reads it (device.ts, device-base.ts): plain values, each
 * optional reading absent where NVML does not report it.
 */

import type { GpuRecoveryAction } from '../../events/xid.ts';

/** NVML_GPU_FABRIC_STATE_*, by value. */
export const FABRIC_STATES = ['not-supported', 'not-started', 'in-progress', 'completed'] as const;

export interface PciInfo {
  busId: string;
  busIdLegacy: string;
  domain: number;
  bus: number;
  device: number;
  pciDeviceId: number;
  pciSubSystemId: number;
}
export interface MemoryInfo {
  totalMiB: number;
  usedMiB: number;
  freeMiB: number;
}
/**
 * The counters NVML answered; one it answers NOT_SUPPORTED for is absent, never 0 (a 0 here would
 * read as "no uncorrected error" and clear ecc-uncorrected, or show a clean DBE counter on /metrics).
 */
export interface EccCounts {
  volatileCorrected: number;
  volatileUncorrected?: number;
  aggregateCorrected?: number;
  aggregateUncorrected?: number;
}
export interface RemappedRows {
  correctable: number;
  uncorrectable: number;
  pending: boolean;
  failure: boolean;
}
export interface ClockEventReasons {
  mask: number;
  reasons: string[];
}
export interface NvLinkState {
  link: number;
  active: boolean;
}
export interface GpuProcess {
  pid: number;
  usedMiB?: number;
  gpuInstanceId?: number;
  computeInstanceId?: number;
}
export interface RecoveryAction {
  code: number;
  action?: GpuRecoveryAction;
}
/** The GPU's own temperature limits (°C); each absent where NVML does not report it. */
export interface TemperatureLimits {
  shutdownC?: number;
  slowdownC?: number;
  gpuMaxC?: number;
  memMaxC?: number;
}
/** PCIe link now and the most the link (GPU and slot together) can do. */
export interface PcieLink {
  gen: number;
  maxGen: number;
  width: number;
  maxWidth: number;
}
export type FabricState = (typeof FABRIC_STATES)[number];
/**
 * NVLink fabric registration (HGX/NVSwitch systems): `state` of the GPU's probe, and once
 * `completed`, its `status` (an NVML return code: 0 is success). `degradedBandwidth` from the health
 * mask where the driver reports it.
 */
export interface FabricInfo {
  state: FabricState;
  status?: number;
  statusName?: string;
  cliqueId?: number;
  degradedBandwidth?: boolean;
}
/** NVLink error counters, all links summed (CRC flit and data errors, replays, link recoveries). */
export interface NvLinkErrors {
  crcFlit: number;
  crcData: number;
  replay: number;
  recovery: number;
}
/** SRAM uncorrectable errors (aggregate) and whether NVIDIA's field-diag threshold is exceeded (XID 48's RMA test). */
export interface SramEccStatus {
  thresholdExceeded: boolean;
  aggregateUncorrected: number;
  volatileUncorrected: number;
}
