/**
 * What ACK puts on the nodes of a node pool, as Alibaba documents it, for the simulated cloud's
 * nodes (stack-cloud.ts). Written here rather than taken from the functions, which read the same
 * labels: a wrong name on their side must not be a wrong name on the world's side.
 */

/** ACK labels every node of a node pool with the pool's id (ACK docs, "Node pool" / node labels). */
export const ACK_NODEPOOL_LABEL = 'alibabacloud.com/nodepool-id';

/**
 * ACK's GPU scheduling mode of a node (alibabacloud.com/help/doc-detail/191140.html):
 * `default` (exclusive whole GPUs), `cgpu`, `core_mem`, `share`, `mps`, `topology`; setting
 * `default` restores exclusive scheduling. One mode per node.
 */
export const ACK_GPU_SCHEDULE_LABEL = 'ack.node.gpu.schedule';

/** The modes in which ACK's GPU-share device plugin, not NVIDIA's, serves the node's GPUs. */
const SHARING_MODES = new Set(['cgpu', 'core_mem', 'share', 'mps']);

/**
 * The GPU resources a node of `gpus` cards with `memoryGiB` each offers in its pool's mode.
 * Whole GPUs (`nvidia.com/gpu`) under `default`, `topology`, no label or a value ACK does not
 * document; under a sharing mode the GPU-share device plugin's resources instead:
 * `aliyun.com/gpu-mem` in GiB and `aliyun.com/gpu-count` in cards
 * (AliyunContainerService/gpushare-device-plugin), plus `aliyun.com/gpu-core.percentage`, 100 per
 * card, under `core_mem` (ACK cGPU docs).
 */
export function gpuResources(mode: string | undefined, gpus: number, memoryGiB: number): Record<string, string> {
  if (gpus === 0) return {};
  if (mode === undefined || !SHARING_MODES.has(mode)) return { 'nvidia.com/gpu': String(gpus) };
  return {
    'aliyun.com/gpu-mem': String(gpus * memoryGiB),
    'aliyun.com/gpu-count': String(gpus),
    ...(mode === 'core_mem' ? { 'aliyun.com/gpu-core.percentage': String(gpus * 100) } : {}),
  };
}
