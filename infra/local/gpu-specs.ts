import { createHash } from 'node:crypto';
import type { Node } from './kube/index.ts';
import { simMigModel, SIM_MIG_MODELS, type SimMigModel, type SimMigProfile } from './kube/mig-catalog.ts';
import { SIM_GPU_LAYOUT_ANNOTATION } from './kube/mig-manager.ts';
import { placeInstances } from './kube/mig-placement.ts';
import { GPU_COUNT } from './kube/gpushare.ts';
import { gpuResetScopeOf, type GpuResetScope } from './gpu-reset-scope.ts';

/**
 * What a simulated GPU node physically has, derived from its Kubernetes object the way GPU
 * Feature Discovery would have labelled it (`nvidia.com/gpu.product`, `.count`, `.memory`,
 * `nvidia.com/mig.strategy`, allocatable `nvidia.com/mig-<profile>`), and which GPU each of its
 * pods holds (what the device plugin would have allocated). Pure: the stack writes the results
 * as the node's mock NVML scenario and fake `/proc`.
 */
export interface MigSlot {
  profile: string;
  giProfileId: number;
  start: number;
  size: number;
  giId: number;
}

export interface GpuSpec {
  index: number;
  name: string;
  uuid: string;
  pciBusId: string;
  pciDeviceId: string;
  memoryTotalMiB: number;
  powerLimitW: number;
  mig: MigSlot[];
  /** What NVML lets a reset of this GPU do (gpu-reset-scope.ts); absent: one GPU alone. */
  resetScope?: GpuResetScope;
}

/** Product label → NVML name, PCI device id, power limit. Unknown products keep their label. */
const PRODUCTS: Record<string, { name: string; pci: string; watts: number }> = {
  'NVIDIA-A100-SXM4-80GB': { name: 'NVIDIA A100-SXM4-80GB', pci: '0x20B210DE', watts: 400 },
  'NVIDIA-A100-SXM4-40GB': { name: 'NVIDIA A100-SXM4-40GB', pci: '0x20B010DE', watts: 400 },
  'NVIDIA-H100-80GB-HBM3': { name: 'NVIDIA H100 80GB HBM3', pci: '0x233010DE', watts: 700 },
  'Tesla-T4': { name: 'Tesla T4', pci: '0x1EB810DE', watts: 70 },
  'NVIDIA-A10': { name: 'NVIDIA A10', pci: '0x223610DE', watts: 150 },
};

const num = (v: string | number | undefined): number | undefined => (v === undefined ? undefined : Number(v));

/** A node runs GPUs when it advertises whole GPUs, MIG slices, or ACK's shared cards (gpushare.ts). */
export function isGpuNode(node: Node): boolean {
  const alloc = node.status?.allocatable ?? {};
  // A DRA node advertises no GPU resource (its GPUs are ResourceSlice devices, dra-slice.ts); the GPU
  // Operator's and NFD's `nvidia.com/gpu.present=true` says it has GPUs (the agent DaemonSet selects on it).
  if (node.metadata.labels?.['nvidia.com/gpu.present'] === 'true') return true;
  return Object.keys(alloc).some(
    (k) =>
      k === 'nvidia.com/gpu' || k === 'nvidia.com/gpu.shared' || k.startsWith('nvidia.com/mig-') || k === GPU_COUNT,
  );
}

function gpuUuid(node: string, index: number): string {
  const h = createHash('sha256').update(`${node}/${index}`).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** The A100/H100 rows of the catalog (kube/mig-catalog.ts): the geometry of a model the catalog lacks. */
const EIGHT_SLICE = SIM_MIG_MODELS.find((m) => m.name === 'A100-80GB')!.profiles.filter((p) => !p.name.includes('+me'));

/**
 * The MIG model of a node's GPUs: the catalog's, or for a product it lacks, the 8-slice geometry
 * with each profile's memory slices read from its name's share of the GPU's memory.
 */
function modelOf(product: string, names: readonly string[], memoryMiB: number): SimMigModel {
  const known = simMigModel(product);
  if (known) return known;
  const profiles: SimMigProfile[] = [];
  for (const name of new Set(names)) {
    const m = /^(\d)g\.(\d+)gb$/.exec(name);
    if (!m) continue;
    const size = Math.min(8, Math.max(1, Math.round((Number(m[2]) * 1024 * 8) / memoryMiB)));
    const row =
      EIGHT_SLICE.find((p) => p.compute === Number(m[1]) && p.size === size) ??
      EIGHT_SLICE.find((p) => p.compute === Number(m[1]));
    if (row) profiles.push({ ...row, name });
  }
  return { name: product, products: [], memorySlices: 8, computeSlices: 7, profiles };
}

const toSlots = (placed: ReturnType<typeof placeInstances>): MigSlot[] =>
  'slots' in placed
    ? placed.slots.map((s, i) => ({ profile: s.profile, giProfileId: s.id, start: s.start, size: s.size, giId: i + 1 }))
    : [];

/**
 * Per-GPU MIG layout from the node's per-profile allocatable, spread evenly over its GPUs, placed
 * as the driver places instances (kube/mig-placement.ts). When the labels promise more than one
 * GPU holds, the smallest instances are dropped until the rest fit.
 */
function migLayout(
  alloc: Record<string, string | number>,
  gpus: number,
  product: string,
  memoryMiB: number,
): MigSlot[][] {
  const names: string[] = [];
  for (const [k, v] of Object.entries(alloc)) {
    const m = /^nvidia\.com\/mig-(.+)$/.exec(k);
    if (m) for (let i = 0; i < Math.floor(Number(v) / gpus); i++) names.push(m[1]!);
  }
  const model = modelOf(product, names, memoryMiB);
  const geometry = (n: string) => model.profiles.find((p) => p.name === n);
  const perGpu = names.filter((n) => geometry(n) !== undefined);
  perGpu.sort(
    (a, b) =>
      geometry(b)!.size - geometry(a)!.size || geometry(b)!.compute - geometry(a)!.compute || a.localeCompare(b),
  );
  let placed = placeInstances(model, perGpu);
  while (perGpu.length > 0 && !('slots' in placed)) {
    perGpu.pop();
    placed = placeInstances(model, perGpu);
  }
  const layout = toSlots(placed);
  return Array.from({ length: gpus }, () => layout.map((s) => ({ ...s })));
}

/**
 * The per-GPU layouts the simulated mig-manager applied from a per-device mig-parted config
 * (SIM_GPU_LAYOUT_ANNOTATION), each placed as the driver places instances. Undefined when there
 * is none, or the model is not in the simulator's catalog.
 */
function perGpuLayout(node: Node, product: string, count: number): MigSlot[][] | undefined {
  const raw = node.metadata.annotations?.[SIM_GPU_LAYOUT_ANNOTATION];
  const model = simMigModel(product);
  if (!raw || !model) return undefined;
  const perGpu = JSON.parse(raw) as string[][];
  if (perGpu.length !== count) return undefined;
  return perGpu.map((profiles) => toSlots(placeInstances(model, profiles)));
}

export function gpuSpecsOf(node: Node): GpuSpec[] {
  const name = node.metadata.name;
  const labels = node.metadata.labels ?? {};
  const alloc = node.status?.allocatable ?? {};
  const migKeys = Object.keys(alloc).filter((k) => k.startsWith('nvidia.com/mig-'));
  const count =
    num(labels['nvidia.com/gpu.count']) ??
    num(alloc['nvidia.com/gpu']) ??
    num(alloc[GPU_COUNT]) ??
    (migKeys.length > 0 ? 1 : 0);
  // A shared, not renamed, resource labels the product `<model>-SHARED` (plugin-sharing.ts).
  const product = (labels['nvidia.com/gpu.product'] ?? 'NVIDIA-A100-SXM4-80GB').replace(/-SHARED$/, '');
  const known = PRODUCTS[product];
  const memoryMiB = num(labels['nvidia.com/gpu.memory']) ?? 16384;
  const mixed = labels['nvidia.com/mig.strategy'] === 'mixed' && migKeys.length > 0;
  const mig = mixed ? (perGpuLayout(node, product, count) ?? migLayout(alloc, count, product, memoryMiB)) : undefined;
  const resetScope = gpuResetScopeOf(labels);
  return Array.from({ length: count }, (_, index) => ({
    index,
    name: known?.name ?? product.replaceAll('-', ' '),
    uuid: gpuUuid(name, index),
    pciBusId: `00000000:${(0x18 + index * 0x10).toString(16).toUpperCase().padStart(2, '0')}:00.0`,
    pciDeviceId: known?.pci ?? '0x000010DE',
    memoryTotalMiB: memoryMiB,
    powerLimitW: known?.watts ?? 300,
    mig: mig?.[index] ?? [],
    ...(resetScope !== 'gpu' ? { resetScope } : {}),
  }));
}
