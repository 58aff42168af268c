/**
 * The remediation state, kept ON the Kubernetes node (functions hold nothing between invocations):
 *
 * - label      `gpu-reflex.io/state` = healthy | quarantined | draining | awaiting-repair | awaiting-approval
 * - taint      `<taintKey>=<reason>:NoSchedule` (reason like `xid-79`), only while the node is out
 * - annotation `gpu-reflex.io/quarantined-gpus` = JSON list of quarantined GPU UUIDs / MIG instances
 * - annotation `gpu-reflex.io/history` = compact JSON: incidents, recent occurrences, handled ids
 * - annotation `gpu-reflex.io/repaired-at` = ISO time, written by the repair adapter or a person
 *   after a reboot/replacement; it is the way out of `awaiting-repair`.
 *
 * parseNodeState never throws: garbage becomes an empty state plus a warning. Pure.
 */
import * as z from 'zod';
import { GPU_RECOVERY_ACTIONS, HEALTH_CONDITIONS, REMEDIATION_ACTIONS, Timestamp } from '../../../events/index.ts';
import { FENCE_BACKENDS } from './policy.ts';
import { DEFAULT_TAINT_KEY, QUARANTINED_GPUS_ANNOTATION, STATE_LABEL } from '../../lib/node-state.ts';
import type { Taint } from '../../adapters/kube/model.ts';

// The key is the kernel's: quota reads it too (capacity a fence takes out), and neither imports the other.
export { QUARANTINED_GPUS_ANNOTATION };

/** The one Taint type: the Kubernetes ports' (adapters/kube/model.ts). */
export type { Taint };
export { DEFAULT_TAINT_KEY, STATE_LABEL };

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

export const HISTORY_ANNOTATION = 'gpu-reflex.io/history';
export const REPAIRED_AT_ANNOTATION = 'gpu-reflex.io/repaired-at';

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

const HistorySchema = z.object({
  v: z.literal(1),
  incidents: z.array(IncidentSchema),
  recent: z.array(OccurrenceSchema),
  handled: z.array(z.string()),
  cordoned: z.boolean(),
  restoredAt: Timestamp.optional(),
});

export interface NodeState {
  phase: NodePhase;
  /** Open incidents and recently closed ones (closedAt keeps stale replays from reopening them). */
  incidents: Incident[];
  /** Occurrences within escalation windows, newest last. */
  recent: Occurrence[];
  /** Event ids already handled (dedupe), oldest first, bounded. */
  handled: string[];
  quarantinedGpus: string[];
  /** Our taint's reason (`xid-79`) while the node carries it. */
  taint?: string;
  /** We cordoned the node: restore uncordons only what we cordoned, never an admin's cordon. */
  cordoned: boolean;
  restoredAt?: string;
  repairedAt?: string;
  /** Problems met while parsing; never encoded. */
  warnings: string[];
}

export function emptyState(): NodeState {
  return {
    phase: 'healthy',
    incidents: [],
    recent: [],
    handled: [],
    quarantinedGpus: [],
    cordoned: false,
    warnings: [],
  };
}

/** Reads the state from a node's metadata. Never throws; every problem becomes a warning. */
export function parseNodeState(
  annotations: Readonly<Record<string, string>> | undefined,
  labels: Readonly<Record<string, string>> | undefined,
  taints: readonly Taint[] | undefined,
  opts: { taintKey?: string; unschedulable?: boolean } = {},
): NodeState {
  const s = emptyState();
  const a = isRecord(annotations) ? annotations : {};
  const l = isRecord(labels) ? labels : {};
  const raw = a[HISTORY_ANNOTATION];
  if (typeof raw === 'string') {
    const h = HistorySchema.safeParse(safeJson(raw));
    if (h.success) {
      s.incidents = h.data.incidents;
      s.recent = h.data.recent;
      s.handled = h.data.handled;
      s.cordoned = h.data.cordoned;
      if (h.data.restoredAt) s.restoredAt = h.data.restoredAt;
    } else s.warnings.push(`${HISTORY_ANNOTATION} is corrupt: starting from an empty history`);
  }
  const q = a[QUARANTINED_GPUS_ANNOTATION];
  if (typeof q === 'string') {
    const parsed = z.array(z.string().min(1).max(200)).max(64).safeParse(safeJson(q));
    if (parsed.success) s.quarantinedGpus = parsed.data;
    else s.warnings.push(`${QUARANTINED_GPUS_ANNOTATION} is corrupt: ignoring it`);
  }
  const r = a[REPAIRED_AT_ANNOTATION];
  if (typeof r === 'string') {
    if (Timestamp.safeParse(r).success) s.repairedAt = r;
    else s.warnings.push(`${REPAIRED_AT_ANNOTATION} is not an ISO UTC time: ignoring it`);
  }
  const label = l[STATE_LABEL];
  if (label !== undefined) {
    if ((NODE_PHASES as readonly string[]).includes(label)) s.phase = label as NodePhase;
    else s.warnings.push(`${STATE_LABEL}=${String(label).slice(0, 63)} is not a known state: treating it as healthy`);
  }
  const key = opts.taintKey ?? DEFAULT_TAINT_KEY;
  const ours = Array.isArray(taints) ? taints.find((t) => isRecord(t) && t.key === key) : undefined;
  if (ours) {
    s.taint = typeof ours.value === 'string' && ours.value ? ours.value : 'unknown';
    // History lost but our taint is there: the cordon beside it is ours too.
    if (typeof raw !== 'string' || s.warnings.length > 0) s.cordoned = s.cordoned || opts.unschedulable === true;
  }
  return s;
}

/** Our part of the node's metadata. `null` = remove that key. The cordon is `unschedulable`. */
export interface EncodedNodeState {
  labels: Record<string, string>;
  annotations: Record<string, string | null>;
  taint: Taint | null;
  /** `true` cordon, `false` uncordon, `undefined` leave alone (an admin's cordon is not ours). */
  unschedulable?: boolean;
}

export function encodeNodeState(state: NodeState, opts: { taintKey?: string } = {}): EncodedNodeState {
  const history = encodeHistory(state);
  return {
    labels: { [STATE_LABEL]: state.phase },
    annotations: {
      [HISTORY_ANNOTATION]: history,
      [QUARANTINED_GPUS_ANNOTATION]: state.quarantinedGpus.length > 0 ? JSON.stringify(state.quarantinedGpus) : null,
    },
    taint: state.taint ? { key: opts.taintKey ?? DEFAULT_TAINT_KEY, value: state.taint, effect: 'NoSchedule' } : null,
    ...(state.cordoned ? { unschedulable: true } : {}),
  };
}

/** Compact JSON, trimmed (oldest first) until it fits LIMITS.historyBytes. */
export function encodeHistory(state: NodeState): string {
  const h = capState(state);
  let text = JSON.stringify(h);
  // Trim order: handled ids, then occurrences, then closed incidents, then pod lists.
  while (Buffer.byteLength(text) > LIMITS.historyBytes) {
    if (h.handled.length > 0) h.handled.splice(0, Math.max(1, h.handled.length >> 2));
    else if (h.recent.length > 0) h.recent.splice(0, Math.max(1, h.recent.length >> 2));
    else if (h.incidents.some((i) => i.phase === 'closed'))
      h.incidents.splice(
        h.incidents.findIndex((i) => i.phase === 'closed'),
        1,
      );
    else if (h.incidents.some((i) => i.pods.length > 0 || i.workloads.length > 1))
      h.incidents.forEach((i) => ((i.pods = []), (i.workloads = i.workloads.slice(-1))));
    else h.incidents.shift();
    text = JSON.stringify(h);
  }
  return text;
}

function capState(s: NodeState): z.infer<typeof HistorySchema> {
  const open = s.incidents.filter((i) => i.phase !== 'closed');
  const closed = s.incidents
    .filter((i) => i.phase === 'closed')
    .sort((a, b) => cmp(a.closedAt ?? a.lastAt, b.closedAt ?? b.lastAt));
  const incidents = [
    ...closed.slice(Math.max(0, closed.length - Math.max(0, LIMITS.incidents - open.length))),
    ...open.slice(-LIMITS.incidents),
  ].map((i) => ({
    ...i,
    workloads: i.workloads.slice(-LIMITS.workloads),
    pods: i.pods.slice(-LIMITS.pods),
  }));
  return {
    v: 1,
    incidents,
    recent: s.recent.slice(-LIMITS.recent).map((o) => ({ ...o, pods: o.pods.slice(-LIMITS.recentPods) })),
    handled: s.handled.slice(-LIMITS.handled),
    cordoned: s.cordoned,
    ...(s.restoredAt ? { restoredAt: s.restoredAt } : {}),
  };
}

/** Trims a state to its caps (what a parse of its encoding would give back). */
export function boundState(s: NodeState): NodeState {
  const h = capState(s);
  return { ...s, incidents: h.incidents, recent: h.recent, handled: h.handled };
}

export function isOpen(i: Incident): boolean {
  return i.phase !== 'closed';
}

export function cmp(a: string, b: string): number {
  return Date.parse(a) - Date.parse(b);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isRecord(v: unknown): v is Record<string, string> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
