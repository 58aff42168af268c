import { NvmlDevice } from './device.ts';
import { NvmlError, NVML } from './errors.ts';
import { NvmlEventWatcher, type NvmlEventWatcherOptions } from './events.ts';
import { loadNvml, type NvmlLibrary } from './ffi.ts';

export { NvmlError, isGpuLost, nvmlReturnName } from './errors.ts';
export { NvmlNotFoundError } from './ffi.ts';

/**
 * A session with NVML: `Nvml.open()` loads the library and calls nvmlInit_v2; `close()` calls
 * nvmlShutdown. Per-GPU queries live on `NvmlDevice` (device.ts). Every NVML failure becomes an
 * NvmlError; NOT_SUPPORTED on an optional field becomes `undefined` at the device layer.
 *
 * Event waiting (`events()`) runs nvmlEventSetWait_v2 on libuv's thread pool. Raise
 * `UV_THREADPOOL_SIZE` (8 or more) in the agent's environment: the default 4 threads are shared
 * with file and DNS work, and a blocked wait starves them (docs/node-agent.md).
 */
export class Nvml {
  private open_ = true;
  private readonly handles = new Map<number, NvmlDevice>();

  private constructor(readonly lib: NvmlLibrary) {}

  /** Throws NvmlNotFoundError when the library is missing, NvmlError when nvmlInit fails. */
  static open(options: { libraryPath?: string } = {}): Nvml {
    const lib = loadNvml(options.libraryPath);
    const nvml = new Nvml(lib);
    nvml.check('nvmlInit_v2', lib.nvmlInit_v2());
    return nvml;
  }

  /** Idempotent. Close event watchers first (`await watcher.close()`): a wait may be in flight. */
  close(): void {
    if (!this.open_) return;
    this.open_ = false;
    this.handles.clear();
    this.lib.nvmlShutdown();
  }

  /** Throws NvmlError for any code but SUCCESS. */
  check(call: string, rc: number): void {
    if (rc !== NVML.SUCCESS) throw new NvmlError(call, rc, this.lib.nvmlErrorString(rc));
  }

  private text(call: string, read: (buf: Buffer, len: number) => number, size = 96): string {
    const buf = Buffer.alloc(size);
    this.check(call, read(buf, size));
    const end = buf.indexOf(0);
    return buf.toString('utf8', 0, end < 0 ? size : end);
  }

  driverVersion(): string {
    return this.text('nvmlSystemGetDriverVersion', (b, n) => this.lib.nvmlSystemGetDriverVersion(b, n), 80);
  }

  nvmlVersion(): string {
    return this.text('nvmlSystemGetNVMLVersion', (b, n) => this.lib.nvmlSystemGetNVMLVersion(b, n), 80);
  }

  /** "12.4" from NVML's 12040. */
  cudaVersion(): string {
    const out: [number] = [0];
    this.check('nvmlSystemGetCudaDriverVersion_v2', this.lib.nvmlSystemGetCudaDriverVersion_v2(out));
    return `${Math.floor(out[0] / 1000)}.${Math.floor((out[0] % 1000) / 10)}`;
  }

  deviceCount(): number {
    const out: [number] = [0];
    this.check('nvmlDeviceGetCount_v2', this.lib.nvmlDeviceGetCount_v2(out));
    return out[0];
  }

  /**
   * The GPU at `index`. Its handle is fetched once and kept, so a GPU that is lost later still
   * answers (with GPU_IS_LOST) instead of vanishing; one lost before the first call throws
   * NvmlError(GPU_IS_LOST) here.
   */
  device(index: number): NvmlDevice {
    const known = this.handles.get(index);
    if (known) return known;
    const out: [bigint] = [0n];
    this.check('nvmlDeviceGetHandleByIndex_v2', this.lib.nvmlDeviceGetHandleByIndex_v2(index, out));
    const device = new NvmlDevice(this, index, BigInt(out[0]));
    this.handles.set(index, device);
    return device;
  }

  /** Every GPU NVML enumerates, in NVML index order; throws NvmlError(GPU_IS_LOST) if one is gone. */
  devices(): NvmlDevice[] {
    return Array.from({ length: this.deviceCount() }, (_, i) => this.device(i));
  }

  /** Watches the given event types (XID critical errors by default) on every GPU that supports them. */
  events(mask?: bigint, options?: NvmlEventWatcherOptions): NvmlEventWatcher {
    return new NvmlEventWatcher(this, mask, options);
  }
}
