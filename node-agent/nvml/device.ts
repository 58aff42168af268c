import { GPU_RECOVERY_ACTIONS, type GpuRecoveryAction } from '../../events/xid.ts';
import { NVML, NvmlError, nvmlReturnName as nvmlName } from './errors.ts';
import { decodeArray, decodeStruct, encodeStruct, type Handle, type NvmlLibrary, type Out } from './ffi.ts';
import { EccSramErrorStatusV1, FieldValue, GpuFabricInfoV3, ProcessInfo, structVersion } from './structs.ts';
import { clockEventReasonNames } from './clock-reasons.ts';
import type { Nvml } from './nvml.ts';

const MIB = 1024 * 1024;
/** gpuInstanceId / computeInstanceId when an event or process is not tied to a MIG instance. */
export const NO_INSTANCE = 0xffffffff;
/** NVML_VALUE_NOT_AVAILABLE for process memory (unsigned long long -1). */
const VALUE_NOT_AVAILABLE = 0xffffffffffffffffn;
/** NVML_NVLINK_MAX_LINKS (Hopper: 18). */
const MAX_NVLINKS = 18;
/** NVML_FI_DEV_GET_GPU_RECOVERY_ACTION. */
export const FIELD_GPU_RECOVERY_ACTION = 230;
/** NVML_FI_DEV_MEMORY_TEMP: HBM temperature, °C (unsigned int). */
export const FIELD_MEMORY_TEMP = 82;
/** NVML_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL: every link's counters summed, per GPU. */
const NVLINK_ERROR_FIELDS = { crcFlit: 38, crcData: 45, replay: 52, recovery: 59 } as const;
/** nvmlTemperatureThresholds_t values the agent reads. */
const THRESHOLD = { shutdown: 0, slowdown: 1, memMax: 2, gpuMax: 3 } as const;
/** NVML_GPU_FABRIC_STATE_*, by value. */
const FABRIC_STATES = ['not-supported', 'not-started', 'in-progress', 'completed'] as const;

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
export interface EccCounts {
  volatileCorrected: number;
  volatileUncorrected: number;
  aggregateCorrected: number;
  aggregateUncorrected: number;
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

export function toNumber(v: number | bigint): number {
  return typeof v === 'bigint' ? Number(v) : v;
}

/**
 * One GPU (or MIG device) handle. Optional telemetry returns `undefined` when NVML answers
 * NOT_SUPPORTED, so one missing counter never fails a whole sample; any other failure (GPU_IS_LOST
 * above all) throws NvmlError for the caller to classify.
 */
export class NvmlDevice {
  constructor(
    protected readonly nvml: Nvml,
    readonly index: number,
    readonly handle: bigint,
  ) {}

  /** A MIG device handle under this GPU (same session, same index as its parent). */
  child(handle: bigint): NvmlDevice {
    return new NvmlDevice(this.nvml, this.index, handle);
  }

  protected get lib(): NvmlLibrary {
    return this.nvml.lib;
  }

  /** true on SUCCESS, false on NOT_SUPPORTED, throws NvmlError otherwise. */
  protected supported(call: string, rc: number): boolean {
    if (rc === NVML.NOT_SUPPORTED) return false;
    this.nvml.check(call, rc);
    return true;
  }

  protected text(call: string, read: (buf: Buffer, len: number) => number): string {
    const buf = Buffer.alloc(96); // NVML_DEVICE_UUID_V2_BUFFER_SIZE / NAME_V2: 96
    this.nvml.check(call, read(buf, buf.length));
    const end = buf.indexOf(0);
    return buf.toString('utf8', 0, end < 0 ? buf.length : end);
  }

  name(): string {
    return this.text('nvmlDeviceGetName', (b, n) => this.lib.nvmlDeviceGetName(this.handle, b, n));
  }

  uuid(): string {
    return this.text('nvmlDeviceGetUUID', (b, n) => this.lib.nvmlDeviceGetUUID(this.handle, b, n));
  }

  pci(): PciInfo {
    const out = {} as {
      busId: string;
      busIdLegacy: string;
      domain: number;
      bus: number;
      device: number;
      pciDeviceId: number;
      pciSubSystemId: number;
    };
    this.nvml.check('nvmlDeviceGetPciInfo_v3', this.lib.nvmlDeviceGetPciInfo_v3(this.handle, out));
    return { ...out };
  }

  /**
   * NVML drain state (`nvidia-smi drain -p <pci> -q`): whether the GPU refuses new work; undefined
   * where the driver does not offer it. Addressed by PCI bus id, as the call is.
   */
  drainState(): boolean | undefined {
    const q = this.lib.nvmlDeviceQueryDrainState;
    if (!q) return undefined;
    const out: [number] = [0];
    if (!this.supported('nvmlDeviceQueryDrainState', q(this.pci(), out))) return undefined;
    return out[0] === 1;
  }

  /** Turns the drain state on or off (admin; the GPU must be idle to turn it on); throws NvmlError. */
  setDrainState(on: boolean): void {
    const m = this.lib.nvmlDeviceModifyDrainState;
    if (!m) throw new NvmlError('nvmlDeviceModifyDrainState', NVML.NOT_SUPPORTED, 'not in this NVML library');
    this.nvml.check('nvmlDeviceModifyDrainState', m(this.pci(), on ? 1 : 0));
  }

  memory(): MemoryInfo | undefined {
    const out = { total: 0, free: 0, used: 0 } as Record<'total' | 'free' | 'used', number | bigint>;
    if (!this.supported('nvmlDeviceGetMemoryInfo', this.lib.nvmlDeviceGetMemoryInfo(this.handle, out)))
      return undefined;
    return {
      totalMiB: Math.floor(toNumber(out.total) / MIB),
      usedMiB: Math.floor(toNumber(out.used) / MIB),
      freeMiB: Math.floor(toNumber(out.free) / MIB),
    };
  }

  utilization(): { gpu: number; memory: number } | undefined {
    const out = { gpu: 0, memory: 0 };
    return this.supported('nvmlDeviceGetUtilizationRates', this.lib.nvmlDeviceGetUtilizationRates(this.handle, out))
      ? { ...out }
      : undefined;
  }

  temperatureC(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetTemperature', this.lib.nvmlDeviceGetTemperature(this.handle, 0, out))
      ? out[0]
      : undefined;
  }

  /** Watts (NVML reports milliwatts). */
  powerW(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetPowerUsage', this.lib.nvmlDeviceGetPowerUsage(this.handle, out))
      ? out[0] / 1000
      : undefined;
  }

  powerLimitW(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetEnforcedPowerLimit', this.lib.nvmlDeviceGetEnforcedPowerLimit(this.handle, out))
      ? out[0] / 1000
      : undefined;
  }

  ecc(): EccCounts | undefined {
    const read = (errorType: 0 | 1, counterType: 0 | 1): number | undefined => {
      const out: [number | bigint] = [0];
      return this.supported(
        'nvmlDeviceGetTotalEccErrors',
        this.lib.nvmlDeviceGetTotalEccErrors(this.handle, errorType, counterType, out),
      )
        ? toNumber(out[0])
        : undefined;
    };
    const volatileCorrected = read(0, 0);
    if (volatileCorrected === undefined) return undefined;
    return {
      volatileCorrected,
      volatileUncorrected: read(1, 0) ?? 0,
      aggregateCorrected: read(0, 1) ?? 0,
      aggregateUncorrected: read(1, 1) ?? 0,
    };
  }

  retiredPagesPending(): boolean | undefined {
    const out: [number] = [0];
    return this.supported(
      'nvmlDeviceGetRetiredPagesPendingStatus',
      this.lib.nvmlDeviceGetRetiredPagesPendingStatus(this.handle, out),
    )
      ? out[0] !== 0
      : undefined;
  }

  remappedRows(): RemappedRows | undefined {
    const c: [number] = [0],
      u: [number] = [0],
      p: [number] = [0],
      f: [number] = [0];
    if (!this.supported('nvmlDeviceGetRemappedRows', this.lib.nvmlDeviceGetRemappedRows(this.handle, c, u, p, f)))
      return undefined;
    return { correctable: c[0], uncorrectable: u[0], pending: p[0] !== 0, failure: f[0] !== 0 };
  }

  clockEventReasons(): ClockEventReasons | undefined {
    const out: [number | bigint] = [0];
    if (!this.supported('nvmlDeviceGetCurrentClocksEventReasons', this.lib.clocksEventReasons(this.handle, out)))
      return undefined;
    const mask = toNumber(out[0]);
    return { mask, reasons: clockEventReasonNames(mask) };
  }

  /** One entry per link until NVML says the link index is out of range. */
  nvlinks(): NvLinkState[] | undefined {
    const links: NvLinkState[] = [];
    for (let link = 0; link < MAX_NVLINKS; link++) {
      const out: [number] = [0];
      const rc = this.lib.nvmlDeviceGetNvLinkState(this.handle, link, out);
      if (rc === NVML.NOT_SUPPORTED && link === 0) return undefined;
      if (rc === NVML.NOT_SUPPORTED || rc === 2 /* INVALID_ARGUMENT: no such link */) break;
      this.nvml.check('nvmlDeviceGetNvLinkState', rc);
      links.push({ link, active: out[0] !== 0 });
    }
    return links;
  }

  /** Compute processes; asks for the count first, then retries if more appeared meanwhile. */
  processes(): GpuProcess[] | undefined {
    const call = this.lib.nvmlDeviceGetComputeRunningProcesses_v3.bind(this.lib);
    return this.listProcesses('nvmlDeviceGetComputeRunningProcesses_v3', call);
  }

  /**
   * MPS clients (issue #32): NVML lists them apart from the compute processes, where only the MPS
   * server shows (reference sharing.md §2). Undefined: the library lacks the call, or NOT_SUPPORTED.
   */
  mpsProcesses(): GpuProcess[] | undefined {
    const call = this.lib.nvmlDeviceGetMPSComputeRunningProcesses_v3;
    if (!call) return undefined;
    return this.listProcesses('nvmlDeviceGetMPSComputeRunningProcesses_v3', call);
  }

  private listProcesses(
    name: string,
    call: (device: Handle, count: Out<number>, infos: Buffer | null) => number,
  ): GpuProcess[] | undefined {
    for (let attempt = 0; attempt < 3; attempt++) {
      const count: [number] = [0];
      const first = call(this.handle, count, null);
      if (first === NVML.NOT_SUPPORTED) return undefined;
      if (first === NVML.SUCCESS) return [];
      if (first !== NVML.INSUFFICIENT_SIZE) this.nvml.check(name, first);
      const capacity = count[0] + 4;
      const buf = Buffer.alloc(capacity * ProcessInfo.size);
      const n: [number] = [capacity];
      const rc = call(this.handle, n, buf);
      if (rc === NVML.INSUFFICIENT_SIZE) continue;
      this.nvml.check(name, rc);
      type Raw = { pid: number; usedGpuMemory: number | bigint; gpuInstanceId: number; computeInstanceId: number };
      return decodeArray<Raw>(buf, ProcessInfo, n[0]).map((p) => {
        const used = BigInt(p.usedGpuMemory);
        return {
          pid: p.pid,
          ...(used === VALUE_NOT_AVAILABLE ? {} : { usedMiB: Math.floor(Number(used) / MIB) }),
          ...(p.gpuInstanceId === NO_INSTANCE ? {} : { gpuInstanceId: p.gpuInstanceId }),
          ...(p.computeInstanceId === NO_INSTANCE ? {} : { computeInstanceId: p.computeInstanceId }),
        };
      });
    }
    this.nvml.check(name, NVML.INSUFFICIENT_SIZE);
    return undefined;
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
