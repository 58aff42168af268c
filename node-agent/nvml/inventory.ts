import { gpuInstanceProfiles, migDevices, migMode, type GpuInstanceProfile, type MigDeviceInfo } from './mig.ts';
import { isGpuLost } from './errors.ts';
import type { Nvml } from './nvml.ts';

/** What does not change while the node runs: versions and, per GPU, identity and MIG geometry. */
export interface NvmlInventory {
  driverVersion: string;
  nvmlVersion: string;
  cudaVersion: string;
  gpus: GpuInventory[];
}

export type GpuInventory =
  | {
      state: 'ok';
      index: number;
      name: string;
      uuid: string;
      pciBusId: string;
      /** (device id << 16) | vendor id, e.g. 0x20B210DE for an A100-SXM4-80GB. */
      pciDeviceId: number;
      memoryTotalMiB?: number;
      /** Omitted on GPUs without MIG. */
      migMode?: { current: boolean; pending: boolean };
      migDevices: MigDeviceInfo[];
      /** The GI profiles this GPU offers, with every placement NVML allows; [] without MIG. */
      migProfiles: GpuInstanceProfile[];
    }
  | { state: 'lost'; index: number; error: string };

export function inventory(nvml: Nvml): NvmlInventory {
  const gpus: GpuInventory[] = [];
  for (let index = 0; index < nvml.deviceCount(); index++) {
    try {
      const d = nvml.device(index);
      const pci = d.pci();
      const mode = migMode(nvml, d);
      const memoryTotalMiB = d.memory()?.totalMiB;
      gpus.push({
        state: 'ok',
        index,
        name: d.name(),
        uuid: d.uuid(),
        pciBusId: pci.busId,
        pciDeviceId: pci.pciDeviceId,
        ...(memoryTotalMiB === undefined ? {} : { memoryTotalMiB }),
        ...(mode ? { migMode: mode } : {}),
        migDevices: mode?.current ? migDevices(nvml, d) : [],
        migProfiles: mode ? gpuInstanceProfiles(nvml, d) : [],
      });
    } catch (err) {
      if (!isGpuLost(err)) throw err;
      gpus.push({ state: 'lost', index, error: err.nvmlName });
    }
  }
  return {
    driverVersion: nvml.driverVersion(),
    nvmlVersion: nvml.nvmlVersion(),
    cudaVersion: nvml.cudaVersion(),
    gpus,
  };
}
