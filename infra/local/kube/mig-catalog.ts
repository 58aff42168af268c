/**
 * The simulated GPUs' MIG geometry: per GPU model, the GPU-instance profiles the driver offers and
 * where each may be placed. Written for the simulator from NVIDIA's documentation, not from the
 * MIG planner's table (functions/lib/mig-profiles.ts), so that a wrong fact there is caught here:
 *
 * - NVIDIA Multi-Instance GPU User Guide (docs.nvidia.com/datacenter/tesla/mig-user-guide),
 *   "Supported MIG Profiles": the profile names, instance counts and GI profile IDs per model
 *   (A100 40/80 GB, H100 SXM/PCIe/NVL, H200, B200, A30);
 * - the same guide's `nvidia-smi mig -lgipp` listings, "Placements: {0,1,2,3,4,5,6}:1" and so on:
 *   the allowed start memory slice and the size of each profile (A100/H100 family identical);
 * - names per model as `nvidia-smi mig -lgip` prints them (an H200's 1-slice profile is `1g.18gb`).
 *
 * Facts as of 2026-12-01 (the project's MIG fact sheet, corrections of that date applied). H200
 * and B200 placements are documented as the H100's; A30 IDs are from the guide's A30 listing.
 */
export interface SimMigProfile {
  /** `1g.10gb`, `1g.10gb+me` … as NVML names it. */
  name: string;
  /** The GI profile ID `nvidia-smi mig -lgip` prints. */
  id: number;
  /** Compute slices (the `g` number). */
  compute: number;
  /** Memory slices one instance occupies (the `:size` of -lgipp). */
  size: number;
  /** Allowed starting memory slices (the `{…}` of -lgipp). */
  starts: readonly number[];
  /** "Instances available" on an empty GPU. */
  max: number;
}

export interface SimMigModel {
  name: string;
  /** NVML product names; GPU Feature Discovery's `nvidia.com/gpu.product` is the same with spaces as `-`. */
  products: readonly string[];
  memorySlices: number;
  computeSlices: number;
  profiles: readonly SimMigProfile[];
}

const ALL7 = [0, 1, 2, 3, 4, 5, 6];

/** The A100/H100/H200/B200 placements (-lgipp), one row per kind of profile; names differ by memory. */
function eightSlice(
  n: [one: string, oneDouble: string, two: string, three: string, four: string, seven: string],
): SimMigProfile[] {
  return [
    { name: n[0], id: 19, compute: 1, size: 1, starts: ALL7, max: 7 },
    { name: `${n[0]}+me`, id: 20, compute: 1, size: 1, starts: ALL7, max: 1 },
    { name: n[1], id: 15, compute: 1, size: 2, starts: [0, 2, 4, 6], max: 4 },
    { name: n[2], id: 14, compute: 2, size: 2, starts: [0, 2, 4], max: 3 },
    { name: n[3], id: 9, compute: 3, size: 4, starts: [0, 4], max: 2 },
    { name: n[4], id: 5, compute: 4, size: 4, starts: [0], max: 1 },
    { name: n[5], id: 0, compute: 7, size: 8, starts: [0], max: 1 },
  ];
}

const eight = (name: string, products: string[], names: Parameters<typeof eightSlice>[0]): SimMigModel => ({
  name,
  products,
  memorySlices: 8,
  computeSlices: 7,
  profiles: eightSlice(names),
});

export const SIM_MIG_MODELS: readonly SimMigModel[] = [
  eight(
    'A100-40GB',
    ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-PCIE-40GB'],
    ['1g.5gb', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb'],
  ),
  eight(
    'A100-80GB',
    ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe'],
    ['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'],
  ),
  eight(
    'H100-80GB',
    ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe'],
    ['1g.10gb', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'],
  ),
  eight('H100-NVL', ['NVIDIA H100 NVL'], ['1g.12gb', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb', '7g.94gb']),
  eight(
    'H200-141GB',
    ['NVIDIA H200', 'NVIDIA H200 NVL'],
    ['1g.18gb', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb'],
  ),
  eight('B200', ['NVIDIA B200'], ['1g.23gb', '1g.45gb', '2g.45gb', '3g.90gb', '4g.90gb', '7g.180gb']),
  {
    name: 'A30-24GB',
    products: ['NVIDIA A30'],
    memorySlices: 4,
    computeSlices: 4,
    profiles: [
      { name: '1g.6gb', id: 14, compute: 1, size: 1, starts: [0, 1, 2, 3], max: 4 },
      { name: '1g.6gb+me', id: 21, compute: 1, size: 1, starts: [0, 1, 2, 3], max: 1 },
      { name: '2g.12gb', id: 5, compute: 2, size: 2, starts: [0, 2], max: 2 },
      { name: '2g.12gb+me', id: 6, compute: 2, size: 2, starts: [0, 2], max: 1 },
      { name: '4g.24gb', id: 0, compute: 4, size: 4, starts: [0], max: 1 },
    ],
  },
];

/**
 * GPU Feature Discovery's product label is the NVML name with spaces as `-`, plus `-MIG-<profile>` under the single
 * strategy.
 */
const byLabel = new Map<string, SimMigModel>();
for (const m of SIM_MIG_MODELS) for (const p of m.products) byLabel.set(p.replaceAll(' ', '-'), m);

/** The model of a node's `nvidia.com/gpu.product` label, or undefined for one that is not MIG-capable here. */
export function simMigModel(productLabel: string): SimMigModel | undefined {
  return byLabel.get(productLabel.replace(/-MIG-.*$/, '').replace(/-SHARED$/, ''));
}

/**
 * The device plugin's resource for a profile under the `mixed` strategy: `nvidia.com/mig-<name>`
 * with `+` spelled `.` (NVIDIA/k8s-device-plugin, resource naming of MIG devices: `1g.10gb+me`
 * is served as `nvidia.com/mig-1g.10gb.me`).
 */
export function deviceResourceName(profile: string): string {
  return `nvidia.com/mig-${profile.replaceAll('+', '.')}`;
}
