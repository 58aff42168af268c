/**
 * The DCGM field tables (dcgm.ts renders them on `/metrics`): per entity (GPU, MIG GPU instance), each
 * sample field under dcgm-exporter's name, type and help (etc/default-counters.csv). A new field in
 * GpuSample is one new line here; a value NVML did not supply reads undefined and is left out.
 */
import type { MigDeviceInfo } from './nvml/mig.ts';
import type { GpuSample } from './nvml/sample.ts';

export interface DcgmField<T> {
  /** dcgm-exporter's metric name (the DCGM field name). */
  name: string;
  type: 'gauge' | 'counter';
  /** dcgm-exporter's help text: it states the unit. */
  help: string;
  /** The value in DCGM's unit, or undefined when NVML did not supply it (the series is absent). */
  read: (x: T) => number | boolean | undefined;
}

/** Per GPU. Units as DCGM's: %, MiB, °C, W; counts as NVML counts them. */
export const DCGM_GPU_FIELDS: readonly DcgmField<GpuSample>[] = [
  { name: 'DCGM_FI_DEV_GPU_UTIL', type: 'gauge', help: 'GPU utilization (in %).', read: (s) => s.utilization?.gpu },
  {
    name: 'DCGM_FI_DEV_MEM_COPY_UTIL',
    type: 'gauge',
    help: 'Memory utilization (in %).',
    read: (s) => s.utilization?.memory,
  },
  {
    name: 'DCGM_FI_DEV_ENC_UTIL',
    type: 'gauge',
    help: 'Encoder utilization (in %).',
    read: (s) => s.codecUtilization?.encoder,
  },
  {
    name: 'DCGM_FI_DEV_DEC_UTIL',
    type: 'gauge',
    help: 'Decoder utilization (in %).',
    read: (s) => s.codecUtilization?.decoder,
  },
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    read: (s) => s.memory?.usedMiB,
  },
  {
    name: 'DCGM_FI_DEV_FB_FREE',
    type: 'gauge',
    help: 'Framebuffer memory free (in MiB).',
    read: (s) => s.memory?.freeMiB,
  },
  // Not in dcgm-exporter's default counters (a DCGM field all the same, 250): exported because the
  // field notes' alert divides FB_USED by it, and NVML gives the total with used and free.
  {
    name: 'DCGM_FI_DEV_FB_TOTAL',
    type: 'gauge',
    help: 'Framebuffer memory total (in MiB).',
    read: (s) => s.memory?.totalMiB,
  },
  { name: 'DCGM_FI_DEV_GPU_TEMP', type: 'gauge', help: 'GPU temperature (in C).', read: (s) => s.temperatureC },
  {
    name: 'DCGM_FI_DEV_MEMORY_TEMP',
    type: 'gauge',
    help: 'Memory temperature (in C).',
    read: (s) => s.memoryTemperatureC,
  },
  { name: 'DCGM_FI_DEV_POWER_USAGE', type: 'gauge', help: 'Power draw (in W).', read: (s) => s.powerW },
  // nvmlDeviceGetEnforcedPowerLimit is DCGM field 164, not POWER_MGMT_LIMIT (160, the configured one).
  {
    name: 'DCGM_FI_DEV_ENFORCED_POWER_LIMIT',
    type: 'gauge',
    help: 'Effective power limit the driver enforces (in W).',
    read: (s) => s.powerLimitW,
  },
  {
    name: 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
    type: 'counter',
    help: 'Total number of single-bit volatile ECC errors.',
    read: (s) => s.ecc?.volatileCorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
    type: 'counter',
    help: 'Total number of double-bit volatile ECC errors.',
    read: (s) => s.ecc?.volatileUncorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_SBE_AGG_TOTAL',
    type: 'counter',
    help: 'Total number of single-bit persistent ECC errors.',
    read: (s) => s.ecc?.aggregateCorrected,
  },
  {
    name: 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
    type: 'counter',
    help: 'Total number of double-bit persistent ECC errors.',
    read: (s) => s.ecc?.aggregateUncorrected,
  },
  {
    name: 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for uncorrectable errors',
    read: (s) => s.remappedRows?.uncorrectable,
  },
  {
    name: 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
    type: 'counter',
    help: 'Number of remapped rows for correctable errors',
    read: (s) => s.remappedRows?.correctable,
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_FAILURE',
    type: 'gauge',
    help: 'Whether remapping of rows has failed',
    read: (s) => s.remappedRows?.failure,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink flow-control CRC errors.',
    read: (s) => s.nvlinkErrors?.crcFlit,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink data CRC errors.',
    read: (s) => s.nvlinkErrors?.crcData,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink retries.',
    read: (s) => s.nvlinkErrors?.replay,
  },
  {
    name: 'DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL',
    type: 'counter',
    help: 'Total number of NVLink recovery errors.',
    read: (s) => s.nvlinkErrors?.recovery,
  },
  {
    name: 'DCGM_FI_DEV_ROW_REMAP_PENDING',
    type: 'gauge',
    help: 'Whether remapping of rows is pending',
    read: (s) => s.remappedRows?.pending,
  },
];

/**
 * Per MIG GPU instance (labels GPU_I_PROFILE, GPU_I_ID): framebuffer is the one per-instance
 * reading NVML gives; utilization, temperature and power stay per GPU, as in DCGM.
 */
export const DCGM_MIG_FIELDS: readonly DcgmField<MigDeviceInfo>[] = [
  {
    name: 'DCGM_FI_DEV_FB_USED',
    type: 'gauge',
    help: 'Framebuffer memory used (in MiB).',
    read: (m) => m.memoryUsedMiB,
  },
  { name: 'DCGM_FI_DEV_FB_TOTAL', type: 'gauge', help: 'Framebuffer memory total (in MiB).', read: (m) => m.memoryMiB },
];

/** Not from the sample: the last XID code the agent published for the GPU (DCGM: the code, a gauge). */
export const DCGM_XID_ERRORS: Omit<DcgmField<never>, 'read'> = {
  name: 'DCGM_FI_DEV_XID_ERRORS',
  type: 'gauge',
  help: 'Value of the last XID error encountered.',
};
