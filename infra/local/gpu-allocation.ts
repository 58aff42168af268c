import { createHash } from 'node:crypto';
import type { Pod } from './kube/index.ts';
import { cardOfPod, MEM_POD } from './kube/gpushare.ts';
import { NO_GPU_PROCESS } from './kube/readiness.ts';
import type { GpuSpec, MigSlot } from './gpu-specs.ts';

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

/** The cgroup v2 (systemd driver) line the kubelet gives a container of this pod. */
export function cgroupLine(podUid: string, pid: number): string {
  const container = createHash('sha256').update(`${podUid}/${pid}`).digest('hex');
  return (
    `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${podUid.replaceAll('-', '_')}` +
    `.slice/cri-containerd-${container}.scope\n`
  );
}
