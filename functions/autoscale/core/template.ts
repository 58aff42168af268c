/**
 * What a new node of a pool offers for GPUs, by how the pool shares them (pure):
 *
 * - ACK's `ack.node.gpu.schedule` label (alibabacloud.com/help/doc-detail/191140.html): `default`
 *   is exclusive, whole GPUs (`nvidia.com/gpu`), as is no label and `topology`; `cgpu`, `share`,
 *   `core_mem` (and `mps`, which ACK's GPU-share plugin also serves) are cGPU sharing: the
 *   gpushare device plugin offers `aliyun.com/gpu-mem` (GiB, the sum over cards) and
 *   `aliyun.com/gpu-count` (cards), plus `aliyun.com/gpu-core.percentage` (100 per card) under
 *   `core_mem` (AliyunContainerService/gpushare-device-plugin; ACK cGPU docs), and a pod's share
 *   must fit one card (cards.ts). Any other value is a mode gpu-reflex does not know: its nodes fit
 *   no GPU pod, rather than a guess.
 * - NVIDIA time-slicing, declared by the pool's policy (`sharing.timeSlicing`, as the device
 *   plugin's config says it; a node of the pool labels it `nvidia.com/gpu.replicas`): allocatable
 *   is GPUs × replicas, under `nvidia.com/gpu`, or `nvidia.com/gpu.shared` with `renameByDefault`
 *   (NVIDIA/k8s-device-plugin api/config/v1/replicas.go, internal/rm/devices.go, README.md).
 *   A pool labelled with an ACK cGPU mode is cGPU whatever the policy says: ACK's GPU-share plugin,
 *   not NVIDIA's, serves those nodes (one mode per node, doc-detail/191140).
 */
import { GPU_CORE, GPU_COUNT, GPU_MEM } from './cards.ts';
import type { GpuCard, Resources } from './fit.ts';

/** ACK's per-node GPU scheduling mode label. */
export const ACK_GPU_MODE_LABEL = 'ack.node.gpu.schedule';
/** The device plugin's label: replicas per GPU under time-slicing (internal/lm/resource.go). */
export const REPLICAS_LABEL = 'nvidia.com/gpu.replicas';
/** The device plugin's label naming the sharing strategy (DP README). */
export const SHARING_STRATEGY_LABEL = 'nvidia.com/gpu.sharing-strategy';

const EXCLUSIVE = new Set(['default', 'topology']);
const CGPU = new Set(['cgpu', 'share', 'core_mem', 'mps']);

export interface TimeSlicing {
  replicas: number;
  renameByDefault: boolean;
  failRequestsGreaterThanOne: boolean;
}

export interface GpuOffer {
  allocatable: Record<string, number>;
  /** cGPU: each card of a new node, all free. */
  cards?: GpuCard[];
  /** Labels a node of this kind carries that pods may select. */
  labels: Record<string, string>;
  /** Why no GPU pod fits (an unknown mode); unset when they can. */
  gpuUnknown?: string;
  /** Time-slicing with failRequestsGreaterThanOne: the one resource a pod may ask for at most 1 of. */
  atMostOne?: string;
}

/** How ACK's mode label reads: exclusive, cGPU sharing, or unknown. */
export function ackMode(value: string | undefined): 'exclusive' | 'cgpu' | 'unknown' {
  if (value === undefined || EXCLUSIVE.has(value)) return 'exclusive';
  return CGPU.has(value) ? 'cgpu' : 'unknown';
}

/** Equal cards of `memoryGiB` each (an instance type's GPUs are one model). */
export const equalCards = (count: number, memoryGiB: number): GpuCard[] =>
  Array.from({ length: count }, () => ({ memory: memoryGiB, core: 100 }));

/**
 * A new node's GPU offer for an instance type of `gpus` cards of `memoryGiB` each, in the pool's
 * ACK mode (`mode`, the label's value) or with the policy's time-slicing.
 */
export function gpuOffer(
  gpus: number,
  memoryGiB: number,
  mode: string | undefined,
  timeSlicing?: TimeSlicing,
): GpuOffer {
  const kind = ackMode(mode);
  if (kind === 'unknown')
    return {
      allocatable: {},
      labels: {},
      gpuUnknown: `${ACK_GPU_MODE_LABEL}=${mode}, a GPU mode gpu-reflex does not know`,
    };
  if (kind === 'cgpu')
    return {
      allocatable: {
        [GPU_MEM]: gpus * memoryGiB,
        [GPU_COUNT]: gpus,
        ...(mode === 'core_mem' ? { [GPU_CORE]: gpus * 100 } : {}),
      },
      cards: equalCards(gpus, memoryGiB),
      labels: {},
    };
  if (timeSlicing) {
    const name = timeSlicing.renameByDefault ? 'nvidia.com/gpu.shared' : 'nvidia.com/gpu';
    return {
      allocatable: { [name]: gpus * timeSlicing.replicas },
      labels: { [REPLICAS_LABEL]: String(timeSlicing.replicas), [SHARING_STRATEGY_LABEL]: 'time-slicing' },
      ...(timeSlicing.failRequestsGreaterThanOne ? { atMostOne: name } : {}),
    };
  }
  return { allocatable: { 'nvidia.com/gpu': gpus }, labels: {} };
}

/**
 * The cards of an existing cGPU node, from what its device plugin reports: `aliyun.com/gpu-count`
 * cards sharing `aliyun.com/gpu-mem` equally (undefined when it reports no cards).
 */
export function cardsOfNode(allocatable: Resources): GpuCard[] | undefined {
  const count = allocatable[GPU_COUNT] ?? 0;
  const mem = allocatable[GPU_MEM] ?? 0;
  if (count < 1 || mem <= 0) return undefined;
  const cards = Math.floor(count);
  return equalCards(cards, mem / cards).map((c) => ({
    ...c,
    core: allocatable[GPU_CORE] !== undefined ? allocatable[GPU_CORE] / cards : 100,
  }));
}

/** Alibaba's Arm (Yitian 710, Ampere Altra) ECS families: everything else gpu-reflex pools is x86 (amd64). */
// Source: alibabacloud.com/help/en/ecs/user-guide/arm-based-instance-families (g8y, c8y, r8y; g6r, c6r).
const ARM_FAMILIES = /^ecs\.(g8y|c8y|r8y|g6r|c6r)\./;

/** What a template node needs to know of where and what it will be. */
export interface TemplateSite {
  instanceType: string;
  regionId: string;
  /** The zone a new node lands in, when the pool can only land in one (unknown: no zone label). */
  zoneId?: string;
}

/**
 * The well-known labels a node of the pool will carry, as cluster-autoscaler's alicloud provider
 * puts them on its template node (kubernetes/autoscaler cluster-autoscaler/cloudprovider/alicloud/
 * alicloud_manager.go `buildGenericLabels`: `kubernetes.io/arch` and `kubernetes.io/os` from
 * cloudprovider.DefaultArch/DefaultOS (amd64, linux), `node.kubernetes.io/instance-type`,
 * `topology.kubernetes.io/region` and `zone`), and the beta aliases the kubelet still sets
 * (kubernetes.io/docs/reference/labels-annotations-taints: `beta.kubernetes.io/arch|os|instance-type`,
 * `failure-domain.beta.kubernetes.io/region|zone`). An Arm family is arm64, as its kubelet says.
 * The node's hostname is left out: no pod can name a node still to be bought.
 */
export function wellKnownLabels(site: TemplateSite): Record<string, string> {
  const arch = ARM_FAMILIES.test(site.instanceType) ? 'arm64' : 'amd64';
  return {
    'kubernetes.io/arch': arch,
    'beta.kubernetes.io/arch': arch,
    'kubernetes.io/os': 'linux',
    'beta.kubernetes.io/os': 'linux',
    'node.kubernetes.io/instance-type': site.instanceType,
    'beta.kubernetes.io/instance-type': site.instanceType,
    ...(site.regionId
      ? {
          'topology.kubernetes.io/region': site.regionId,
          'failure-domain.beta.kubernetes.io/region': site.regionId,
        }
      : {}),
    ...(site.zoneId
      ? { 'topology.kubernetes.io/zone': site.zoneId, 'failure-domain.beta.kubernetes.io/zone': site.zoneId }
      : {}),
  };
}

/**
 * The GPU labels NVIDIA's GPU feature discovery puts on a node, from what DescribeInstanceTypes
 * says of the type (NVIDIA/k8s-device-plugin gpu-feature-discovery, internal/lm/resource.go:
 * `nvidia.com/gpu.product` is the GPU's name with spaces as `-`, `nvidia.com/gpu.count`, and
 * `nvidia.com/gpu.memory` in MiB). ECS's `GPUSpec` (`NVIDIA A10`) is the catalogue's name, not
 * always the one the driver reports (a T4 says `Tesla T4`), so a member of the pool, when there is
 * one, says better and wins; so do the pool's own labels.
 */
export function gpuLabels(gpuAmount: number, gpuSpec: string, gpuMemoryGiB: number): Record<string, string> {
  if (gpuAmount <= 0) return {};
  return {
    ...(gpuSpec.trim() ? { 'nvidia.com/gpu.product': gpuSpec.trim().replace(/\s+/g, '-') } : {}),
    'nvidia.com/gpu.count': String(gpuAmount),
    ...(gpuMemoryGiB > 0 ? { 'nvidia.com/gpu.memory': String(Math.round(gpuMemoryGiB * 1024)) } : {}),
  };
}
