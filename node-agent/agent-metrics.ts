/**
 * The agent's own metrics (the publisher registers its own beside them). Names are public:
 * dashboards and alerts use them (docs/node-agent.md).
 */
import { registerDcgmMetrics, type DcgmMetrics, type DcgmOptions } from './dcgm.ts';
import type { DeviceHolder } from '../events/index.ts';
import type { Metrics, Series } from './metrics.ts';

export interface AgentMetrics {
  /** An NVML call failed (not NOT_SUPPORTED, not a lost GPU): `error` is NVML's name for it. */
  nvmlError(error: string): void;
  /** An XID went out for the GPU `gpuUuid` (index `gpuIndex` when known); `atMs` is when the agent saw it. */
  xidPublished(via: 'nvml' | 'kmsg', atMs: number, gpuUuid: string, xid: number, gpuIndex?: number): void;
  /** The second sighting of an XID (NVML and kernel log) that the deduper absorbed. */
  xidDuplicate(via: 'nvml' | 'kmsg'): void;
  /** Every sample, failed ones included (`samples` empty): the DCGM-named GPU series (dcgm.ts). */
  gpusSampled: DcgmMetrics['sampled'];
  /** Who holds which GPU by PodResources at this sample (undefined: unknown): `gpu_reflex_gpu_allocated`. */
  holdersSampled(holders: readonly DeviceHolder[] | undefined, gpuIndex: (uuid: string) => number | undefined): void;
}

export const noAgentMetrics: AgentMetrics = {
  nvmlError() {},
  xidPublished() {},
  xidDuplicate() {},
  gpusSampled: async () => {},
  holdersSampled() {},
};

export const AGENT_METRIC_NAMES = {
  nvmlErrors: 'gpu_reflex_nvml_errors_total',
  lastXid: 'gpu_reflex_last_xid_timestamp_seconds',
  xids: 'gpu_reflex_xids_total',
  xidDuplicates: 'gpu_reflex_xid_duplicates_total',
  allocated: 'gpu_reflex_gpu_allocated',
} as const;

/** `dcgm`: also export the GPUs under dcgm-exporter's names; without it there are none. */
export function registerAgentMetrics(registry: Metrics, dcgm?: DcgmOptions): AgentMetrics {
  const n = AGENT_METRIC_NAMES;
  const errors = registry.counter(
    n.nvmlErrors,
    'NVML calls that failed (NOT_SUPPORTED and lost GPUs excluded), by NVML error name.',
    ['error'],
  );
  const lastXid = registry.gauge(
    n.lastXid,
    'Unix time (seconds) of the last XID the agent published; 0 before the first.',
  );
  // Per GPU and XID, with dcgm-exporter's label keys (gpu, UUID), so an XID alert fires per GPU (issue #33).
  const xids = registry.counter(
    n.xids,
    'XIDs published, by where the agent saw them first (nvml or kmsg), GPU (index, UUID) and XID.',
    ['via', 'gpu', 'UUID', 'xid'],
  );
  const dups = registry.counter(
    n.xidDuplicates,
    'XID sightings suppressed because the other source already reported them.',
    ['via'],
  );
  const gpus = dcgm ? registerDcgmMetrics(registry, dcgm) : undefined;
  // One series per pod and GPU (or MIG device) it holds, from the latest sample: GPU-hours per namespace
  // are sum_over_time of it (docs/cost.md). Unknown holders leave no series (never "nobody").
  const allocated = registry.snapshot(
    n.allocated,
    'GPUs (or MIG devices) allocated to a pod by the kubelet (PodResources): 1 per pod and device.',
    'gauge',
  );
  lastXid.set({}, 0);
  return {
    nvmlError: (error) => errors.inc({ error }),
    xidPublished(via, atMs, gpuUuid, xid, gpuIndex) {
      xids.inc({ via, gpu: gpuIndex !== undefined ? String(gpuIndex) : '', UUID: gpuUuid, xid: String(xid) });
      lastXid.set({}, atMs / 1000);
      gpus?.xid(gpuUuid, xid);
    },
    xidDuplicate: (via) => dups.inc({ via }),
    gpusSampled: async (s) => gpus?.sampled(s),
    holdersSampled(holders, gpuIndex) {
      const seen = new Map<string, Series>();
      for (const h of holders ?? []) {
        if (h.gpu === undefined) continue;
        const labels = {
          gpu: String(gpuIndex(h.gpu) ?? ''),
          UUID: h.gpu,
          mig: h.mig ?? '',
          namespace: h.namespace,
          pod: h.name,
        };
        seen.set(JSON.stringify(labels), { labels, value: 1 });
      }
      allocated.replace([...seen.values()]);
    },
  };
}
