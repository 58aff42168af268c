/**
 * Where NVIDIA supports resetting one GPU, by SKU and topology (issue #27). Data, each row naming
 * its source: where a single-GPU reset is not supported (`unsupported`) or NVIDIA resets the GPUs
 * only together (`all-gpus`: gpu-reflex never resets a node's healthy GPUs with its faulty one — a
 * reboot does the same and is the documented path), a GPU that needs a reset goes straight to a
 * node reboot without a reset being tried, and the Remediation's words say why. Pure.
 *
 * The SKU is GPU Feature Discovery's `nvidia.com/gpu.product` label. The topology is the node's
 * `gpu-reflex.io/gpu-topology` label (`pcie`, `nvlink`, `nvswitch`), set by whoever knows the board
 * (the node pool's template, a person); only PCIe-only products imply it. An SXM GPU without the
 * label has no row: its reset is tried, and NVML's refusal (NVML_ERROR_NOT_SUPPORTED, or IN_USE) is
 * a failed reset that climbs the ladder like any other — an unknown row is never read as supported.
 */

export const GPU_TOPOLOGY_LABEL = 'gpu-reflex.io/gpu-topology';
export const GPU_PRODUCT_LABEL = 'nvidia.com/gpu.product';

export type ResetVerdict = 'supported' | 'all-gpus' | 'unsupported';
export type GpuTopology = 'pcie' | 'nvlink' | 'nvswitch';
/** Architecture families, as NVIDIA's rules name them. */
export type GpuFamily = 'pre-ampere' | 'ampere' | 'hopper-and-newer';

export interface ResetSupportRow {
  family: GpuFamily;
  topology: GpuTopology;
  verdict: ResetVerdict;
  /** Example systems, for people reading the table. */
  systems: string;
  source: string;
}

const ADR = 'NVIDIA/NVSentinel ADR-019 "Janitor support for GPU reset", Scope of Support';
const SMI = 'nvidia-smi(1) -r/--gpu-reset: one GPU, root, no process or client holding it';

/** The matrix. Rows not listed (and unknown SKUs or topologies) have no verdict: the reset is tried. */
export const RESET_SUPPORT: readonly ResetSupportRow[] = [
  { family: 'pre-ampere', topology: 'pcie', verdict: 'supported', systems: 'T4, V100-PCIE', source: SMI },
  {
    family: 'pre-ampere',
    topology: 'nvlink',
    verdict: 'all-gpus',
    systems: 'DGX-1 / HGX-1 (V100 SXM2)',
    // ADR-019: pre-Ampere GPUs must be reset as a whole NVLink-connected group.
    source: `${ADR}: pre-Ampere, the NVLink-connected group resets together`,
  },
  {
    family: 'pre-ampere',
    topology: 'nvswitch',
    verdict: 'all-gpus',
    systems: 'DGX-2 / HGX-2 (V100 SXM3)',
    source: `${ADR}: pre-Ampere, the NVLink-connected group resets together`,
  },
  { family: 'ampere', topology: 'pcie', verdict: 'supported', systems: 'A100-PCIE, A10, A30', source: ADR },
  {
    family: 'ampere',
    topology: 'nvlink',
    verdict: 'supported',
    systems: 'HGX A100 4-GPU (direct NVLink)',
    source: `${ADR}: Ampere and newer with NVLink connections`,
  },
  {
    family: 'ampere',
    topology: 'nvswitch',
    verdict: 'unsupported',
    systems: 'HGX A100 8-GPU, DGX A100 (NVSwitch, Fabric Manager)',
    source: `${ADR}: Ampere NVSwitch systems (need Fabric Manager)`,
  },
  { family: 'hopper-and-newer', topology: 'pcie', verdict: 'supported', systems: 'H100-PCIE, L4, L40S', source: ADR },
  {
    family: 'hopper-and-newer',
    topology: 'nvlink',
    verdict: 'supported',
    systems: 'H100 NVL pairs',
    source: `${ADR}: Ampere and newer with NVLink connections`,
  },
  {
    family: 'hopper-and-newer',
    topology: 'nvswitch',
    verdict: 'supported',
    systems: 'HGX/DGX H100, H200, B200',
    source: `${ADR}: Hopper and newer NVSwitch systems`,
  },
];

/**
 * The family of a GFD product name (`NVIDIA-A100-SXM4-80GB`, `Tesla-T4`); undefined when unknown.
 * Architectures from NVIDIA's product pages: Volta (V100), Turing (T4), Ampere (A-series), Ada (L4,
 * L40), Hopper (H100, H200, GH200), Blackwell (B100, B200, GB200, B300).
 */
export function familyOf(product: string): GpuFamily | undefined {
  const p = product.toUpperCase();
  if (/(^|[-_ ])(TESLA-)?(V100|P100|P40|P4|T4|K80)([-_ ]|$)/.test(p) || p.startsWith('TESLA-')) return 'pre-ampere';
  if (/(^|[-_ ])A(100|10|16|2|30|40|800)([-_ ]|$)/.test(p)) return 'ampere';
  if (/(^|[-_ ])(GH200|H100|H200|H20|H800|L4|L40S?|L20|GB200|GB300|B100|B200|B300)([-_ ]|$)/.test(p))
    return 'hopper-and-newer';
  return undefined;
}

/** PCIe-only products (no SXM form factor): the topology follows from the SKU. */
const PCIE_ONLY = /(^|[-_ ])(PCIE|T4|A10|A16|A2|A30|A40|L4|L40S?|L20)([-_ ]|$)/;

export function topologyOf(labels: Readonly<Record<string, string>>): GpuTopology | undefined {
  const said = labels[GPU_TOPOLOGY_LABEL];
  if (said === 'pcie' || said === 'nvlink' || said === 'nvswitch') return said;
  const product = (labels[GPU_PRODUCT_LABEL] ?? '').toUpperCase();
  return PCIE_ONLY.test(product) ? 'pcie' : undefined;
}

export interface ResetSupport {
  /** undefined: no row (unknown SKU or topology): the reset is tried and NVML's answer decides. */
  verdict?: ResetVerdict;
  product: string;
  topology?: GpuTopology;
  row?: ResetSupportRow;
}

/** The matrix's answer for a node's labels. */
export function resetSupportOf(labels: Readonly<Record<string, string>>): ResetSupport {
  const product = labels[GPU_PRODUCT_LABEL] ?? 'unknown product';
  const family = familyOf(product);
  const topology = topologyOf(labels);
  const row = RESET_SUPPORT.find((r) => r.family === family && r.topology === topology);
  return { product, ...(topology ? { topology } : {}), ...(row ? { row, verdict: row.verdict } : {}) };
}

/** True when the GPU goes to a reboot without a reset being tried. */
export function skipsReset(s: ResetSupport): boolean {
  return s.verdict === 'unsupported' || s.verdict === 'all-gpus';
}
