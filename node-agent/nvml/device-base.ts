/**
 * One GPU (or MIG device) handle's basic telemetry (device.ts's NvmlDevice extends it): identity, PCI,
 * drain state, memory, utilization, temperature, power, ECC, retired pages and remapped rows, clock
 * event reasons, NVLink state, and the processes on it.
 */
import { NVML, NvmlError } from './errors.ts';
import { decodeArray, type Handle, type NvmlLibrary, type Out } from './ffi.ts';
import { ProcessInfo } from './structs.ts';
import { clockEventReasonNames } from './clock-reasons.ts';
import type { Nvml } from './nvml.ts';
import type {
  ClockEventReasons,
  EccCounts,
  GpuProcess,
  MemoryInfo,
  NvLinkState,
  PciInfo,
  RemappedRows,
} from './device-types.ts';

const MIB = 1024 * 1024;
/** gpuInstanceId / computeInstanceId when an event or process is not tied to a MIG instance. */
export const NO_INSTANCE = 0xffffffff;
/** NVML_VALUE_NOT_AVAILABLE for process memory (unsigned long long -1). */
const VALUE_NOT_AVAILABLE = 0xffffffffffffffffn;
/** NVML_NVLINK_MAX_LINKS (Hopper: 18). */
const MAX_NVLINKS = 18;

export function toNumber(v: number | bigint): number {
  return typeof v === 'bigint' ? Number(v) : v;
}

/**
 * One GPU (or MIG device) handle. Optional telemetry returns `undefined` when NVML answers
 * NOT_SUPPORTED, so one missing counter never fails a whole sample; any other failure (GPU_IS_LOST
 * above all) throws NvmlError for the caller to classify.
 */
export class NvmlDeviceBase {
  constructor(
    protected readonly nvml: Nvml,
    readonly index: number,
    readonly handle: bigint,
  ) {}

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
    // ECC off or absent: the first counter already answers NOT_SUPPORTED, and there is nothing to read.
    const volatileCorrected = read(0, 0);
    if (volatileCorrected === undefined) return undefined;
    // A counter the driver does not answer while the first does is unknown, left out, not 0.
    const out: EccCounts = { volatileCorrected };
    const volatileUncorrected = read(1, 0);
    const aggregateCorrected = read(0, 1);
    const aggregateUncorrected = read(1, 1);
    if (volatileUncorrected !== undefined) out.volatileUncorrected = volatileUncorrected;
    if (aggregateCorrected !== undefined) out.aggregateCorrected = aggregateCorrected;
    if (aggregateUncorrected !== undefined) out.aggregateUncorrected = aggregateUncorrected;
    return out;
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
}
