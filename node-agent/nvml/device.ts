import { GPU_RECOVERY_ACTIONS, type GpuRecoveryAction } from '../../events/xid.ts';
import { NVML, NvmlError } from './errors.ts';
import { decodeArray, decodeStruct, encodeStruct, FieldValue, ProcessInfo, type NvmlLibrary } from './ffi.ts';
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

export interface PciInfo { busId: string; busIdLegacy: string; domain: number; bus: number; device: number; pciDeviceId: number; pciSubSystemId: number }
export interface MemoryInfo { totalMiB: number; usedMiB: number; freeMiB: number }
export interface EccCounts { volatileCorrected: number; volatileUncorrected: number; aggregateCorrected: number; aggregateUncorrected: number }
export interface RemappedRows { correctable: number; uncorrectable: number; pending: boolean; failure: boolean }
export interface ClockEventReasons { mask: number; reasons: string[] }
export interface NvLinkState { link: number; active: boolean }
export interface GpuProcess { pid: number; usedMiB?: number; gpuInstanceId?: number; computeInstanceId?: number }
export interface RecoveryAction { code: number; action?: GpuRecoveryAction }

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
    const out = {} as { busId: string; busIdLegacy: string; domain: number; bus: number; device: number; pciDeviceId: number; pciSubSystemId: number };
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
    if (!this.supported('nvmlDeviceGetMemoryInfo', this.lib.nvmlDeviceGetMemoryInfo(this.handle, out))) return undefined;
    return { totalMiB: Math.floor(toNumber(out.total) / MIB), usedMiB: Math.floor(toNumber(out.used) / MIB), freeMiB: Math.floor(toNumber(out.free) / MIB) };
  }

  utilization(): { gpu: number; memory: number } | undefined {
    const out = { gpu: 0, memory: 0 };
    return this.supported('nvmlDeviceGetUtilizationRates', this.lib.nvmlDeviceGetUtilizationRates(this.handle, out)) ? { ...out } : undefined;
  }

  temperatureC(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetTemperature', this.lib.nvmlDeviceGetTemperature(this.handle, 0, out)) ? out[0] : undefined;
  }

  /** Watts (NVML reports milliwatts). */
  powerW(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetPowerUsage', this.lib.nvmlDeviceGetPowerUsage(this.handle, out)) ? out[0] / 1000 : undefined;
  }

  powerLimitW(): number | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetEnforcedPowerLimit', this.lib.nvmlDeviceGetEnforcedPowerLimit(this.handle, out)) ? out[0] / 1000 : undefined;
  }

  ecc(): EccCounts | undefined {
    const read = (errorType: 0 | 1, counterType: 0 | 1): number | undefined => {
      const out: [number | bigint] = [0];
      return this.supported('nvmlDeviceGetTotalEccErrors', this.lib.nvmlDeviceGetTotalEccErrors(this.handle, errorType, counterType, out)) ? toNumber(out[0]) : undefined;
    };
    const volatileCorrected = read(0, 0);
    if (volatileCorrected === undefined) return undefined;
    return { volatileCorrected, volatileUncorrected: read(1, 0) ?? 0, aggregateCorrected: read(0, 1) ?? 0, aggregateUncorrected: read(1, 1) ?? 0 };
  }

  retiredPagesPending(): boolean | undefined {
    const out: [number] = [0];
    return this.supported('nvmlDeviceGetRetiredPagesPendingStatus', this.lib.nvmlDeviceGetRetiredPagesPendingStatus(this.handle, out)) ? out[0] !== 0 : undefined;
  }

  remappedRows(): RemappedRows | undefined {
    const c: [number] = [0], u: [number] = [0], p: [number] = [0], f: [number] = [0];
    if (!this.supported('nvmlDeviceGetRemappedRows', this.lib.nvmlDeviceGetRemappedRows(this.handle, c, u, p, f))) return undefined;
    return { correctable: c[0], uncorrectable: u[0], pending: p[0] !== 0, failure: f[0] !== 0 };
  }

  clockEventReasons(): ClockEventReasons | undefined {
    const out: [number | bigint] = [0];
    if (!this.supported('nvmlDeviceGetCurrentClocksEventReasons', this.lib.clocksEventReasons(this.handle, out))) return undefined;
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
    for (let attempt = 0; attempt < 3; attempt++) {
      const count: [number] = [0];
      const first = this.lib.nvmlDeviceGetComputeRunningProcesses_v3(this.handle, count, null);
      if (first === NVML.NOT_SUPPORTED) return undefined;
      if (first === NVML.SUCCESS) return [];
      if (first !== NVML.INSUFFICIENT_SIZE) this.nvml.check('nvmlDeviceGetComputeRunningProcesses_v3', first);
      const capacity = count[0] + 4;
      const buf = Buffer.alloc(capacity * ProcessInfo.size);
      const n: [number] = [capacity];
      const rc = this.lib.nvmlDeviceGetComputeRunningProcesses_v3(this.handle, n, buf);
      if (rc === NVML.INSUFFICIENT_SIZE) continue;
      this.nvml.check('nvmlDeviceGetComputeRunningProcesses_v3', rc);
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
    this.nvml.check('nvmlDeviceGetComputeRunningProcesses_v3', NVML.INSUFFICIENT_SIZE);
    return undefined;
  }

  /** Field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), named from events/xid.ts. */
  recoveryAction(): RecoveryAction | undefined {
    const buf = Buffer.alloc(FieldValue.size);
    encodeStruct(buf, 0, FieldValue, { fieldId: FIELD_GPU_RECOVERY_ACTION, scopeId: 0, timestamp: 0, latencyUsec: 0, valueType: 0, nvmlReturn: 0, value: 0 });
    if (!this.supported('nvmlDeviceGetFieldValues', this.lib.nvmlDeviceGetFieldValues(this.handle, 1, buf))) return undefined;
    const field = decodeStruct<{ nvmlReturn: number; value: number | bigint }>(buf, FieldValue);
    if (!this.supported('nvmlDeviceGetFieldValues(230)', field.nvmlReturn)) return undefined;
    const code = Number(BigInt(field.value) & 0xffffffffn); // uiVal: the union's low 4 bytes
    const action = GPU_RECOVERY_ACTIONS[code];
    return action ? { code, action } : { code };
  }

  supportedEventTypes(): bigint | undefined {
    const out: [number | bigint] = [0];
    return this.supported('nvmlDeviceGetSupportedEventTypes', this.lib.nvmlDeviceGetSupportedEventTypes(this.handle, out)) ? BigInt(out[0]) : undefined;
  }
}
