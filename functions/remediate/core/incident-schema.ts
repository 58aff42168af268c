/**
 * The shape of the remediation history kept on a node (state.ts reads and writes it): incidents,
 * their fences, the recent occurrences, the phases and the caps. Split from state.ts, which
 * re-exports every public name here.
 */
import * as z from 'zod';
import { GPU_RECOVERY_ACTIONS, HEALTH_CONDITIONS, REMEDIATION_ACTIONS, Timestamp } from '../../../events/index.ts';
import { FENCE_BACKENDS } from './policy-schema.ts';

/**
 * Why a GPU fence was escalated one scope up (the node tainted NoSchedule while the GPU is out):
 * `not-fenced-by-plugin`: NVIDIA's device plugin does not fence this fault (a health condition,
 * an application XID on its skip list); `not-verified`: the node's allocatable did not drop
 * (or the DeviceTaintRule was not there) within `fence.verifyMinutes`; `no-dra-device`: no
 * ResourceSlice of the node lists the GPU, so no DeviceTaintRule can name it;
 * `plugin-latches-one-mig-device`: NVIDIA's plugin keys health by the parent GPU, so a whole-GPU XID on
 * a MIG GPU latches one of its instances and leaves the others schedulable (fencing.md, corrections).
 */
export const FENCE_FALLBACKS = [
  'not-fenced-by-plugin',
  'not-verified',
  'no-dra-device',
  'plugin-latches-one-mig-device',
] as const;
export type FenceFallback = (typeof FENCE_FALLBACKS)[number];

const FenceStateSchema = z.object({
  /** The pool's backend when the GPU went out (a later policy change does not strand the fence). */
  backend: z.enum(FENCE_BACKENDS),
  /** The node's allocatable showed the GPU gone (the fence is real, not assumed). */
  verifiedAt: Timestamp.optional(),
  fallback: z.enum(FENCE_FALLBACKS).optional(),
  fallbackAt: Timestamp.optional(),
  /** nvidia-plugin: when its pod on the node was restarted to undo the latch, after the restore. */
  restartedAt: Timestamp.optional(),
  /** GPU devices already out of the node's allocatable before this fence, for other reasons: never counted as ours. */
  outBefore: z.number().int().min(0).max(1024).optional(),
  /** A verified fence was found not to hold (fence-check.ts): since when, until it holds again. */
  driftAt: Timestamp.optional(),
  /** The last write-back of the fence by the node agent that was reported (its `restoredAt`). */
  restoredSeen: Timestamp.optional(),
  /** When a drift of this fence was last told (notice, Remediation, Event): the rate limit's clock (sweep-gpu.ts). */
  driftToldAt: Timestamp.optional(),
  /** The drift under way was not told (within the rate limit): its end is not told either. */
  driftMuted: z.boolean().optional(),
  /** ack-cgpu: the card was listed in gpushare's ConfigMap before this fence (another writer's: never unlisted). */
  listedBefore: z.boolean().optional(),
});
export type FenceState = z.infer<typeof FenceStateSchema>;

export const NODE_PHASES = ['healthy', 'quarantined', 'draining', 'awaiting-repair', 'awaiting-approval'] as const;
export type NodePhase = (typeof NODE_PHASES)[number];
export const INCIDENT_PHASES = [
  'observing',
  'acted',
  'quarantined',
  'draining',
  'awaiting-repair',
  'awaiting-approval',
  'closed',
] as const;
export type IncidentPhase = (typeof INCIDENT_PHASES)[number];

/** Caps that keep the history annotation well under Kubernetes' 256 KiB for all annotations. */
export const LIMITS = {
  handled: 256,
  recent: 128,
  incidents: 32,
  workloads: 8,
  pods: 32,
  recentPods: 4,
  historyBytes: 96 * 1024,
} as const;

const IncidentSchema = z.object({
  key: z.string(),
  trigger: z.string(),
  xid: z.number().optional(),
  condition: z.enum(HEALTH_CONDITIONS).optional(),
  gpu: z.string().optional(),
  /** The GPU's index on the node (NVML's): how ACK's gpushare names a card (fence-cgpu.ts). */
  gpuIndex: z.number().int().min(0).max(1023).optional(),
  mig: z.object({ gi: z.number(), ci: z.number().optional(), uuid: z.string().optional() }).optional(),
  /** The recovery action (field 230) the incident's latest firing event named. */
  recoveryAction: z.enum(GPU_RECOVERY_ACTIONS).optional(),
  /** The quarantined-gpus entry this incident holds (MIG UUID, `GPU-…/gi<n>` or GPU UUID). */
  qid: z.string().optional(),
  /** The policy profile whose rule opened the incident (policy `profiles`), when one did. */
  profile: z.string().max(63).optional(),
  scope: z.enum(['mig-instance', 'gpu', 'node']),
  action: z.enum(REMEDIATION_ACTIONS),
  /** The rule's chain [action, ...then] when the incident opened (recovery actions included). */
  ladder: z.array(z.enum(REMEDIATION_ACTIONS)).min(1).max(8),
  /** Index of `action` in `ladder`. */
  level: z.number().int().min(0),
  phase: z.enum(INCIDENT_PHASES),
  firstAt: Timestamp,
  lastAt: Timestamp,
  count: z.number().int().min(0),
  /** Distinct pod UIDs that were on the GPU when it failed (escalation across workloads). */
  workloads: z.array(z.string()),
  /** Pod UIDs we evict; the sweep retries the ones still present. */
  pods: z.array(z.string()),
  /** When the incident entered its phase. */
  since: Timestamp,
  eventId: z.string(),
  escalatedAt: Timestamp.optional(),
  /** When it first took GPUs or the node out of service (never set for observe, restart, or a rejected approval). */
  outAt: Timestamp.optional(),
  resolvedAt: Timestamp.optional(),
  notifiedAt: Timestamp.optional(),
  closedAt: Timestamp.optional(),
  /**
   * GPU repair through the node agent (gpu-repair.ts): the reset or probe asked for and not yet
   * answered, with its request id and when it was asked.
   */
  repair: z
    .object({
      step: z.enum(['reset', 'probe']),
      id: z.string(),
      at: Timestamp,
      since: Timestamp.optional(),
      attempt: z.number().int().min(1).optional(),
      /**
       * A node-wide incident's probes after a person's `repaired-at` (no reboot of ours to carry them): the node's
       * GPUs (UUIDs) probed, one each; the node returns only when every one passed (return-probe.ts).
       */
      gpus: z.array(z.string().min(1).max(200)).max(16).optional(),
    })
    .optional(),
  /**
   * Rule letWorkFinish (DRAIN_AND_RESET): the GPU is fenced but its pods (`pods`) are left to end by
   * themselves until this time; then the ones still running are evicted (and this is cleared).
   */
  evictAt: Timestamp.optional(),
  /** The agent reset the GPU (its answer's time): the evidence a restore needs, with a passed probe. */
  resetAt: Timestamp.optional(),
  /** Its pods were gone, but the reset waited for its fence (reset-gate.ts): since when (said once). */
  resetHeldAt: Timestamp.optional(),
  /** The probe after the reset passed: the GPU is back on evidence, not on quiet time. */
  probedAt: Timestamp.optional(),
  /**
   * A MIG GPU the reset emptied: mig-manager's pod on the node was restarted so it applies the node's
   * config again (mig-restore.ts).
   */
  migRestartedAt: Timestamp.optional(),
  /** The agent's MIG inventory, written after that restart, listed the GPU's instances again (its `at`). */
  migBackAt: Timestamp.optional(),
  /**
   * Why the restore of the reset MIG GPU waits, as last said (mig-restore.ts): recorded when it changes, so a person
   * reading the incident sees what it waits for (an inventory after the reset, mig-manager, an agent gone quiet).
   */
  migWait: z.string().min(1).max(512).optional(),
  /**
   * The GPU is schedulable again (after the incident closed): the agent took it out of its fence file,
   * or the device plugin counts it again.
   */
  unfencedAt: Timestamp.optional(),
  /** How the GPU is kept out of scheduling while the incident holds it (gpu-repair.ts). */
  fence: FenceStateSchema.optional(),
  /**
   * A reboot asked of the cloud for this incident (or a repair left to `by`, the node pool's own
   * auto repair): when, the node's boot id then, and when the node came back (a new boot id, Ready).
   * The quiet period runs from `backAt`; the fault seen after it climbs the ladder (replace).
   */
  reboot: z
    .object({
      at: Timestamp,
      fromBoot: z.string().optional(),
      backAt: Timestamp.optional(),
      by: z.string().max(128).optional(),
      /**
       * A node-wide incident: the node's GPUs (UUIDs) known before the reboot — each must pass its own
       * health probe after it, so a GPU that does not come back keeps the node out (return-probe.ts).
       */
      gpus: z.array(z.string().min(1).max(200)).max(16).optional(),
    })
    .optional(),
  /**
   * A replacement through the node's ACK node pool, capacity first (sweep.ts): since `at` the pool
   * was asked for `to` nodes (absolute); `newNode`, Ready at `readyAt`, is the capacity that came,
   * and from then the node's instance is being removed and released. It closes when the node is gone.
   */
  replace: z
    .object({
      at: Timestamp,
      pool: z.string().max(128),
      instanceId: z.string().max(64),
      to: z.number().int().nonnegative(),
      newNode: z.string().max(253).optional(),
      readyAt: Timestamp.optional(),
      /** The removal task's state in ACK's words, told to a person as one ACK does not document (once a word). */
      removalTold: z.string().max(64).optional(),
    })
    .optional(),
});
export type Incident = z.infer<typeof IncidentSchema>;

/** `count`: the occurrences one aggregated XID event stands for (absent: one). */
const OccurrenceSchema = z.object({
  key: z.string(),
  at: Timestamp,
  pods: z.array(z.string()),
  count: z.number().int().min(1).optional(),
});
export type Occurrence = z.infer<typeof OccurrenceSchema>;

export const HistorySchema = z.object({
  v: z.literal(1),
  incidents: z.array(IncidentSchema),
  recent: z.array(OccurrenceSchema),
  handled: z.array(z.string()),
  cordoned: z.boolean(),
  restoredAt: Timestamp.optional(),
});
