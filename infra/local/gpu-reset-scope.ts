/**
 * What the simulated hardware lets NVML reset, per GPU (written again here from NVIDIA's rules, never
 * imported from the functions' matrix, so the simulator can disagree with a wrong decision):
 *
 * - `gpu`  — one GPU alone (`nvidia-smi -r -i <id>` on a GPU no process holds).
 * - `all`  — only the whole NVLink-connected set at once: pre-Ampere NVLink/NVSwitch boards (DGX-1,
 *            DGX-2); a single-GPU reset is refused.
 * - `none` — no single-GPU reset: Ampere NVSwitch boards (HGX A100 8-GPU, DGX A100), where the GPUs
 *            and the NVSwitches are managed by Fabric Manager.
 *
 * Source: NVIDIA/NVSentinel ADR-019 "Janitor support for GPU reset" (Scope of Support). NVML answers a
 * refused reset NVML_ERROR_NOT_SUPPORTED (3) and nvidia-smi prints "Not Supported"; a GPU a process
 * holds is NVML_ERROR_IN_USE (19), "In use by another client" (nvml.h nvmlReturn_t).
 *
 * The board is what the fleet file says the node is: GFD's `nvidia.com/gpu.product` and the node's
 * `gpu-reflex.io/gpu-topology` (pcie, nvlink, nvswitch; absent: a board that resets one GPU).
 */
export type GpuResetScope = 'gpu' | 'all' | 'none';

export function gpuResetScopeOf(labels: Readonly<Record<string, string>>): GpuResetScope {
  const product = (labels['nvidia.com/gpu.product'] ?? '').toUpperCase();
  const topology = labels['gpu-reflex.io/gpu-topology'];
  const linked = topology === 'nvlink' || topology === 'nvswitch';
  if (linked && /V100|P100/.test(product)) return 'all';
  if (topology === 'nvswitch' && /A100|A800/.test(product)) return 'none';
  return 'gpu';
}
