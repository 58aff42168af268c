/**
 * NVML return codes as typed errors. NvmlError keeps NVML's own name (`NVML_ERROR_GPU_IS_LOST`),
 * its string (from nvmlErrorString) and the numeric code, plus the call that failed, so a log line
 * carries everything a person needs to look it up.
 */

export const NVML_RETURN_NAMES: Readonly<Record<number, string>> = {
  0: 'NVML_SUCCESS',
  1: 'NVML_ERROR_UNINITIALIZED',
  2: 'NVML_ERROR_INVALID_ARGUMENT',
  3: 'NVML_ERROR_NOT_SUPPORTED',
  4: 'NVML_ERROR_NO_PERMISSION',
  5: 'NVML_ERROR_ALREADY_INITIALIZED',
  6: 'NVML_ERROR_NOT_FOUND',
  7: 'NVML_ERROR_INSUFFICIENT_SIZE',
  8: 'NVML_ERROR_INSUFFICIENT_POWER',
  9: 'NVML_ERROR_DRIVER_NOT_LOADED',
  10: 'NVML_ERROR_TIMEOUT',
  11: 'NVML_ERROR_IRQ_ISSUE',
  12: 'NVML_ERROR_LIBRARY_NOT_FOUND',
  13: 'NVML_ERROR_FUNCTION_NOT_FOUND',
  14: 'NVML_ERROR_CORRUPTED_INFOROM',
  15: 'NVML_ERROR_GPU_IS_LOST',
  16: 'NVML_ERROR_RESET_REQUIRED',
  17: 'NVML_ERROR_OPERATING_SYSTEM',
  18: 'NVML_ERROR_LIB_RM_VERSION_MISMATCH',
  19: 'NVML_ERROR_IN_USE',
  20: 'NVML_ERROR_MEMORY',
  21: 'NVML_ERROR_NO_DATA',
  22: 'NVML_ERROR_VGPU_ECC_NOT_SUPPORTED',
  23: 'NVML_ERROR_INSUFFICIENT_RESOURCES',
  24: 'NVML_ERROR_FREQ_NOT_SUPPORTED',
  25: 'NVML_ERROR_ARGUMENT_VERSION_MISMATCH',
  26: 'NVML_ERROR_DEPRECATED',
  27: 'NVML_ERROR_NOT_READY',
  28: 'NVML_ERROR_GPU_NOT_FOUND',
  29: 'NVML_ERROR_INVALID_STATE',
  999: 'NVML_ERROR_UNKNOWN',
};

export const NVML = {
  SUCCESS: 0,
  NOT_SUPPORTED: 3,
  NO_PERMISSION: 4,
  NOT_FOUND: 6,
  INSUFFICIENT_SIZE: 7,
  TIMEOUT: 10,
  GPU_IS_LOST: 15,
  ARGUMENT_VERSION_MISMATCH: 25,
} as const;

export function nvmlReturnName(code: number): string {
  return NVML_RETURN_NAMES[code] ?? `NVML_ERROR_${code}`;
}

export class NvmlError extends Error {
  override name = 'NvmlError';
  /** NVML's own name for the code, e.g. `NVML_ERROR_GPU_IS_LOST`. */
  readonly nvmlName: string;
  constructor(
    /** The NVML function that returned it. */
    readonly call: string,
    readonly code: number,
    /** nvmlErrorString(code). */
    readonly nvmlString: string,
  ) {
    super(`${call}: ${nvmlReturnName(code)} (${nvmlString})`);
    this.nvmlName = nvmlReturnName(code);
  }

  /** The GPU fell off the bus (XID 79 territory): a health event, not a crash. */
  get gpuLost(): boolean {
    return this.code === NVML.GPU_IS_LOST;
  }
}

export function isGpuLost(err: unknown): err is NvmlError {
  return err instanceof NvmlError && err.gpuLost;
}
