/**
 * The policy file's shape: zod schemas for rules, profiles, pools, fencing and repair, and the
 * `Policy` type they infer. Split from policy.ts (which re-exports every name here).
 */
import * as z from 'zod';
import {
  GPU_RECOVERY_ACTIONS,
  HEALTH_CONDITIONS,
  int,
  NVIDIA_BUCKETS,
  REMEDIATION_ACTIONS,
} from '../../../events/index.ts';
import { profileProblems } from './policy-profiles.ts';

export const Action = z.enum(REMEDIATION_ACTIONS);

/** "The same XID on one GPU `count` times within `windowMinutes` across `distinctWorkloads` pods." */
export const EscalateSchema = z
  .object({
    count: int().min(1).max(1000),
    windowMinutes: int().min(1).max(10_080),
    distinctWorkloads: int().min(0).max(128),
  })
  .strict();
export type Escalate = z.infer<typeof EscalateSchema>;

/** One rule as written in a policy: every field optional, merged field by field over the default. */
export const RuleOverrideSchema = z
  .object({
    action: Action.optional(),
    /** The escalation chain: what follows when the action does not clear the fault. */
    then: z.array(Action).max(6).optional(),
    /** `false` turns escalation by repetition off. */
    escalate: z.union([EscalateSchema, z.literal(false)]).optional(),
    notify: z.boolean().optional(),
    /** Per-severity first action (temperature: warning → observe, critical → quarantine-gpu). */
    bySeverity: z
      .object({ info: Action.optional(), warning: Action.optional(), critical: Action.optional() })
      .strict()
      .optional(),
    /**
     * quarantine-gpu only: new work is fenced off the GPU at once, but the pods running on it are
     * left to finish (NVML's DRAIN_AND_RESET: "running work is safe"); the reset waits for them,
     * and whatever still runs after `deadlineMinutes` is evicted. `false`: evict at once.
     */
    letWorkFinish: z
      .union([z.object({ deadlineMinutes: int().min(1).max(10_080) }).strict(), z.literal(false)])
      .optional(),
  })
  .strict();
export type RuleOverride = z.infer<typeof RuleOverrideSchema>;

/**
 * A profile (docs/remediation.md "Profiles"): where it applies, and what it changes in the XID's rule.
 * `match` names at least one of pools, GPU models (`*` is any run of characters), NVIDIA resolution
 * classes or XID codes; every named one must hold. The overrides are merged over the XID's rule as a
 * pool's are; the most specific matching profile decides (policy-profiles.ts `chooseProfile`).
 */
export const ProfileSchema = z
  .object({
    match: z
      .object({
        pools: z.array(z.string().min(1).max(253)).min(1).max(64).optional(),
        gpuModels: z
          .array(z.string().regex(/^[A-Za-z0-9*][-A-Za-z0-9 _.*]{0,95}$/, 'expected a GPU model like NVIDIA-H100*'))
          .min(1)
          .max(64)
          .optional(),
        /** NVIDIA's "Resolution Bucket (Immediate Action)" (`xid explain` prints it); NONE_GIVEN: unlisted XIDs too. */
        xidClasses: z.array(z.enum(NVIDIA_BUCKETS)).min(1).max(NVIDIA_BUCKETS.length).optional(),
        xids: z.array(int().min(1).max(999)).min(1).max(256).optional(),
      })
      .strict()
      .refine((m) => m.pools || m.gpuModels || m.xidClasses || m.xids, {
        message: 'expected at least one of pools, gpuModels, xidClasses, xids',
      }),
    action: Action.optional(),
    then: z.array(Action).max(6).optional(),
    /** `false` turns escalation by repetition off. */
    escalate: z.union([EscalateSchema, z.literal(false)]).optional(),
    notify: z.boolean().optional(),
  })
  .strict()
  .refine((p) => p.action || p.then || p.escalate !== undefined || p.notify !== undefined, {
    message: 'expected at least one of action, then, escalate, notify',
  });
export type Profile = z.infer<typeof ProfileSchema>;
/** A profile's name: what the Remediation event and its words say decided. */
export const ProfileName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9._]{0,61}[a-z0-9])?$/, 'expected a profile name like train-h100 (63 of [a-z0-9._-])');

/**
 * How one GPU is kept out of scheduling (docs/remediation.md "Fence backends"), per pool:
 * - `ack-file`: the node agent lists it in the ACK device plugin's unhealthyDevices.json;
 * - `nvidia-plugin`: NVIDIA's device plugin fences critical XIDs itself and never un-fences (its
 *   latch): we verify it did, and restart its pod on the node after a verified reset; what it does
 *   not fence (health conditions, escalated application XIDs) falls back to `cordon`;
 * - `dra`: clusters that hand GPUs out through DRA: a `DeviceTaintRule` (NoSchedule) on the
 *   GPU's device in the node's ResourceSlice; deleted on restore. No node access needed;
 * - `cordon`: no per-GPU fence: the node is tainted NoSchedule while the GPU is out;
 * - `ack-cgpu`: nodes that share their GPUs through ACK cGPU / gpushare: the card's index in
 *   ConfigMap `kube-system/unhealthy-gpu-<node>`, which its scheduler extender skips. Never set by
 *   hand: `ack-file` becomes it on a sharing node (fence-cgpu.ts fenceBackendFor says why).
 */
export const FENCE_BACKENDS = ['ack-file', 'nvidia-plugin', 'dra', 'cordon', 'ack-cgpu'] as const;
export type FenceBackend = (typeof FENCE_BACKENDS)[number];

/** A Kubernetes label name (`example.com/name` or `name`) and value. */
const LabelName = z
  .string()
  .regex(
    /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/,
    'expected a label name like app.kubernetes.io/name',
  );
const LabelValue = z
  .string()
  .regex(
    /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/,
    'expected a label value (63 characters of [A-Za-z0-9._-])',
  );
/** A DaemonSet's pods: their namespace and the labels that pick them (one per node). */
const DaemonPods = z
  .object({
    namespace: z.string().regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'expected a namespace name'),
    selector: z.record(LabelName, LabelValue),
  })
  .strict();

export const FenceSchema = z
  .object({
    backend: z.enum(FENCE_BACKENDS),
    /** A fence not seen in the node's allocatable within this is escalated one scope up (the node is tainted). */
    verifyMinutes: int().min(1).max(1440),
    /**
     * A fence that keeps drifting is told at most once per this many minutes (absent: verifyMinutes): a
     * drift starting sooner after the last one told is recorded, restored and escalated as ever, not told.
     */
    driftNoticeMinutes: int().min(0).max(10080).optional(),
    /** Where NVIDIA's device plugin runs: its pod on the node is restarted to undo the latch. */
    nvidiaPlugin: DaemonPods,
    /**
     * The DRA driver whose devices are the GPUs, and the resource.k8s.io versions this cluster
     * serves: DeviceTaintRule is v1alpha3 in Kubernetes 1.33–1.35, v1beta2 from 1.36; ResourceSlice v1 from 1.34.
     */
    dra: z
      .object({
        driver: z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'expected a DRA driver name like gpu.nvidia.com'),
        deviceTaintRuleVersion: z.enum(['v1alpha3', 'v1beta2', 'v1']),
        resourceSliceVersion: z.enum(['v1beta1', 'v1beta2', 'v1']),
      })
      .strict(),
  })
  .strict();

export const PoolOverrideSchema = z
  .object({
    xids: z.record(z.string().regex(/^\d+$/, 'expected an XID number'), RuleOverrideSchema).optional(),
    conditions: z.partialRecord(z.enum(HEALTH_CONDITIONS), RuleOverrideSchema).optional(),
    maxQuarantinedShare: z.number().min(0).max(1).optional(),
    maxQuarantinedCount: int().min(0).max(100_000).optional(),
    /** How this pool's GPUs are fenced (its device plugin), when it differs from `fence.backend`. */
    fenceBackend: z.enum(FENCE_BACKENDS).optional(),
    /** This pool's `repair.pdbDeadlineMinutes`, when it differs (serving pools with tight budgets). */
    pdbDeadlineMinutes: int().min(1).max(10_080).optional(),
  })
  .strict();

export const ApprovalsSchema = z
  .object({
    ttlMinutes: int().min(1).max(10_080),
    /**
     * Approver ids (`decidedBy.id`) allowed to decide; empty: whoever may seal a decision (chat roles allowing
     * approve, holders of the approval key), never anyone who can put the event on the bus.
     */
    approvers: z.array(z.string().min(1).max(128)).max(256),
  })
  .strict();

export const RepairSchema = z
  .object({
    /**
     * A requested reset or probe that the node agent has not answered within this is a failed one (is the actuator
     * running?).
     */
    answerTimeoutMinutes: int().min(1).max(1440),
    /** How long the probe watches the reset GPU's counters before it passes it. */
    probeSeconds: int().min(0).max(3600),
    /**
     * DCGM's diagnostic as part of every return probe: `dcgmi diag -r <level>` on the repaired GPU (NVIDIA DCGM user
     * guide, "DCGM Diagnostics": 1 deployment checks in seconds, 2 a few minutes, 3 about half an hour, each level
     * the one before and more) must pass, or the GPU stays out. 0: none (the default). A node without DCGM then
     * never passes a probe: set it only where DCGM runs on every GPU node.
     */
    dcgmDiag: int().min(0).max(3),
    /** A rebooted node that shows no new boot id (and Ready) within this is reported to a person. */
    rebootTimeoutMinutes: int().min(1).max(1440),
    /**
     * A replacement whose node pool shows no new Ready node within this is told to a person, and
     * nothing is removed. ACK's scale-out time is not documented: set it to what the pool takes.
     */
    replaceTimeoutMinutes: int().min(1).max(1440),
    /**
     * A pod still on a GPU that needs a reset this long after it was asked to move (a
     * PodDisruptionBudget refusing its eviction, most often) no longer holds the reset up: a person
     * is told and the incident climbs its ladder as a stuck drain does. Per pool: `pools.<p>.pdbDeadlineMinutes`.
     */
    pdbDeadlineMinutes: int().min(1).max(10_080),
    /**
     * Where NVIDIA's mig-manager runs: after the reset of a MIG GPU its pod on the node is restarted,
     * so it applies the node's config again (a reset destroys every instance; docs/remediation.md).
     */
    migManager: DaemonPods,
  })
  .strict();

export const PolicySchema = z
  .object({
    xids: z.record(z.string().regex(/^\d+$/, 'expected an XID number'), RuleOverrideSchema),
    conditions: z.partialRecord(z.enum(HEALTH_CONDITIONS), RuleOverrideSchema),
    /** What NVML's recovery action demands (XID 154, `recovery-action` health events). */
    recoveryActions: z.partialRecord(z.enum(GPU_RECOVERY_ACTIONS), RuleOverrideSchema),
    pools: z.record(z.string().min(1), PoolOverrideSchema),
    /** XID overrides by pool, GPU model and class (ProfileSchema); the most specific match decides. */
    profiles: z.record(ProfileName, ProfileSchema),
    /** Node labels naming the pool, first present wins (the handler resolves it with `poolOf`). */
    poolLabels: z.array(z.string().min(1)).min(1).max(8),
    blastRadius: z
      .object({
        maxShare: z.number().min(0).max(1),
        maxCount: int().min(0).max(100_000),
        windowMinutes: int().min(1).max(10_080),
        /**
         * On a shared GPU (time-slicing, MPS): the most teams (namespaces) one fence may move without a
         * person's approval (issue #32). Absent: the pool's `maxCount`, counted in teams.
         */
        maxTenants: int().min(0).max(100_000).optional(),
      })
      .strict(),
    /** Default for rules whose XID escalates on repeat (application XIDs). */
    escalation: EscalateSchema.extend({
      /** A fault that returns within this many hours of a restore starts one step further up `then`. */
      recurrenceHours: int().min(0).max(720),
    }).strict(),
    quietPeriodMinutes: int().min(0).max(10_080),
    drainTimeoutMinutes: int().min(1).max(10_080),
    taintKey: z
      .string()
      .regex(/^([a-z0-9.-]+\/)?[A-Za-z0-9._-]{1,63}$/, 'expected a taint key like gpu-reflex.io/unhealthy'),
    /**
     * Held-back plans: how long an approval stays open, and who may decide it (empty = whoever may seal a decision).
     */
    approvals: ApprovalsSchema,
    /**
     * GPU repair through the node agent (docs/remediation.md "Repair"): how long to wait for its answer, and the
     * post-reset check.
     */
    repair: RepairSchema,
    /** How a GPU is fenced, and how the fence is verified (FenceSchema). */
    fence: FenceSchema,
  })
  .strict()
  .superRefine((p, ctx) => {
    // XID 45 is cleanup noise after another XID: NVSentinel made 672 false escalations in 3 h on it.
    if (p.xids['45']?.escalate)
      ctx.addIssue({
        code: 'custom',
        path: ['xids', '45', 'escalate'],
        message: 'XID 45 never escalates (it is cleanup noise after another XID)',
      });
    const md = p.conditions['monitoring-degraded']?.action;
    if (md && md !== 'observe' && md !== 'ignore') {
      ctx.addIssue({
        code: 'custom',
        path: ['conditions', 'monitoring-degraded', 'action'],
        message: 'expected observe or ignore: monitoring-degraded is never a hardware verdict',
      });
    }
    for (const pr of profileProblems(p.profiles))
      ctx.addIssue({ code: 'custom', path: ['profiles', ...pr.path], message: pr.message });
  });
export type Policy = z.infer<typeof PolicySchema>;
