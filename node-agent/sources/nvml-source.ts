/**
 * The adapter between the NVML binding and the collectors: it samples every GPU and hands the
 * collectors plain `GpuReading`s. The mapping itself (`toReading`) is pure; `NvmlSource` only adds
 * the I/O (which GPUs exist, their names, one sample of each).
 *
 * Failure contract, decided here once:
 *  - a field NVML answers NOT_SUPPORTED for is simply absent from the reading;
 *  - a lost GPU (GPU_IS_LOST) is a reading `{ lost: true }` with the identity known from start,
 *    which the health evaluator turns into a `gpu-lost` event: never a crash;
 *  - any other NvmlError while sampling fails the whole sample (`{ ok: false }`): the driver is
 *    erroring, and the agent reports that as `monitoring-degraded` (HealthEvaluator.sampleFailed),
 *    never as a GPU fault.
 */
import { NvmlError, type Nvml } from '../nvml/nvml.ts';
import { inventory } from '../nvml/inventory.ts';
import { sampleDevice, type GpuSample } from '../nvml/sample.ts';
import type { GpuProcess } from '../nvml/device.ts';
import type { SystemInfo } from '../collectors/inventory.ts';
import type { GpuReading, GpuRef, MigReading } from '../collectors/reading.ts';

/** A sample of a healthy GPU → what the collectors read. Pure. */
export function toReading(sample: GpuSample, name: string): GpuReading {
  const r: GpuReading = { index: sample.index, uuid: sample.uuid, pciBusId: sample.pciBusId, name };
  if (sample.utilization) {
    r.utilPercent = sample.utilization.gpu;
    r.memoryUtilPercent = sample.utilization.memory;
  }
  if (sample.memory) {
    r.memoryUsedMiB = sample.memory.usedMiB;
    r.memoryTotalMiB = sample.memory.totalMiB;
  }
  if (sample.temperatureC !== undefined) r.temperatureC = sample.temperatureC;
  if (sample.memoryTemperatureC !== undefined) r.memoryTemperatureC = sample.memoryTemperatureC;
  if (sample.temperatureLimits) r.temperatureLimits = { ...sample.temperatureLimits };
  if (sample.pcieLink) r.pcieLink = { ...sample.pcieLink };
  if (sample.fabric && sample.fabric.state !== 'not-supported') {
    const { state, status, statusName, degradedBandwidth } = sample.fabric;
    r.fabric = {
      state,
      ...(status === undefined ? {} : { status }),
      ...(statusName ? { statusName } : {}),
      ...(degradedBandwidth === undefined ? {} : { degradedBandwidth }),
    };
  }
  if (sample.nvlinkErrors) r.nvlinkErrors = { ...sample.nvlinkErrors };
  if (sample.sramEcc) r.sramThresholdExceeded = sample.sramEcc.thresholdExceeded;
  if (sample.powerW !== undefined) r.powerW = sample.powerW;
  if (sample.powerLimitW !== undefined) r.powerLimitW = sample.powerLimitW;
  if (sample.ecc?.volatileUncorrected !== undefined) r.eccUncorrectedVolatile = sample.ecc.volatileUncorrected;
  if (sample.retiredPagesPending !== undefined) r.retiredPagesPending = sample.retiredPagesPending;
  if (sample.remappedRows) r.remappedRows = { ...sample.remappedRows };
  if (sample.clockEventReasons) r.throttleReasons = [...sample.clockEventReasons.reasons];
  if (sample.nvlinks) {
    const active: boolean[] = [];
    for (const l of sample.nvlinks) active[l.link] = l.active;
    r.nvlinkActive = Array.from(active, (a) => a ?? false);
  }
  // A code newer than our table has no name: the catalog cannot carry it, so it stays absent.
  if (sample.recoveryAction?.action) r.recoveryAction = sample.recoveryAction.action;
  if (sample.migMode) r.migMode = sample.migMode.current ? 'enabled' : 'disabled';
  if (sample.migDevices) {
    // Profile and placement are required downstream; an unprivileged agent may not read the
    // placement (NO_PERMISSION), and such an instance cannot be described, so it is left out.
    r.migDevices = sample.migDevices.flatMap((m): MigReading[] =>
      m.profile && m.placement
        ? [
            {
              uuid: m.uuid,
              gpuInstanceId: m.gpuInstanceId,
              computeInstanceId: m.computeInstanceId,
              profile: m.profile,
              placement: { ...m.placement },
              ...(m.memoryMiB === undefined ? {} : { memoryTotalMiB: m.memoryMiB }),
              ...(m.memoryUsedMiB === undefined ? {} : { memoryUsedMiB: m.memoryUsedMiB }),
            },
          ]
        : [],
    );
  }
  if (sample.processes) {
    const of = (p: GpuProcess, mps: boolean) => ({
      pid: p.pid,
      ...(p.usedMiB === undefined ? {} : { usedMiB: p.usedMiB }),
      ...(p.gpuInstanceId === undefined ? {} : { gpuInstanceId: p.gpuInstanceId }),
      ...(mps ? { mps: true } : {}),
    });
    // MPS clients are listed apart; the compute listing then holds the MPS server (issue #32).
    r.processes = [
      ...sample.processes.map((p) => of(p, false)),
      ...(sample.mpsProcesses ?? []).map((p) => of(p, true)),
    ];
  }
  if (sample.unavailable?.length) r.unreadable = sample.unavailable.map((u) => u.field);
  return r;
}

export type SampleResult =
  | {
      ok: true;
      readings: GpuReading[];
      /** The raw sample of each GPU that answered (not the lost ones): dcgm.ts exports from these. */
      samples: GpuSample[];
      /** NVML error names of optional fields that failed alone (metrics). */
      fieldErrors?: string[];
    }
  /** `reason` is NVML's name for the error (`NVML_ERROR_UNKNOWN`), or the message. */
  | { ok: false; reason: string; error: unknown };

/**
 * The GPUs as NVML enumerated them at start. GPUs do not appear while a node runs; one that is
 * lost keeps its identity here, so its loss can still be named.
 */
export class NvmlSource {
  readonly system: SystemInfo;
  readonly gpus: readonly GpuRef[];
  /** GPUs lost before the agent could read their identity (cannot be named in events). */
  readonly unnamed: readonly number[];

  constructor(private readonly nvml: Nvml) {
    const inv = inventory(nvml);
    this.system = { driverVersion: inv.driverVersion, nvmlVersion: inv.nvmlVersion, cudaVersion: inv.cudaVersion };
    const gpus: GpuRef[] = [];
    const unnamed: number[] = [];
    for (const g of inv.gpus) {
      if (g.state === 'ok') gpus.push({ index: g.index, uuid: g.uuid, pciBusId: g.pciBusId, name: g.name });
      else unnamed.push(g.index);
    }
    this.gpus = gpus;
    this.unnamed = unnamed;
  }

  byIndex(index: number): GpuRef | undefined {
    return this.gpus.find((g) => g.index === index);
  }

  /** `pciBusId` in NVML's form (kernel-log XIDs are normalised to it); case is ignored. */
  byPciBusId(pciBusId: string): GpuRef | undefined {
    const want = pciBusId.toUpperCase();
    return this.gpus.find((g) => g.pciBusId.toUpperCase() === want);
  }

  /** One sample of every known GPU. Never throws an NvmlError: see the contract above. */
  sample(): SampleResult {
    const readings: GpuReading[] = [];
    const samples: GpuSample[] = [];
    const fieldErrors: string[] = [];
    try {
      for (const gpu of this.gpus) {
        const s = sampleDevice(this.nvml, gpu.index);
        if (s.state === 'ok') {
          fieldErrors.push(...(s.unavailable ?? []).map((u) => u.error));
          samples.push(s);
        }
        readings.push(s.state === 'ok' ? toReading(s, gpu.name) : { ...gpu, lost: true });
      }
    } catch (err) {
      // sampleDevice turns GPU_IS_LOST into a lost sample; what reaches here is anything else.
      if (!(err instanceof NvmlError)) throw err;
      return { ok: false, reason: err.nvmlName, error: err };
    }
    return fieldErrors.length > 0 ? { ok: true, readings, samples, fieldErrors } : { ok: true, readings, samples };
  }

  /** The GPU's recovery action now, or undefined (unsupported, unnamed code, or GPU gone). */
  recoveryAction(index: number): GpuReading['recoveryAction'] {
    try {
      return this.nvml.device(index).recoveryAction()?.action;
    } catch (err) {
      if (err instanceof NvmlError) return undefined;
      throw err;
    }
  }
}
