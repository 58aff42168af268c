import { NVML } from './errors.ts';
import { decodeArray, decodeStruct } from './ffi.ts';
import { GpuInstanceProfileInfoV2, Placement, structVersion } from './structs.ts';
import type { NvmlDevice } from './device.ts';
import type { Nvml } from './nvml.ts';

/**
 * MIG through NVML: the mode, the MIG devices that exist (with their GPU/compute instance ids,
 * profile and placement) and the GPU-instance profiles the GPU offers with every placement NVML
 * allows. The planner prefers these reported tables over any built-in one (docs/mig.md).
 */

export interface MigPlacement {
  start: number;
  size: number;
}

export interface MigDeviceInfo {
  /** Index under the parent GPU (nvmlDeviceGetMigDeviceHandleByIndex). */
  index: number;
  uuid: string;
  /** Profile name from the device name, e.g. `1g.10gb` from "NVIDIA H100 80GB HBM3 MIG 1g.10gb". */
  profile?: string;
  gpuInstanceId: number;
  computeInstanceId: number;
  /** GPU-instance profile ID (19 for 1g, 9 for 3g, ...); needs nvmlDeviceGetGpuInstanceById (privileged). */
  giProfileId?: number;
  placement?: MigPlacement;
  memoryMiB?: number;
  /** Framebuffer in use on this instance: with MIG on it is the only per-instance load NVML gives. */
  memoryUsedMiB?: number;
}

export interface GpuInstanceProfile {
  /** The NVML_GPU_INSTANCE_PROFILE_* index it was read with. */
  profileIndex: number;
  /** The profile ID NVML uses everywhere else (placements, GI info). */
  id: number;
  /**
   * NVML's own name where the driver gives one (…ProfileInfoV, "MIG 1g.18gb" → `1g.18gb`), else NVIDIA's rule
   * (migProfileName).
   */
  name: string;
  sliceCount: number;
  instanceCount: number;
  multiprocessorCount: number;
  memoryMiB: number;
  placements: MigPlacement[];
}

/** Current NVML headers define profile indexes 0..16 (NVML_GPU_INSTANCE_PROFILE_COUNT = 17). */
const PROFILE_INDEX_COUNT = 17;

/**
 * The suffix NVIDIA's names give a profile index: 7–8 (`*_SLICE_REV1`) carry the media engines
 * (`+me`), 0xA–0xC are the graphics variants (`+gfx`), 0xD–0xE have no media engine (`-me`),
 * 0xF–0x10 take all of them (`+me.all`). Without these the variants' names collide with the base
 * profiles'.
 */
export function migProfileSuffix(profileIndex: number): string {
  if (profileIndex === 7 || profileIndex === 8) return '+me';
  if (profileIndex >= 0xa && profileIndex <= 0xc) return '+gfx';
  if (profileIndex === 0xd || profileIndex === 0xe) return '-me';
  if (profileIndex === 0xf || profileIndex === 0x10) return '+me.all';
  return '';
}

/**
 * A GPU-instance profile's name as NVIDIA writes it: `<slices>g.<GB>gb<suffix>`, the GB being the
 * profile's share of the GPU's memory rounded up to the nearest eighth, times the GPU's memory in
 * whole GB — not `ceil(MiB / 1024)`, which calls an H200's 16.00 GiB slice `1g.16gb` where NVIDIA
 * (nvidia-smi, the device plugin's resource names) says `1g.18gb`.
 */
export function migProfileName(
  sliceCount: number,
  memoryMiB: number,
  gpuMemoryMiB: number,
  profileIndex: number,
): string {
  const share = Math.ceil((memoryMiB / gpuMemoryMiB) * 8) / 8;
  const gpuGb = Math.ceil(gpuMemoryMiB / 1024);
  return `${sliceCount}g.${Math.round(share * gpuGb)}gb${migProfileSuffix(profileIndex)}`;
}
const INVALID_STATE = 29;

export function migMode(nvml: Nvml, device: NvmlDevice): { current: boolean; pending: boolean } | undefined {
  const current: [number] = [0],
    pending: [number] = [0];
  const rc = nvml.lib.nvmlDeviceGetMigMode(device.handle, current, pending);
  if (rc === NVML.NOT_SUPPORTED) return undefined;
  nvml.check('nvmlDeviceGetMigMode', rc);
  return { current: current[0] === 1, pending: pending[0] === 1 };
}

function placementOf(
  nvml: Nvml,
  parent: NvmlDevice,
  giId: number,
): { giProfileId: number; placement: MigPlacement } | undefined {
  const gi: [bigint] = [0n];
  const rc = nvml.lib.nvmlDeviceGetGpuInstanceById(parent.handle, giId, gi);
  // Unprivileged agents get NO_PERMISSION here; the placement is then simply unknown.
  if (rc === NVML.NOT_SUPPORTED || rc === NVML.NO_PERMISSION || rc === NVML.NOT_FOUND) return undefined;
  nvml.check('nvmlDeviceGetGpuInstanceById', rc);
  const info = {} as { profileId: number; placement: MigPlacement };
  nvml.check('nvmlGpuInstanceGetInfo', nvml.lib.nvmlGpuInstanceGetInfo(BigInt(gi[0]), info));
  return { giProfileId: info.profileId, placement: { start: info.placement.start, size: info.placement.size } };
}

/** The MIG devices under a GPU; empty when MIG is off or unsupported. */
export function migDevices(nvml: Nvml, parent: NvmlDevice): MigDeviceInfo[] {
  const max: [number] = [0];
  const rc = nvml.lib.nvmlDeviceGetMaxMigDeviceCount(parent.handle, max);
  if (rc === NVML.NOT_SUPPORTED) return [];
  nvml.check('nvmlDeviceGetMaxMigDeviceCount', rc);
  const out: MigDeviceInfo[] = [];
  for (let index = 0; index < max[0]; index++) {
    const handle: [bigint] = [0n];
    const hrc = nvml.lib.nvmlDeviceGetMigDeviceHandleByIndex(parent.handle, index, handle);
    if (hrc === NVML.NOT_FOUND) continue; // slots are sparse: a destroyed instance leaves a gap
    nvml.check('nvmlDeviceGetMigDeviceHandleByIndex', hrc);
    const mig = parent.child(BigInt(handle[0]));
    const gi: [number] = [0],
      ci: [number] = [0];
    nvml.check('nvmlDeviceGetGpuInstanceId', nvml.lib.nvmlDeviceGetGpuInstanceId(mig.handle, gi));
    nvml.check('nvmlDeviceGetComputeInstanceId', nvml.lib.nvmlDeviceGetComputeInstanceId(mig.handle, ci));
    const profile = / MIG (\S+)$/.exec(mig.name())?.[1];
    const memory = mig.memory();
    out.push({
      index,
      uuid: mig.uuid(),
      ...(profile ? { profile } : {}),
      gpuInstanceId: gi[0],
      computeInstanceId: ci[0],
      ...placementOf(nvml, parent, gi[0]),
      ...(memory === undefined ? {} : { memoryMiB: memory.totalMiB, memoryUsedMiB: memory.usedMiB }),
    });
  }
  return out;
}

function placementsFor(nvml: Nvml, device: NvmlDevice, profileId: number): MigPlacement[] {
  const count: [number] = [0];
  const rc = nvml.lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(device.handle, profileId, null, count);
  if (rc === NVML.NOT_SUPPORTED || rc === INVALID_STATE || rc === NVML.NO_PERMISSION) return [];
  nvml.check('nvmlDeviceGetGpuInstancePossiblePlacements_v2', rc);
  const buf = Buffer.alloc(Math.max(1, count[0]) * Placement.size);
  nvml.check(
    'nvmlDeviceGetGpuInstancePossiblePlacements_v2',
    nvml.lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(device.handle, profileId, buf, count),
  );
  return decodeArray<MigPlacement>(buf, Placement, count[0]).map((p) => ({ start: p.start, size: p.size }));
}

type ProfileInfo = {
  id: number;
  sliceCount: number;
  instanceCount: number;
  multiprocessorCount: number;
  memorySizeMB: number | bigint;
  name?: string;
};

/**
 * One profile: the versioned call first (it carries NVML's own name), the v1 call where the driver
 * lacks it or does not name this profile. `undefined` when the GPU lacks the profile; `null` when no
 * table can be read (MIG refused: INVALID_STATE or NO_PERMISSION).
 */
function profileInfo(nvml: Nvml, device: NvmlDevice, profileIndex: number): ProfileInfo | undefined | null {
  const readV = nvml.lib.nvmlDeviceGetGpuInstanceProfileInfoV;
  if (readV) {
    const buf = Buffer.alloc(GpuInstanceProfileInfoV2.size);
    buf.writeUInt32LE(structVersion(GpuInstanceProfileInfoV2.size, 2), 0);
    if (readV(device.handle, profileIndex, buf) === NVML.SUCCESS) {
      const info = decodeStruct<ProfileInfo & { name: string }>(buf, GpuInstanceProfileInfoV2);
      const name = info.name.replace(/^MIG /, '').trim();
      return { ...info, ...(name ? { name } : {}) };
    }
  }
  const info = {} as ProfileInfo;
  const rc = nvml.lib.nvmlDeviceGetGpuInstanceProfileInfo(device.handle, profileIndex, info);
  // NOT_SUPPORTED: this GPU lacks the profile; INVALID_ARGUMENT: an older driver's shorter list.
  if (rc === NVML.NOT_SUPPORTED || rc === 2) return undefined;
  // Some drivers answer INVALID_STATE while MIG is disabled, or NO_PERMISSION: no table then.
  if (rc === INVALID_STATE || rc === NVML.NO_PERMISSION) return null;
  nvml.check('nvmlDeviceGetGpuInstanceProfileInfo', rc);
  return info;
}

/** Every GPU-instance profile the GPU supports, with its possible placements; [] without MIG. */
export function gpuInstanceProfiles(nvml: Nvml, device: NvmlDevice): GpuInstanceProfile[] {
  const out: GpuInstanceProfile[] = [];
  const gpuMemoryMiB = device.memory()?.totalMiB;
  for (let profileIndex = 0; profileIndex < PROFILE_INDEX_COUNT; profileIndex++) {
    const info = profileInfo(nvml, device, profileIndex);
    if (info === null) return [];
    if (info === undefined) continue;
    const memoryMiB = Number(info.memorySizeMB);
    out.push({
      profileIndex,
      id: info.id,
      name:
        info.name ??
        (gpuMemoryMiB
          ? migProfileName(info.sliceCount, memoryMiB, gpuMemoryMiB, profileIndex)
          : `${info.sliceCount}g.${Math.ceil(memoryMiB / 1024)}gb${migProfileSuffix(profileIndex)}`),
      sliceCount: info.sliceCount,
      instanceCount: info.instanceCount,
      multiprocessorCount: info.multiprocessorCount,
      memoryMiB,
      placements: placementsFor(nvml, device, info.id),
    });
  }
  return out;
}
