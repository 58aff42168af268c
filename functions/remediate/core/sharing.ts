/**
 * How a node's GPUs are shared, and what that changes for one fault (issue #32). Pure.
 *
 * - **Where the mode comes from.** NVIDIA's device plugin labels the node (GFD's labeller,
 *   NVIDIA/k8s-device-plugin internal/lm/resource.go `baseLabeler`): `nvidia.com/gpu.sharing-strategy`
 *   (`none`, `time-slicing`, `mps`) and `nvidia.com/gpu.replicas` (replicas per GPU). A renamed
 *   resource (`renameByDefault`, api/config/v1/replicas.go) shows as `nvidia.com/gpu.shared` in the
 *   node's capacity. The node agent adds what NVML shows of one card (the XID event's `sharing`):
 *   MPS clients listed by `nvmlDeviceGetMPSComputeRunningProcesses_v3`, or two pods' processes on one
 *   whole GPU, which exclusive scheduling never produces. The agent's word wins where it is sharper.
 * - **Who is to blame.** Time-slicing: the process the kernel line names (its pod, the event's
 *   `culprit`). MPS: every MPS client of the card (a fatal fault under MPS takes the server's clients
 *   with it), and no client alone is to blame. An unresolved pid on a shared card — NVML only, MPS —
 *   is **one** occurrence of an unknown workload, never one per co-tenant (reference xid.md,
 *   corrections 2026-12-01): otherwise co-tenants count as "different workloads" and one tenant's bug
 *   escalates to a quarantine of a healthy GPU.
 */
import type { GpuXidErrorDetail } from '../../../events/index.ts';
import type { NodeFacts, PodFacts } from './types.ts';
import { mpsBlameWords, unknownTenantWords } from './tenant-words.ts';

export type SharingMode = 'exclusive' | 'time-slicing' | 'mps';

export interface CardSharing {
  mode: SharingMode;
  /** Devices one GPU gives the node's allocatable per MIG instance or whole GPU (1 when exclusive). */
  replicas: number;
  /** The resource the replicas are advertised under (`nvidia.com/gpu` or the renamed `nvidia.com/gpu.shared`). */
  resource: string;
}

/** NVIDIA's labels (k8s-device-plugin README, "Shared Access to GPUs"; internal/lm/resource.go). */
export const SHARING_STRATEGY_LABEL = 'nvidia.com/gpu.sharing-strategy';
export const REPLICAS_LABEL = 'nvidia.com/gpu.replicas';
/** `renameByDefault: true` advertises `<name>.shared` (api/config/v1/replicas.go). */
export const RENAMED_GPU = 'nvidia.com/gpu.shared';

/** The workload an unresolved occurrence on a shared card counts as: one per card, whoever runs there. */
export function unknownWorkload(gpuUuid: string): string {
  return `unknown@${gpuUuid}`;
}

/**
 * The sharing of the node's GPUs (all cards of a node share one plugin config), sharpened by what the
 * agent saw of the faulting card. Unknown labels and no agent word: exclusive, as before #32.
 */
export function sharingOf(
  node: Pick<NodeFacts, 'labels' | 'capacity'>,
  seen?: Pick<GpuXidErrorDetail, 'sharing'>['sharing'],
): CardSharing {
  const renamed = node.capacity?.[RENAMED_GPU] !== undefined;
  const resource = renamed ? RENAMED_GPU : 'nvidia.com/gpu';
  const label = node.labels[SHARING_STRATEGY_LABEL];
  const replicas = Math.max(1, Math.floor(Number(node.labels[REPLICAS_LABEL]) || 1));
  const labelled: SharingMode =
    label === 'mps' ? 'mps' : label === 'time-slicing' || renamed || replicas > 1 ? 'time-slicing' : 'exclusive';
  const mode: SharingMode =
    seen === 'mps' ? 'mps' : seen === 'time-slicing' && labelled === 'exclusive' ? seen : labelled;
  return { mode, replicas: mode === 'exclusive' ? 1 : replicas, resource };
}

export interface Blame {
  /** What this occurrence counts toward escalation as (pod UIDs, or one unknown workload). */
  workloads: string[];
  /** The pods a restart-workload restarts (a quarantine still moves every pod on the card). */
  restart: 'culprit' | 'all-reported' | 'none';
  /** Words for the reason, empty on an exclusive card. */
  words: string;
}

/**
 * Who an XID on this card is blamed on. `culprit`: the pod the kernel line's pid names; `reported`:
 * every pod the agent saw on the card (MPS: its clients, the MPS server's pod left out by the agent).
 */
export function blameOf(
  sharing: CardSharing,
  gpuUuid: string | undefined,
  culprit: string | undefined,
  reported: readonly string[],
): Blame {
  if (sharing.mode === 'exclusive' || !gpuUuid)
    return {
      workloads: culprit ? [culprit] : [...new Set(reported)],
      restart: culprit ? 'culprit' : 'all-reported',
      words: '',
    };
  if (sharing.mode === 'mps')
    return {
      workloads: [unknownWorkload(gpuUuid)],
      restart: 'all-reported',
      words: mpsBlameWords(reported.length),
    };
  if (culprit) return { workloads: [culprit], restart: 'culprit', words: '' };
  return {
    workloads: [unknownWorkload(gpuUuid)],
    restart: 'none',
    words: unknownTenantWords(sharing.replicas, reported.length),
  };
}

/** The teams (namespaces) whose pods a plan moves, sorted. */
export function tenantsOf(pods: readonly Pick<PodFacts, 'namespace'>[]): string[] {
  return [...new Set(pods.map((p) => p.namespace))].sort();
}
