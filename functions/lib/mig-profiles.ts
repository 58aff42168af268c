/**
 * The built-in MIG profile catalog: per GPU model, the GPU-instance profiles with their geometry
 * (compute slices, memory slices, allowed starts, per-GPU maximum). Facts: docs/mig.md. What the
 * node agent reads from NVML (`GpuInstanceProfile`: name, slices, memory, placements) wins over
 * this table wherever both exist (`fromReported`). Pure data.
 *
 * Names are NVIDIA's (`nvidia-smi mig -lgip`, the device plugin's `nvidia.com/mig-<name>`), never
 * `ceil(MiB / 1024)`: an H200's 16 GiB slice is `1g.18gb`.
 */

export interface MigProfile {
  /** `1g.10gb`, `1g.10gb+me`, `1g.20gb` … */
  name: string;
  /** NVML GPU-instance profile ID, where the facts give it (undefined: not recorded for the model). */
  giProfileId?: number;
  /** Compute slices (the `g` number). */
  slices: number;
  /** Memory slices the instance occupies (its placement size). */
  size: number;
  /** Allowed placement starts, in memory slices. */
  starts: readonly number[];
  /** At most this many per GPU. */
  max: number;
  /** `+me`: the instance that holds the media engines (at most one per GPU). */
  mediaExtensions: boolean;
}

export interface MigModel {
  /** The short name the CLI and the docs use: `A100-80GB`. */
  name: string;
  /** NVML product names (and so, spaces → `-`, GPU Feature Discovery's `nvidia.com/gpu.product`). */
  products: readonly string[];
  memorySlices: number;
  computeSlices: number;
  profiles: readonly MigProfile[];
  /** The table was not seen on hardware (docs/mig.md *expected*): the agent's report should confirm it. */
  expected?: boolean;
}

/**
 * The 8-slice family (A100, H100, H200, B200 …): one geometry, names per model's memory, given as
 * `1g 1g-double 2g 3g 4g 7g` (e.g. `1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb`).
 */
function eightSlice(names: string): Pick<MigModel, 'memorySlices' | 'computeSlices' | 'profiles'> {
  const [one, oneDouble, two, three, four, seven] = names.split(' ') as [
    string,
    string,
    string,
    string,
    string,
    string,
  ];
  const all = [0, 1, 2, 3, 4, 5, 6];
  const row = (name: string, giProfileId: number, slices: number, size: number, starts: number[], max: number) => ({
    name,
    giProfileId,
    slices,
    size,
    starts,
    max,
    mediaExtensions: name.endsWith('+me'),
  });
  return {
    memorySlices: 8,
    computeSlices: 7,
    profiles: [
      row(one, 19, 1, 1, all, 7),
      row(`${one}+me`, 20, 1, 1, all, 1),
      row(oneDouble, 15, 1, 2, [0, 2, 4, 6], 4),
      row(two, 14, 2, 2, [0, 2, 4], 3),
      row(three, 9, 3, 4, [0, 4], 2),
      row(four, 5, 4, 4, [0], 1),
      row(seven, 0, 7, 8, [0], 1),
    ],
  };
}

export const MIG_MODELS: readonly MigModel[] = [
  {
    name: 'A100-40GB',
    products: ['NVIDIA A100-SXM4-40GB', 'NVIDIA A100-PCIE-40GB'],
    ...eightSlice('1g.5gb 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb'),
  },
  {
    name: 'A100-80GB',
    products: ['NVIDIA A100-SXM4-80GB', 'NVIDIA A100 80GB PCIe'],
    ...eightSlice('1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb'),
  },
  {
    name: 'H100-80GB',
    products: ['NVIDIA H100 80GB HBM3', 'NVIDIA H100 PCIe'],
    ...eightSlice('1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb'),
  },
  {
    name: 'H100-NVL',
    // H800 NVL: the same names (NVIDIA AI Enterprise Hopper vGPU types, H800 PCIe 94GB; GPU Operator
    // default config "H100 NVL, H800 NVL").
    products: ['NVIDIA H100 NVL', 'NVIDIA H800 NVL'],
    ...eightSlice('1g.12gb 1g.24gb 2g.24gb 3g.47gb 4g.47gb 7g.94gb'),
  },
  {
    name: 'H200-141GB',
    products: ['NVIDIA H200', 'NVIDIA H200 NVL'],
    ...eightSlice('1g.18gb 1g.35gb 2g.35gb 3g.71gb 4g.71gb 7g.141gb'),
    expected: true,
  },
  {
    name: 'B200',
    products: ['NVIDIA B200'],
    ...eightSlice('1g.23gb 1g.45gb 2g.45gb 3g.90gb 4g.90gb 7g.180gb'),
    expected: true,
  },
  // The GPUs sold for ACK fleets (issue #30). Each is the 8-slice family above; the names are
  // NVIDIA's, cited per model. Until a node's agent confirms them they are `expected`.
  {
    // A800 = A100 names and geometry: GPU Operator default-mig-parted-config
    // (NVIDIA/gpu-operator assets/state-mig-manager/0400_configmap.yaml: "A100-40GB, A800-40GB").
    name: 'A800-40GB',
    products: ['NVIDIA A800-SXM4-40GB', 'NVIDIA A800-PCIE-40GB', 'NVIDIA A800 40GB PCIe'],
    ...eightSlice('1g.5gb 1g.10gb 2g.10gb 3g.20gb 4g.20gb 7g.40gb'),
    expected: true,
  },
  {
    // Same source ("H100-80GB, H800-80GB, A100-80GB, A800-80GB" share 1g.10gb … 7g.80gb).
    name: 'A800-80GB',
    products: ['NVIDIA A800-SXM4-80GB', 'NVIDIA A800 80GB PCIe', 'NVIDIA A800-PCIE-80GB'],
    ...eightSlice('1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb'),
    expected: true,
  },
  {
    // NVIDIA AI Enterprise "Hopper Architecture vGPU Types" (docs.nvidia.com/ai-enterprise/…/vgpu):
    // H800 SXM5 80GB and H800 PCIe 80GB list MIG 1g.10gb(+me), 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb
    // with the H100's instance counts; the GPU Operator's default config groups H800-80GB with H100-80GB.
    name: 'H800-80GB',
    products: ['NVIDIA H800', 'NVIDIA H800 PCIe', 'NVIDIA H800 80GB HBM3'],
    ...eightSlice('1g.10gb 1g.20gb 2g.20gb 3g.40gb 4g.40gb 7g.80gb'),
    expected: true,
  },
  {
    // NVIDIA MIG user guide "Supported GPUs" (H20: Hopper, 96GB, 7 instances); its GPU-instance profiles
    // from NVIDIA AI Enterprise "Hopper Architecture vGPU Types", H20 SXM5 96GB: MIG 1g.12gb ×7,
    // 1g.12gb+me ×1, 1g.24gb ×4, 2g.24gb ×3, 3g.48gb ×2, 4g.48gb ×1, 7g.96gb ×1 (the H100 96GB table of
    // "Supported MIG Profiles"); GPU Operator default config: "H100-96GB, PG506-96GB, GH200, H20" (0x2329).
    // A 141 GB H20 exists with the H200's names: its agent's table decides (fromReported).
    name: 'H20-96GB',
    products: ['NVIDIA H20'],
    ...eightSlice('1g.12gb 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb'),
    expected: true,
  },
  {
    // NVIDIA MIG user guide "Supported MIG Profiles", table "H100 96GB product (H100 on GH200)":
    // 1g.12gb ×7, 1g.12gb+me ×1, 1g.24gb ×4, 2g.24gb ×3, 3g.48gb ×2, 4g.48gb ×1, 7g.96gb ×1.
    name: 'GH200-96GB',
    products: ['NVIDIA GH200 480GB', 'NVIDIA GH200 96GB HBM3'],
    ...eightSlice('1g.12gb 1g.24gb 2g.24gb 3g.48gb 4g.48gb 7g.96gb'),
  },
  {
    // GPU Operator default-mig-parted-config, "GH200 144G HBM3e" (device 0x2348): 1g.18gb ×7, 1g.18gb+me ×1,
    // 1g.36gb ×4, 2g.36gb ×3, 3g.72gb ×2, 4g.72gb ×1, 7g.144gb ×1 (gpu-operator release notes: GH200 NVL2
    // 144GB HBM3e profiles added).
    name: 'GH200-144GB',
    products: ['NVIDIA GH200 144G HBM3e'],
    ...eightSlice('1g.18gb 1g.36gb 2g.36gb 3g.72gb 4g.72gb 7g.144gb'),
    expected: true,
  },
  {
    // NVIDIA MIG user guide "Supported GPUs" (GB200: Blackwell, 186GB, 7 instances); profiles from the GPU
    // Operator default config ("GB200, B200" 1g.23gb ×7 and 1g.23gb+me; all-1g.47gb ×4, all-2g.47gb ×3,
    // 3g.93gb ×2, 4g.93gb ×1, 7g.186gb; "GB200 HGX" 0x2941) and NVIDIA/go-nvml's GB200 mock (placements as B200).
    name: 'GB200',
    products: ['NVIDIA GB200'],
    ...eightSlice('1g.23gb 1g.47gb 2g.47gb 3g.93gb 4g.93gb 7g.186gb'),
    expected: true,
  },
  {
    // 4 slices; profile IDs not recorded here (the agent reports them).
    name: 'A30-24GB',
    products: ['NVIDIA A30'],
    memorySlices: 4,
    computeSlices: 4,
    profiles: [
      { name: '1g.6gb', slices: 1, size: 1, starts: [0, 1, 2, 3], max: 4, mediaExtensions: false },
      { name: '1g.6gb+me', slices: 1, size: 1, starts: [0, 1, 2, 3], max: 1, mediaExtensions: true },
      { name: '2g.12gb', slices: 2, size: 2, starts: [0, 2], max: 2, mediaExtensions: false },
      { name: '2g.12gb+me', slices: 2, size: 2, starts: [0, 2], max: 1, mediaExtensions: true },
      { name: '4g.24gb', slices: 4, size: 4, starts: [0], max: 1, mediaExtensions: false },
    ],
    expected: true,
  },
];

/** Case, `NVIDIA`, spaces, dashes and GPU Feature Discovery's `-MIG-<profile>` / `-SHARED` suffixes do not matter. */
function key(s: string): string {
  return s
    .replace(/-MIG-.*$/i, '')
    .replace(/-SHARED$/i, '')
    .toUpperCase()
    .replace(/^NVIDIA/, '')
    .replace(/[^A-Z0-9]/g, '');
}

const BY_KEY = new Map<string, MigModel>();
for (const m of MIG_MODELS) for (const n of [m.name, ...m.products]) BY_KEY.set(key(n), m);

/**
 * The model a name means: the short name (`A100-80GB`, `h100-80gb`), an NVML product name
 * (`NVIDIA A100-SXM4-80GB`) or GPU Feature Discovery's product label (`NVIDIA-A100-SXM4-80GB`,
 * `NVIDIA-A100-SXM4-40GB-MIG-1g.5gb`). Undefined when it is not a MIG-capable model we know.
 */
export function migModel(name: string): MigModel | undefined {
  return BY_KEY.get(key(name));
}

export function knownModelNames(): string[] {
  return MIG_MODELS.map((m) => m.name);
}

export function profileOf(model: MigModel, name: string): MigProfile | undefined {
  return model.profiles.find((p) => p.name === name);
}

/** The device plugin's resource for a profile under the `mixed` strategy: `+` becomes `.` (docs/mig.md). */
export function migResourceName(profile: string): string {
  return `nvidia.com/mig-${profile.replaceAll('+', '.')}`;
}

/** What the node agent read from NVML for one GPU-instance profile (node-agent/nvml/mig.ts). */
export interface ReportedProfile {
  name: string;
  id: number;
  sliceCount: number;
  instanceCount: number;
  placements: readonly { start: number; size: number }[];
}

/**
 * The model as this GPU really is: NVML's reported profiles (names, IDs, maxima, placements) win
 * over the built-in table; built-in profiles NVML did not report are dropped (the driver does not
 * offer them). Without a report, the table.
 */
export function fromReported(model: MigModel, reported: readonly ReportedProfile[] | undefined): MigModel {
  if (!reported || reported.length === 0) return model;
  const profiles: MigProfile[] = reported
    .filter((r) => r.placements.length > 0 && r.instanceCount > 0)
    .map((r) => ({
      name: r.name,
      giProfileId: r.id,
      slices: r.sliceCount,
      size: r.placements[0]!.size,
      starts: [...new Set(r.placements.map((p) => p.start))].sort((a, b) => a - b),
      max: r.instanceCount,
      mediaExtensions: /\+me(\.|$)/.test(r.name),
    }));
  return { ...model, profiles, expected: false };
}

/**
 * A model the catalog lacks, from its agent's NVML table alone (a new SKU works on day one): the
 * memory slices are where the last placement ends, the compute slices the largest profile's. The
 * name is the product's (GPU Feature Discovery's label, `-MIG-…`/`-SHARED` cut). Undefined when the
 * table offers no placeable profile.
 */
export function modelFromReported(product: string, reported: readonly ReportedProfile[]): MigModel | undefined {
  const name = product.replace(/-MIG-.*$/i, '').replace(/-SHARED$/i, '') || 'unknown';
  const base: MigModel = { name, products: [product], memorySlices: 0, computeSlices: 0, profiles: [] };
  const model = fromReported(base, reported);
  if (model.profiles.length === 0) return undefined;
  const memorySlices = Math.max(...model.profiles.flatMap((p) => p.starts.map((s) => s + p.size)));
  const computeSlices = Math.max(...model.profiles.map((p) => p.slices));
  return { ...model, memorySlices, computeSlices };
}
