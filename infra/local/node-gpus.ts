import { createHash } from 'node:crypto';
import type { Node, Pod } from './kube/index.ts';
import { simMigModel, SIM_MIG_MODELS, type SimMigModel, type SimMigProfile } from './kube/mig-catalog.ts';
import { SIM_GPU_LAYOUT_ANNOTATION } from './kube/mig-manager.ts';
import { placeInstances } from './kube/mig-placement.ts';
import { cardOfPod, GPU_COUNT, MEM_POD } from './kube/gpushare.ts';
import { NO_GPU_PROCESS } from './kube/readiness.ts';
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

/** One GPU process of one pod: what NVML lists and what `/proc/<pid>/cgroup` names. */
export interface GpuProcessOfPod {
  pid: number;
  gpu: number;
  gpuInstanceId?: number;
  usedMiB: number;
  pod: { uid: string; namespace: string; name: string };
  /** The pod's `spec.resourceClaims` entry this whole GPU was allocated for (DRA), when it was. */
  claim?: string;
  /** The shared ResourceClaim (`resourceClaimName`) that entry names: every pod naming it shares its GPU. */
  sharedClaim?: string;
  /**
   * The pod holds the device but runs no GPU process (NO_GPU_PROCESS): NVML lists nothing for it, the
   * kubelet's PodResources still lists its allocation.
   */
  noProcess?: true;
  /** MPS: a client of the card's MPS server (NVML lists it apart), or that server. */
  mps?: 'client' | 'server';
  /**
   * A shared card's replica the pod holds, as the kubelet records it: `<UUID>::<i>` (k8s-device-plugin
   * internal/rm/devices.go `NewAnnotatedID`), what PodResources would list for the pod.
   */
  deviceId?: string;
}

/**
 * A node whose device plugin replicates its GPUs (time-slicing or MPS, plugin-sharing.ts): pods asking
 * for `resource` get one replica each of a card, several pods per card. `replicasOut`: replicas the
 * plugin marked unhealthy per GPU index (a card with some out still hands out the rest).
 */
export interface SharedGpus {
  resource: string;
  replicas: number;
  strategy: 'time-slicing' | 'mps';
  replicasOut?: ReadonlyMap<number, number>;
}

/**
 * The pod's DRA claim entries (`spec.resourceClaims[]`): a template's entry gets a claim of its own, an
 * entry naming `resourceClaimName` shares that claim with every pod of the namespace naming it
 * (kubernetes.io DRA docs: "pods that name the same ResourceClaim share it").
 */
const claimsOf = (pod: Pod): { entry: string; shared?: string }[] =>
  ((pod.spec.resourceClaims as { name?: string; resourceClaimName?: string }[] | undefined) ?? []).flatMap((c) =>
    c.name ? [{ entry: c.name, ...(c.resourceClaimName ? { shared: c.resourceClaimName } : {}) }] : [],
  );

const requestsOf = (pod: Pod): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const c of pod.spec.containers ?? []) {
    for (const [k, v] of Object.entries(c.resources?.limits ?? c.resources?.requests ?? {}))
      out[k] = (out[k] ?? 0) + Number(v);
  }
  return out;
};

/** The GPU indices the scheduler allocated to the pod's claim entry (its ResourceClaim's devices). */
export type ClaimGpus = (pod: Pod, entry: string) => readonly number[] | undefined;

/**
 * Device-plugin allocation: pods in creation order take the first free whole GPUs
 * (`nvidia.com/gpu`) or MIG instances of their profile (`nvidia.com/mig-<profile>`). Each gets
 * one process per GPU/instance. `existing` allocations of pods still listed are kept (a running
 * container does not move); pods no longer listed free theirs. New processes get pids from
 * `pidBase` up, so a pid is never reused within a run (the agent caches pid → pod).
 */
/** `fenced`: GPU indices the device plugin reports unhealthy (its fence file): nothing new lands on them. */
export function allocateGpus(
  gpus: readonly GpuSpec[],
  pods: readonly Pod[],
  pidBase = 4100,
  existing: readonly GpuProcessOfPod[] = [],
  fenced: ReadonlySet<number> = new Set(),
  shared?: SharedGpus,
  claimGpus?: ClaimGpus,
): GpuProcessOfPod[] {
  const present = new Set(pods.map((p) => p.metadata.uid));
  const kept = existing.filter((p) => present.has(p.pod.uid));
  const keptPods = new Set(kept.map((p) => p.pod.uid));
  const usedGpus = new Set(kept.filter((p) => p.gpuInstanceId === undefined).map((p) => p.gpu));
  const usedSlots = new Set(
    kept.filter((p) => p.gpuInstanceId !== undefined).map((p) => `${p.gpu}/${p.gpuInstanceId}`),
  );
  const freeGpus = gpus
    .filter((g) => g.mig.length === 0 && !usedGpus.has(g.index) && !fenced.has(g.index))
    .map((g) => g.index);
  const freeMig = gpus
    .filter((g) => !fenced.has(g.index))
    .flatMap((g) =>
      g.mig.filter((s) => !usedSlots.has(`${g.index}/${s.giId}`)).map((s) => ({ gpu: g.index, slot: s })),
    );
  const ordered = pods
    .filter((p) => !keptPods.has(p.metadata.uid))
    .sort(
      (a, b) =>
        (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
        a.metadata.name.localeCompare(b.metadata.name),
    );
  const out: GpuProcessOfPod[] = [...kept];
  let pid = pidBase;
  // Replicas taken per whole GPU (kept pods' included), for a shared node.
  const taken = new Map<number, number>();
  for (const p of kept) if (p.gpuInstanceId === undefined) taken.set(p.gpu, (taken.get(p.gpu) ?? 0) + 1);
  /**
   * The card a new replica comes from: NVIDIA's default `distributed` policy takes the GPU with the
   * fewest replicas allocated among those with one free (k8s-device-plugin internal/rm/allocate.go
   * `allocationComparators`); a fenced card hands out none, a partly latched one only its healthy rest.
   */
  const replicaCard = (s: SharedGpus): number | undefined => {
    const free = gpus.filter(
      (g) =>
        g.mig.length === 0 &&
        !fenced.has(g.index) &&
        (taken.get(g.index) ?? 0) < s.replicas - (s.replicasOut?.get(g.index) ?? 0),
    );
    free.sort((a, b) => (taken.get(a.index) ?? 0) - (taken.get(b.index) ?? 0) || a.index - b.index);
    return free[0]?.index;
  };
  for (const pod of ordered) {
    const req = requestsOf(pod);
    const ref = { uid: pod.metadata.uid, namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name };
    // ACK's gpushare: the card its extender annotated, shared with the card's other pods; the process
    // holds the memory the pod asked for (GiB).
    const card = (req['aliyun.com/gpu-mem'] ?? 0) > 0 ? cardOfPod(pod) : undefined;
    if (card !== undefined && gpus[card]) {
      const usedMiB = 1024 * (Number(pod.metadata.annotations?.[MEM_POD]) || req['aliyun.com/gpu-mem']!);
      out.push({ pid: pid++, gpu: card, usedMiB, pod: ref });
    }
    const mem = (gpu: number) => Math.round((gpus[gpu]?.memoryTotalMiB ?? 16384) * 0.6);
    if (shared) {
      for (let i = 0; i < (req[shared.resource] ?? 0); i++) {
        const gpu = replicaCard(shared);
        if (gpu === undefined) break;
        taken.set(gpu, (taken.get(gpu) ?? 0) + 1);
        // The lowest replica index of the card no process holds (kept or new).
        const held = new Set(out.filter((p) => p.gpu === gpu && p.deviceId).map((p) => p.deviceId));
        let replica = 0;
        while (held.has(`${gpus[gpu]!.uuid}::${replica}`)) replica++;
        const mib = Math.round(((gpus[gpu]?.memoryTotalMiB ?? 16384) / shared.replicas) * 0.6);
        const deviceId = `${gpus[gpu]!.uuid}::${replica}`;
        out.push({
          pid: pid++,
          gpu,
          usedMiB: mib,
          pod: ref,
          deviceId,
          ...(shared.strategy === 'mps' ? { mps: 'client' } : {}),
        });
      }
      continue;
    }
    for (let i = 0; i < (req['nvidia.com/gpu'] ?? 0) && freeGpus.length > 0; i++) {
      const gpu = freeGpus.shift()!;
      out.push({ pid: pid++, gpu, usedMiB: mem(gpu), pod: ref });
    }
    // DRA: the simulated driver allocates one whole free GPU per claim (exactly one device of its class).
    // A shared claim already allocated (another pod of it holds a GPU) keeps its device: a claim is
    // never deallocated while a pod reserves it (ResourceClaimStatus.reservedFor, resource.k8s.io API
    // reference), so a new consumer joins it there; where that GPU is fenced by a NoSchedule device
    // taint the new consumer is not given it (the real scheduler leaves such a pod Pending: the taint
    // applies to the claim and every pod using it, device-taints docs). Once no pod holds the claim, it
    // is allocated afresh on a free, unfenced GPU.
    const idle = pod.metadata.annotations?.[NO_GPU_PROCESS] === 'true' ? { noProcess: true as const } : {};
    // With the cluster's claims at hand the kubelet prepares exactly the devices the scheduler
    // allocated to the claim (status.allocation; a claim not allocated gives nothing).
    if (claimGpus) {
      for (const { entry, shared: name } of claimsOf(pod))
        for (const gpu of claimGpus(pod, entry) ?? [])
          out.push({
            pid: pid++,
            gpu,
            usedMiB: mem(gpu),
            pod: ref,
            claim: entry,
            ...(name ? { sharedClaim: name } : {}),
            ...idle,
          });
    }
    for (const { entry, shared: name } of claimGpus ? [] : claimsOf(pod)) {
      const sharedKey = name ? { sharedClaim: name } : {};
      const holder = name ? out.find((p) => p.sharedClaim === name && p.pod.namespace === ref.namespace) : undefined;
      if (holder && fenced.has(holder.gpu)) continue;
      const gpu = holder ? holder.gpu : freeGpus.shift();
      if (gpu !== undefined)
        out.push({ pid: pid++, gpu, usedMiB: mem(gpu), pod: ref, claim: entry, ...sharedKey, ...idle });
    }
    for (const [k, v] of Object.entries(req)) {
      const m = /^nvidia\.com\/mig-(.+)$/.exec(k);
      if (!m) continue;
      for (let i = 0; i < v; i++) {
        const at = freeMig.findIndex((f) => f.slot.profile === m[1]);
        if (at < 0) break;
        const [{ gpu, slot }] = freeMig.splice(at, 1) as [{ gpu: number; slot: MigSlot }];
        out.push({ pid: pid++, gpu, gpuInstanceId: slot.giId, usedMiB: 1024 * slot.size, pod: ref });
      }
    }
  }
  return out;
}

/**
 * Which MIG instances the running pods of each MIG node hold, per GPU (profile names): what the
 * node agent's inventory would report from NVML after the device plugin allocated them.
 */
/** Node → each simulated GPU's MIG instances (profiles), as its NVML lists them: the layouts the world has. */
export function migLayoutsOf(nodes: readonly Node[]): Map<string, string[][]> {
  const out = new Map<string, string[][]>();
  for (const n of nodes.filter(isGpuNode)) {
    const specs = gpuSpecsOf(n);
    if (specs.some((g) => g.mig.length > 0))
      out.set(
        n.metadata.name,
        specs.map((g) => g.mig.map((s) => s.profile)),
      );
  }
  return out;
}

export function migInstancesInUse(nodes: readonly Node[], pods: readonly Pod[]): Map<string, string[][]> {
  const usage = new Map<string, string[][]>();
  for (const n of nodes.filter(isGpuNode)) {
    const specs = gpuSpecsOf(n);
    if (!specs.some((g) => g.mig.length > 0)) continue;
    const on = pods.filter(
      (p) => p.spec.nodeName === n.metadata.name && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed',
    );
    const perGpu = specs.map(() => [] as string[]);
    for (const proc of allocateGpus(specs, on)) {
      if (proc.gpuInstanceId === undefined) continue;
      const slot = specs[proc.gpu]?.mig.find((s) => s.giId === proc.gpuInstanceId);
      if (slot) perGpu[proc.gpu]!.push(slot.profile);
    }
    usage.set(n.metadata.name, perGpu);
  }
  return usage;
}

/** The cgroup v2 (systemd driver) line the kubelet gives a container of this pod. */
export function cgroupLine(podUid: string, pid: number): string {
  const container = createHash('sha256').update(`${podUid}/${pid}`).digest('hex');
  return (
    `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${podUid.replaceAll('-', '_')}` +
    `.slice/cri-containerd-${container}.scope\n`
  );
}
