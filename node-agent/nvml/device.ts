import { GPU_RECOVERY_ACTIONS } from '../../events/xid.ts';
import { NVML, nvmlReturnName as nvmlName } from './errors.ts';
import { decodeArray, decodeStruct, encodeStruct, type NvmlLibrary, type Out } from './ffi.ts';
import { EccSramErrorStatusV1, FieldValue, GpuFabricInfoV3, structVersion } from './structs.ts';
import { NvmlDeviceBase, toNumber } from './device-base.ts';
import {
  FABRIC_STATES,
  type FabricInfo,
  type NvLinkErrors,
  type PcieLink,
  type RecoveryAction,
  type SramEccStatus,
  type TemperatureLimits,
} from './device-types.ts';

export type * from './device-types.ts';
export { NO_INSTANCE, toNumber } from './device-base.ts';

/** NVML_FI_DEV_GET_GPU_RECOVERY_ACTION. */
export const FIELD_GPU_RECOVERY_ACTION = 230;
/** NVML_FI_DEV_MEMORY_TEMP: HBM temperature, °C (unsigned int). */
export const FIELD_MEMORY_TEMP = 82;
/** NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL: every link's counters summed, per GPU. */
const NVLINK_ERROR_FIELDS = { crcFlit: 38, crcData: 45, replay: 52, recovery: 59 } as const;
/** nvmlTemperatureThresholds_t values the agent reads. */
const THRESHOLD = { shutdown: 0, slowdown: 1, memMax: 2, gpuMax: 3 } as const;

/**
 * One GPU (or MIG device) handle: the basic telemetry of NvmlDeviceBase (device-base.ts), and here
 * NVML's field values, recovery action, NVLink error counters, codec use, temperature limits, PCIe
 * link, fabric, SRAM ECC and supported events.
 */
export class NvmlDevice extends NvmlDeviceBase {
  /** A MIG device handle under this GPU (same session, same index as its parent). */
  child(handle: bigint): NvmlDevice {
    return new NvmlDevice(this.nvml, this.index, handle);
  }

  /**
   * One field of nvmlDeviceGetFieldValues as an unsigned number (the union's low 4 bytes for
   * unsigned int fields, all 8 for unsigned long long), or undefined when NOT_SUPPORTED for the call
   * or for the field. Any other per-field error throws, for sampleDevice to record against this field alone.
   */
  fieldValue(fieldId: number, scopeId = 0): number | undefined {
    const buf = Buffer.alloc(FieldValue.size);
    encodeStruct(buf, 0, FieldValue, {
      fieldId,
      scopeId,
      timestamp: 0,
      latencyUsec: 0,
      valueType: 0,
      nvmlReturn: 0,
      value: 0,
    });
    if (!this.supported('nvmlDeviceGetFieldValues', this.lib.nvmlDeviceGetFieldValues(this.handle, 1, buf)))
      return undefined;
    const field = decodeStruct<{ nvmlReturn: number; valueType: number; value: number | bigint }>(buf, FieldValue);
    if (!this.supported(`nvmlDeviceGetFieldValues(${fieldId})`, field.nvmlReturn)) return undefined;
    const raw = BigInt(field.value);
    // NVML_VALUE_TYPE_UNSIGNED_INT (1) and SIGNED_INT (5) use 4 bytes; the long types all 8.
    return Number(field.valueType === 1 || field.valueType === 5 ? raw & 0xffffffffn : raw);
  }

  /** Field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), named from events/xid.ts. */
  recoveryAction(): RecoveryAction | undefined {
    const code = this.fieldValue(FIELD_GPU_RECOVERY_ACTION);
    if (code === undefined) return undefined;
    const action = GPU_RECOVERY_ACTIONS[code];
    return action ? { code, action } : { code };
  }

  /**
   * NVLink error totals (fields 38, 45, 52, 59) in one call; undefined when the GPU has no NVLink
   * (the real H200 in a one-GPU VM answered NOT_SUPPORTED for each). A counter the driver lacks
   * while others answer counts as absent, not as the sample's failure.
   */
  nvlinkErrors(): NvLinkErrors | undefined {
    const names = Object.keys(NVLINK_ERROR_FIELDS) as (keyof NvLinkErrors)[];
    const buf = Buffer.alloc(names.length * FieldValue.size);
    names.forEach((n, i) =>
      encodeStruct(buf, i * FieldValue.size, FieldValue, {
        fieldId: NVLINK_ERROR_FIELDS[n],
        scopeId: 0,
        timestamp: 0,
        latencyUsec: 0,
        valueType: 0,
        nvmlReturn: 0,
        value: 0,
      }),
    );
    if (!this.supported('nvmlDeviceGetFieldValues', this.lib.nvmlDeviceGetFieldValues(this.handle, names.length, buf)))
      return undefined;
    const out: Partial<NvLinkErrors> = {};
    names.forEach((n, i) => {
      const f = decodeArray<{ nvmlReturn: number; value: number | bigint }>(
        buf.subarray(i * FieldValue.size),
        FieldValue,
        1,
      )[0]!;
      if (f.nvmlReturn === NVML.SUCCESS) out[n] = Number(BigInt(f.value));
    });
    return names.every((n) => out[n] !== undefined) ? (out as NvLinkErrors) : undefined;
  }

  /** Video encoder and decoder utilization (%), where the GPU has them (an H100/H200 has NVDECs, no NVENC). */
  codecUtilization(): { encoder?: number; decoder?: number } | undefined {
    const read = (call: string, fn: NvmlLibrary['nvmlDeviceGetDecoderUtilization']): number | undefined => {
      if (!fn) return undefined;
      const util: [number] = [0];
      const period: [number] = [0];
      return this.supported(call, fn(this.handle, util, period)) ? util[0] : undefined;
    };
    const encoder = read('nvmlDeviceGetEncoderUtilization', this.lib.nvmlDeviceGetEncoderUtilization);
    const decoder = read('nvmlDeviceGetDecoderUtilization', this.lib.nvmlDeviceGetDecoderUtilization);
    if (encoder === undefined && decoder === undefined) return undefined;
    return { ...(encoder === undefined ? {} : { encoder }), ...(decoder === undefined ? {} : { decoder }) };
  }

  /** HBM temperature (field 82), °C. */
  memoryTemperatureC(): number | undefined {
    return this.fieldValue(FIELD_MEMORY_TEMP);
  }

  /** A call that may be missing from an older library: undefined when missing or NOT_SUPPORTED. */
  private optionalU32(
    call: string,
    fn: ((device: bigint, out: Out<number>) => number) | undefined,
  ): number | undefined {
    if (!fn) return undefined;
    const out: [number] = [0];
    return this.supported(call, fn(this.handle, out)) ? out[0] : undefined;
  }

  /**
   * The GPU's own limits: slowdown and shutdown (every recent GPU), max operating GPU and memory (Ada, Hopper and
   * later).
   */
  temperatureLimits(): TemperatureLimits | undefined {
    const read = this.lib.nvmlDeviceGetTemperatureThreshold;
    if (!read) return undefined;
    const out: TemperatureLimits = {};
    for (const [name, type] of Object.entries(THRESHOLD)) {
      const v = this.optionalU32('nvmlDeviceGetTemperatureThreshold', (h, o) => read(h, type, o));
      // 0 is what some drivers leave for a limit they do not have.
      if (v) out[`${name}C` as keyof TemperatureLimits] = v;
    }
    return Object.keys(out).length ? out : undefined;
  }

  pcieLink(): PcieLink | undefined {
    const gen = this.optionalU32('nvmlDeviceGetCurrPcieLinkGeneration', this.lib.nvmlDeviceGetCurrPcieLinkGeneration);
    const maxGen = this.optionalU32('nvmlDeviceGetMaxPcieLinkGeneration', this.lib.nvmlDeviceGetMaxPcieLinkGeneration);
    const width = this.optionalU32('nvmlDeviceGetCurrPcieLinkWidth', this.lib.nvmlDeviceGetCurrPcieLinkWidth);
    const maxWidth = this.optionalU32('nvmlDeviceGetMaxPcieLinkWidth', this.lib.nvmlDeviceGetMaxPcieLinkWidth);
    if (gen === undefined || maxGen === undefined || width === undefined || maxWidth === undefined) return undefined;
    return { gen, maxGen, width, maxWidth };
  }

  /** Fabric probe (nvmlDeviceGetGpuFabricInfoV, v3; v2 on drivers that refuse v3's size). */
  fabric(): FabricInfo | undefined {
    const read = this.lib.nvmlDeviceGetGpuFabricInfoV;
    if (!read) return undefined;
    const buf = Buffer.alloc(GpuFabricInfoV3.size);
    buf.writeUInt32LE(structVersion(GpuFabricInfoV3.size, 3), 0);
    let rc = read(this.handle, buf);
    if (rc === NVML.ARGUMENT_VERSION_MISMATCH) {
      buf.fill(0);
      buf.writeUInt32LE(structVersion(36, 2), 0);
      rc = read(this.handle, buf);
    }
    if (!this.supported('nvmlDeviceGetGpuFabricInfoV', rc)) return undefined;
    const info = decodeStruct<{ status: number; cliqueId: number; state: number; healthMask: number }>(
      buf,
      GpuFabricInfoV3,
    );
    const state = FABRIC_STATES[info.state];
    if (!state || state === 'not-supported') return state ? { state } : undefined;
    if (state !== 'completed') return { state };
    // Bits 0–1 of the health mask: 1 bandwidth degraded, 2 not degraded, 0 not reported.
    const bw = info.healthMask & 0x3;
    return {
      state,
      status: info.status,
      statusName: nvmlName(info.status),
      cliqueId: info.cliqueId,
      ...(bw === 1 ? { degradedBandwidth: true } : bw === 2 ? { degradedBandwidth: false } : {}),
    };
  }

  sramEcc(): SramEccStatus | undefined {
    const read = this.lib.nvmlDeviceGetSramEccErrorStatus;
    if (!read) return undefined;
    const buf = Buffer.alloc(EccSramErrorStatusV1.size);
    buf.writeUInt32LE(structVersion(EccSramErrorStatusV1.size, 1), 0);
    if (!this.supported('nvmlDeviceGetSramEccErrorStatus', read(this.handle, buf))) return undefined;
    const s = decodeStruct<Record<string, number | bigint>>(buf, EccSramErrorStatusV1);
    const n = (k: string) => toNumber(s[k] ?? 0);
    return {
      thresholdExceeded: n('bThresholdExceeded') !== 0,
      aggregateUncorrected: n('aggregateUncParity') + n('aggregateUncSecDed'),
      volatileUncorrected: n('volatileUncParity') + n('volatileUncSecDed'),
    };
  }

  supportedEventTypes(): bigint | undefined {
    const out: [number | bigint] = [0];
    return this.supported(
      'nvmlDeviceGetSupportedEventTypes',
      this.lib.nvmlDeviceGetSupportedEventTypes(this.handle, out),
    )
      ? BigInt(out[0])
      : undefined;
  }
}
