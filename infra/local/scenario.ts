import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseYamlText } from '../../functions/lib/yaml-text.ts';
import * as z from 'zod';
import { loadFleet, validateFleet, type ParsedFleet } from './kube/fleet.ts';
import { isQuantity } from './kube/quantity.ts';
import { KUBERNETES_VERSIONS } from './kube/api-versions.ts';
import { loadPolicyFile, PolicyFileError } from '../../functions/remediate/core/policy-file.ts';
import type { Policy } from '../../functions/remediate/core/policy.ts';
import { AutoscalePolicyError, parseAutoscalePolicy, type AutoscalePolicy } from '../../functions/lib/pool-policy.ts';
import { NODEPOOL_LABEL } from '../../functions/autoscale/run.ts';
import { CloudFileError, parseCloudFile, type ParsedCloudFile } from './alicloud/cloud-file.ts';
import { parseQuotaConfig, QuotaConfigError, type QuotaConfig } from '../../functions/quota/core/config.ts';
import { LabelerConfigError, parseLabelerConfig, type LabelerConfig } from '../../functions/labels/core/config.ts';
import { IdlePolicyError, parseIdlePolicy, type IdlePolicy } from '../../functions/idle/core/policy.ts';
import { MigPolicyError, parseMigPolicy, type MigPolicy } from '../../functions/mig/core/policy.ts';
import { migConfig } from '../../functions/mig/wiring.ts';

/**
 * The scenario file of the local stack (`gpu-reflex local|simulate --scenario FILE`): a fleet,
 * which nodes run an agent, and a timeline of what happens. YAML or JSON, validated with zod so
 * every mistake names its field (`timeline.2.fault.xid: ...`). Faults are injected at the NVML
 * layer (they become the node's mock NVML `faults`); pod arrivals go through the Kubernetes API.
 * Nothing in a scenario can put an event on the bus directly: what the timeline shows is what the
 * components did. Format: docs/local-stack.md.
 */

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** '8s', '1.5s', '500ms', '2m', '3h' (or a number of seconds) → milliseconds. */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') return Math.round(text * 1000);
  const m = DURATION.exec(text.trim());
  if (!m) throw new Error(`"${text}" is not a duration such as 8s, 1.5s, 500ms, 2m or 3h`);
  const n = Number(m[1]);
  return Math.round(n * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h']);
}

const Duration = z.union([z.number().nonnegative(), z.string()]).transform((v, ctx) => {
  try {
    return parseDuration(v);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: (err as Error).message });
    return z.NEVER;
  }
});

const Name = z.string().regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a lowercase RFC 1123 name');
const Quantity = z.union([z.string().min(1), z.number()]);

/** Fault kinds the mock NVML library fires (docs/mock-nvml.md), with their fields. */
export const FaultSchema = z.discriminatedUnion('kind', [
  z
    .object({
      kind: z.literal('xid'),
      xid: z.number().int().positive(),
      gpuInstanceId: z.number().int().nonnegative().optional(),
      pid: z.number().int().positive().optional(),
      /**
       * The pod whose process hit it: the kernel line names that process's pid (default: the first process on the GPU
       * or instance).
       */
      pod: Name.optional(),
      /**
       * The driver's text after the XID number on the kernel line, as the driver writes it for this
       * XID — an NVLink5 XID's `NETIR_BER_EVENT Nonfatal XC0 i0 Link 08 (0x00000013 0x00000000 …)`.
       * Without it the line carries pid, name and the catalog's meaning.
       */
      text: z.string().min(1).max(512).optional(),
    })
    .strict(),
  z.object({ kind: z.literal('gpuLost') }).strict(),
  z
    .object({
      kind: z.literal('ecc'),
      corrected: z.number().int().nonnegative().optional(),
      uncorrected: z.number().int().nonnegative().optional(),
    })
    .strict(),
  z.object({ kind: z.literal('rowRemapPending') }).strict(),
  z.object({ kind: z.literal('rowRemapFailure') }).strict(),
  z.object({ kind: z.literal('retiredPagesPending') }).strict(),
  z.object({ kind: z.literal('recoveryAction'), action: z.number().int().min(0).max(8) }).strict(),
  z.object({ kind: z.literal('nvlinkDown'), link: z.number().int().nonnegative() }).strict(),
  // From then on the GPU does not come back from a reset (nvidia-smi --gpu-reset fails).
  z.object({ kind: z.literal('resetFails') }).strict(),
]);
export type Fault = z.infer<typeof FaultSchema>;

const Toleration = z
  .object({
    key: z.string().optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: z.string().optional(),
    effect: z.string().optional(),
  })
  .strict();

/** Pods that arrive mid-scenario, created through the Kubernetes API like any client would. */
export const PodArrivalSchema = z
  .object({
    name: Name,
    namespace: Name,
    count: z.number().int().positive().max(500).default(1),
    labels: z.record(z.string(), z.string()).optional(),
    requests: z.record(z.string(), Quantity),
    limits: z.record(z.string(), Quantity).optional(),
    nodeSelector: z.record(z.string(), z.string()).optional(),
    tolerations: z.array(Toleration).optional(),
    /** The pods exit 0 (Succeeded) this long after they start running: batch work that ends. */
    completeAfterSeconds: z.number().nonnegative().optional(),
    /**
     * DRA: `spec.resourceClaims` entries, each a claim made from a ResourceClaimTemplate or a shared
     * ResourceClaim by name (exactly one of the two), used by the container (PodResourceClaim, k8s DRA docs).
     */
    resourceClaims: z
      .array(
        z.union([
          z.object({ name: Name, resourceClaimTemplateName: Name }).strict(),
          z.object({ name: Name, resourceClaimName: Name }).strict(),
        ]),
      )
      .min(1)
      .optional(),
    /** `spec.schedulingGates` names (Kueue's `kueue.x-k8s.io/admission`): not scheduled until an `ungate` step. */
    schedulingGates: z.array(z.string().min(1)).max(16).optional(),
    /**
     * A Volcano PodGroup (scheduling.volcano.sh/v1beta1) the pods form: created first, the pods ask
     * for `schedulerName: volcano` and name it in `scheduling.k8s.io/group-name` (volcano.sh/en/docs/podgroup/).
     */
    podGroup: z
      .object({
        name: Name,
        minMember: z.number().int().positive(),
        minResources: z.record(z.string(), Quantity).optional(),
      })
      .strict()
      .optional(),
    /**
     * `hostname`: required pod anti-affinity against the pods' own `app` label on
     * `kubernetes.io/hostname`, so no two of them share a node (kubernetes.io/docs/concepts/
     * scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
     */
    antiAffinity: z.literal('hostname').optional(),
  })
  .strict();
export type PodArrival = z.infer<typeof PodArrivalSchema>;

const FaultStep = z
  .object({
    at: Duration,
    node: Name,
    gpu: z.number().int().nonnegative(),
    fault: FaultSchema,
    note: z.string().optional(),
  })
  .strict();
const PodsStep = z.object({ at: Duration, pods: PodArrivalSchema, note: z.string().optional() }).strict();
/**
 * Another writer of a node's ACK unhealthy-devices file replaces it whole (ACK's node-problem-detector
 * before 1.2.35 did, on its own detections; a person can): `index` entries as given, `gpus` as those
 * GPUs' UUIDs; an empty step empties the file. Scripted adversity (infra/local/ack-fence-file.ts).
 */
const FenceFileStep = z
  .object({
    at: Duration,
    node: Name,
    fenceFile: z
      .object({
        index: z.array(z.number().int().nonnegative()).max(64).optional(),
        gpus: z.array(z.number().int().nonnegative()).max(64).optional(),
        by: z.string().min(1).max(80).default('another writer'),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
/**
 * From this step on, GPU `gpu` of `node` does not come back from the node's next reboot: a GPU that
 * fell off the bus (a `gpuLost` fault on it at or before this step) and stays off it after the power
 * cycle — NVIDIA's resolution for an XID 79 that persists after a reboot is to replace the hardware
 * (XID catalog, RESTART_BM). NVML no longer lists it, and the device plugin no longer enumerates it
 * (the node's capacity drops by one GPU). Scripted adversity (stack.ts onReboot).
 */
const AfterRebootStep = z
  .object({
    at: Duration,
    node: Name,
    gpu: z.number().int().nonnegative(),
    afterReboot: z.literal('missing'),
    note: z.string().optional(),
  })
  .strict();
/**
 * Another writer of ACK gpushare's ConfigMap `kube-system/unhealthy-gpu-<node>` replaces its `gpus`
 * whole, as written (`null`: drops the key). Scripted adversity (infra/local/kube/gpushare.ts).
 */
const UnhealthyCardsStep = z
  .object({
    at: Duration,
    node: Name,
    unhealthyCards: z
      .object({
        gpus: z.string().max(256).nullable(),
        by: z.string().min(1).max(80).default('another writer'),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
/**
 * Whoever gated pods lifts their gates (Kueue admitting the workload): every scheduling gate of the
 * pods `name` or `name-<i>` in `namespace` is removed, as the gate's owner does (pod-scheduling-readiness).
 */
const UngateStep = z
  .object({
    at: Duration,
    ungate: z.object({ namespace: Name, name: Name, by: z.string().min(1).max(80).default('Kueue') }).strict(),
    note: z.string().optional(),
  })
  .strict();
export type UngateStepT = z.infer<typeof UngateStep>;
/**
 * A node joins the cluster (a person or a provisioner outside the scenario's cloud adds it): a Node with
 * these labels and allocatable, Ready. A GPU node makes the GPU Operator reconcile its ClusterPolicy
 * (clusterpolicy_controller.go addWatchNewGPUNode; the simulated one in kube/mig-manager.ts). No agent
 * runs on it: it is the cluster's object only.
 */
const JoinStep = z
  .object({
    at: Duration,
    join: z
      .object({
        node: Name,
        labels: z.record(z.string(), z.string()).default({}),
        allocatable: z.record(z.string(), z.union([z.string(), z.number()])).default({}),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
export type JoinStepT = z.infer<typeof JoinStep>;
/**
 * The node's device plugin breaks (issue #32): it stops serving, so the kubelet marks its devices unhealthy
 * (allocatable 0) and drops its resource 5 min later (capacity 0), with `log` lines in its pod's log. A new
 * plugin pod (its DaemonSet's, after the old one is deleted) serves again, unless `persistent` (the cause is
 * the node's: a missing driver library, a stale CDI spec). Scripted adversity (infra/local/device-plugin.ts).
 */
const DevicePluginStep = z
  .object({
    at: Duration,
    node: Name,
    devicePlugin: z
      .object({
        breaks: z.literal(true),
        log: z.array(z.string().min(1).max(400)).max(8).default([]),
        persistent: z.boolean().default(false),
      })
      .strict(),
    note: z.string().optional(),
  })
  .strict();
export type DevicePluginStepT = z.infer<typeof DevicePluginStep>;
/** A narration line printed at its time: tells the reader what to look for next. */
const NoteStep = z.object({ at: Duration, note: z.string().min(1) }).strict();
export type TimelineStep =
  | z.infer<typeof FaultStep>
  | z.infer<typeof PodsStep>
  | z.infer<typeof NvmlStepSchema>
  | z.infer<typeof FenceFileStep>
  | z.infer<typeof AfterRebootStep>
  | z.infer<typeof UnhealthyCardsStep>
  | z.infer<typeof UngateStep>
  | JoinStepT
  | z.infer<typeof DevicePluginStep>
  | z.infer<typeof NoteStep>;
export type AfterRebootStepT = z.infer<typeof AfterRebootStep>;
export type FenceFileStepT = z.infer<typeof FenceFileStep>;

/**
 * A step's kind is chosen by its key (`fault`, `pods`, else a note), then that schema alone is
 * applied, so errors name the field (`timeline.0.fault.xid: ...`) instead of "Invalid input".
 */
export const TimelineStepSchema = z.unknown().transform((v, ctx): TimelineStep => {
  const o = typeof v === 'object' && v !== null ? v : {};
  const schema =
    'fault' in o
      ? FaultStep
      : 'pods' in o
        ? PodsStep
        : 'nvml' in o
          ? NvmlStepSchema
          : 'fenceFile' in o
            ? FenceFileStep
            : 'afterReboot' in o
              ? AfterRebootStep
              : 'unhealthyCards' in o
                ? UnhealthyCardsStep
                : 'ungate' in o
                  ? UngateStep
                  : 'join' in o
                    ? JoinStep
                    : 'devicePlugin' in o
                      ? DevicePluginStep
                      : NoteStep;
  const r = schema.safeParse(v);
  if (r.success) return r.data;
  for (const i of r.error.issues) ctx.addIssue({ code: 'custom', message: i.message, path: i.path });
  return z.NEVER;
});
export type FaultStepT = z.infer<typeof FaultStep>;
export type NvmlStepT = z.infer<typeof NvmlStepSchema>;
export type PodsStepT = z.infer<typeof PodsStep>;

/** Per-node NVML overrides: fields merged into the generated GPUs (by index) and extra GPUs. */
const GpuOverride = z.record(z.string(), z.unknown());
const NvmlNodeOverride = z
  .object({
    driverVersion: z.string().optional(),
    cudaVersion: z.number().int().optional(),
    gpus: z.record(z.string().regex(/^\d+$/, 'must be a GPU index'), GpuOverride).optional(),
    extraGpus: z.array(GpuOverride).optional(),
  })
  .strict();

/**
 * Maintenance on a node: its NVML changes (a driver upgrade, MIG mode switched on a GPU), fields
 * merged into what the node had, and its agent restarts, as both take a GPU reset or a reboot on a
 * real node. Faults of that node still to come keep their scenario times.
 */
const NvmlStepSchema = z
  .object({ at: Duration, node: Name, nvml: NvmlNodeOverride, note: z.string().optional() })
  .strict();

/** Checks on the final cluster state, printed as pass/fail in the summary. */
export const ExpectSchema = z.union([
  z
    .object({
      node: Name,
      /** The node is gone (replaced, given back). */
      absent: z.literal(true).optional(),
      cordoned: z.boolean().optional(),
      tainted: z.string().optional(),
      /** The node does not carry this taint key (a per-GPU fence that held, issue #32). */
      notTainted: z.string().optional(),
      label: z.record(z.string(), z.string()).optional(),
      /** Allocatable quantities as the kubelet reports them (a fenced GPU leaves nvidia.com/gpu). */
      allocatable: z
        .record(
          z.string(),
          Quantity.refine((v) => typeof v === 'number' || isQuantity(v), 'not a Kubernetes quantity (2, 500m, 16Gi)'),
        )
        .optional(),
    })
    .strict(),
  z
    .object({
      pendingPods: z
        .object({
          resource: z.string().min(1),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .refine((p) => p.atLeast !== undefined || p.atMost !== undefined, { message: 'set atLeast, atMost or both' }),
    })
    .strict(),
  /** Ready nodes carrying every label of `selector` (a node pool that grew or shrank). */
  z
    .object({
      nodes: z
        .object({
          selector: z.record(z.string(), z.string()),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .refine((p) => p.atLeast !== undefined || p.atMost !== undefined, { message: 'set atLeast, atMost or both' }),
    })
    .strict(),
  z
    .object({
      event: z.string().min(1),
      node: Name.optional(),
      /** Default: at least 1 (at least 0 when only `atMost` is set). */
      atLeast: z.number().int().nonnegative().optional(),
      atMost: z.number().int().nonnegative().optional(),
      /** Only events whose detail (as JSON) contains this text: the words a Remediation says, an action. */
      says: z.string().min(1).optional(),
    })
    .strict(),
  /** Remediation events about a node, of an action, decided by a policy profile ('' = by none). */
  z
    .object({
      remediation: z
        .object({
          node: Name,
          action: z.string().min(1).optional(),
          profile: z.string().optional(),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .transform((r) => (r.atLeast === undefined && r.atMost === undefined ? { ...r, atLeast: 1 } : r)),
    })
    .strict(),
  /** Pods still running (bound, phase Running, not terminating) carrying every label of `selector`. */
  z
    .object({
      runningPods: z
        .object({
          selector: z.record(z.string(), z.string()),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .refine((p) => p.atLeast !== undefined || p.atMost !== undefined, { message: 'set atLeast, atMost or both' }),
    })
    .strict(),
  /** Pods of a namespace still bound and not terminating (a tenant never moved: issue #32), on `node` if given. */
  z
    .object({
      running: z
        .object({
          namespace: Name,
          node: Name.optional(),
          atLeast: z.number().int().nonnegative().optional(),
          atMost: z.number().int().nonnegative().optional(),
        })
        .strict()
        .refine((p) => p.atLeast !== undefined || p.atMost !== undefined, { message: 'set atLeast, atMost or both' }),
    })
    .strict(),
]);
export type Expectation = z.infer<typeof ExpectSchema>;

export const ScenarioSchema = z
  .object({
    name: z.string().min(1),
    description: z.string().default(''),
    /** Up to a week: `simulate` replays quiet hours in seconds (`local` runs them in real time). */
    durationSeconds: z
      .number()
      .positive()
      .max(7 * 24 * 3600),
    /** Virtual clock only: the instant scenario time starts at (default 2026-01-01T00:00:00Z). */
    startAt: z.iso
      .datetime({ offset: true })
      .transform((v) => Date.parse(v))
      .optional(),
    /**
     * The Kubernetes release the simulated cluster is (kube/api-versions.ts): `/version`, and which
     * resource.k8s.io (DRA) versions it serves. `featureGates` and `runtimeConfig` are kube-apiserver's
     * `--feature-gates` and `--runtime-config` (e.g. `resource.k8s.io/v1beta2` for DeviceTaintRule on 1.36).
     */
    kubernetesVersion: z.enum(KUBERNETES_VERSIONS).optional(),
    featureGates: z.record(z.string().regex(/^[A-Za-z0-9]+$/, 'a feature gate name'), z.boolean()).optional(),
    runtimeConfig: z
      .array(z.string().regex(/^[a-z0-9.-]+\/v[0-9a-z]+(=(true|false))?$/, 'group/version, or group/version=false'))
      .optional(),
    /** A fleet file path (relative to the scenario file) or an inline fleet (kube/fleet.ts format). */
    fleet: z.union([z.string().min(1), z.record(z.string(), z.unknown())]),
    agents: z
      .object({
        nodes: z.union([z.literal('all-gpu-nodes'), z.array(Name).min(1)]).default('all-gpu-nodes'),
        sampleIntervalMs: z.number().int().min(100).max(60_000).default(1000),
        /**
         * `false`: the agents run without their actuator (the DaemonSet as shipped, GPU_ACTIONS off): nobody fences,
         * resets or probes.
         */
        actuator: z.boolean().optional(),
        /** `true`: the actuators pause the GPU Operator's clients around a reset (GPU_RESET_PAUSE_OPERATOR). */
        pauseOperator: z.boolean().optional(),
        /**
         * `false`: the agents do not share the host's PID namespace, so no GPU process is traced to its
         * pod (pid → cgroup): the XIDs' attribution is unknown, and only PodResources says who holds a GPU.
         */
        hostPID: z.boolean().optional(),
      })
      .strict()
      .default({ nodes: 'all-gpu-nodes', sampleIntervalMs: 1000 }),
    nvml: z.record(Name, NvmlNodeOverride).default({}),
    /**
     * The remediation policy the functions run with (docs/remediation.md): a policy file path
     * (relative to the scenario file) or an inline policy. The simulated cluster runs the device
     * plugin each pool's `fence` backend names. Absent: REMEDIATION_POLICY_FILE, else the defaults.
     */
    policy: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /**
     * The simulated Alibaba Cloud region (docs/alicloud.md): a cloud file path (relative to the
     * scenario file) or inline. Its node pools own the fleet's nodes labelled
     * `alibabacloud.com/nodepool-id`; instances it boots join the cluster as nodes.
     */
    cloud: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /** The pool autoscaler's policy (functions/lib/pool-policy.ts), path or inline; needs `cloud`. */
    autoscale: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /** The quota rewriter's teams (functions/quota/core/config.ts), path or inline. */
    quota: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /** The node labeler's configuration (functions/labels/core/config.ts), path or inline; absent: its defaults. */
    labels: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /** idle-gpus' policy (functions/idle/core/policy.ts), path or inline; absent: its defaults (docs/cost.md). */
    idle: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /** The MIG rebalancer's policy (functions/mig/core/policy.ts: preemption), path or inline; absent: its defaults. */
    mig: z.union([z.string().min(1), z.record(z.string(), z.unknown())]).optional(),
    /**
     * The functions' settings for this scenario (README "Configuration"): MIG_*, AUTOSCALE_*,
     * QUOTA_*, REMEDIATION_*, LABELER_* variables, as text. Their files come from the fields above.
     */
    env: z
      .record(z.string(), z.string())
      .superRefine((env, ctx) => {
        for (const k of Object.keys(env)) {
          if (!/^(MIG|AUTOSCALE|QUOTA|REMEDIATION|LABELER)_[A-Z0-9_]+$/.test(k))
            ctx.addIssue({
              code: 'custom',
              path: [k],
              message: 'not a function setting: MIG_*, AUTOSCALE_*, QUOTA_*, REMEDIATION_* or LABELER_*',
            });
          else if (k.endsWith('_FILE'))
            ctx.addIssue({
              code: 'custom',
              path: [k],
              message: 'a *_FILE setting comes from its own field (policy, mig, autoscale, quota, labels)',
            });
        }
      })
      .default({}),
    timeline: z.array(TimelineStepSchema).default([]),
    expect: z.array(ExpectSchema).optional(),
    /**
     * End the run at the first whole second at which every `expect` check holds; durationSeconds is
     * then the deadline (the checks are judged there if they never all held). Needs `expect`.
     */
    endWhenMet: z.boolean().default(false),
  })
  .strict()
  .refine((s) => !s.endWhenMet || (s.expect?.length ?? 0) > 0, {
    message: 'endWhenMet needs at least one expect check',
    path: ['endWhenMet'],
  });

export type ScenarioInput = z.input<typeof ScenarioSchema>;
export type ScenarioFile = z.output<typeof ScenarioSchema>;
/** A loaded scenario: the file plus its fleet, parsed. */
export interface Scenario extends ScenarioFile {
  source: string;
  parsedFleet: ParsedFleet;
  /** The scenario's policy, checked: its text (given to the functions as a file) and what it says. */
  policyFile?: { text: string; policy: Policy };
  /** The scenario's cloud, checked (infra/local/alicloud/cloud-file.ts). */
  cloudFile?: ParsedCloudFile;
  /** The autoscaler policy's text (given to the functions as AUTOSCALE_POLICY_FILE), checked. */
  autoscaleFile?: { text: string; policy: AutoscalePolicy };
  /** The quota teams' text (given to the functions as QUOTA_CONFIG_FILE), checked. */
  quotaFile?: { text: string; config: QuotaConfig };
  /** The labeler's configuration text (given to the functions as LABELER_CONFIG_FILE), checked. */
  labelsFile?: { text: string; config: LabelerConfig };
  /** The MIG policy's text (given to the functions as MIG_POLICY_FILE), checked. */
  migFile?: { text: string; policy: MigPolicy };
  /** idle-gpus' policy text (given to the functions as IDLE_POLICY_FILE), checked. */
  idleFile?: { text: string; policy: IdlePolicy };
}

export class ScenarioError extends Error {
  override name = 'ScenarioError';
}

export const DEFAULT_SCENARIO_PATH = new URL('./scenarios/default.yaml', import.meta.url).pathname;

/** Validates a scenario object; `baseDir` resolves a fleet path. Errors list every bad field. */
export function validateScenario(raw: unknown, source = 'scenario', baseDir = process.cwd()): Scenario {
  const r = ScenarioSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new ScenarioError(`${source} is invalid:\n  ${lines.join('\n  ')}`);
  }
  const s = r.data;
  let parsedFleet: ParsedFleet;
  try {
    parsedFleet =
      typeof s.fleet === 'string' ? loadFleet(resolve(baseDir, s.fleet)) : validateFleet(s.fleet, `${source}: fleet`);
  } catch (err) {
    throw new ScenarioError(`${source}: fleet: ${(err as Error).message}`);
  }
  const problems = crossCheck(s, parsedFleet);
  if (problems.length > 0) throw new ScenarioError(`${source} is invalid:\n  ${problems.join('\n  ')}`);
  const cloudFile = s.cloud === undefined ? undefined : readCloud(s.cloud, source, baseDir, parsedFleet);
  if (s.autoscale !== undefined && !cloudFile)
    throw new ScenarioError(`${source}: autoscale: needs a cloud to scale (add \`cloud:\`)`);
  const autoscaleFile = s.autoscale === undefined ? undefined : readAutoscale(s.autoscale, source, baseDir);
  // The MIG settings as rebalance-mig reads them at its cold start: a bad one is named here.
  if (Object.keys(s.env).some((k) => k.startsWith('MIG_'))) {
    try {
      migConfig(s.env);
    } catch (err) {
      throw new ScenarioError(`${source}: env: ${(err as Error).message}`);
    }
  }
  return {
    ...s,
    source,
    parsedFleet,
    ...(s.policy !== undefined ? { policyFile: readPolicy(s.policy, source, baseDir) } : {}),
    ...(cloudFile ? { cloudFile } : {}),
    ...(autoscaleFile ? { autoscaleFile } : {}),
    ...(s.quota !== undefined ? { quotaFile: readQuota(s.quota, source, baseDir) } : {}),
    ...(s.labels !== undefined ? { labelsFile: readLabels(s.labels, source, baseDir) } : {}),
    ...(s.mig !== undefined ? { migFile: readMig(s.mig, source, baseDir) } : {}),
    ...(s.idle !== undefined ? { idleFile: readIdle(s.idle, source, baseDir) } : {}),
  };
}

function readIdle(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: IdlePolicy } {
  const { text, name } = readText(ref, 'idle', source, baseDir);
  try {
    return { text, policy: parseIdlePolicy(text, name) };
  } catch (err) {
    if (err instanceof IdlePolicyError) throw new ScenarioError(`${source}: idle: ${err.message}`);
    throw err;
  }
}

function readMig(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: MigPolicy } {
  const { text, name } = readText(ref, 'mig', source, baseDir);
  try {
    return { text, policy: parseMigPolicy(text, name) };
  } catch (err) {
    if (err instanceof MigPolicyError) throw new ScenarioError(`${source}: mig: ${err.message}`);
    throw err;
  }
}

function readLabels(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; config: LabelerConfig } {
  const { text, name } = readText(ref, 'labels', source, baseDir);
  try {
    return { text, config: parseLabelerConfig(text, name) };
  } catch (err) {
    if (err instanceof LabelerConfigError) throw new ScenarioError(`${source}: labels: ${err.message}`);
    throw err;
  }
}

function readQuota(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; config: QuotaConfig } {
  const { text, name } = readText(ref, 'quota', source, baseDir);
  try {
    return { text, config: parseQuotaConfig(text, name) };
  } catch (err) {
    if (err instanceof QuotaConfigError) throw new ScenarioError(`${source}: quota: ${err.message}`);
    throw err;
  }
}

function readText(
  ref: string | Record<string, unknown>,
  what: string,
  source: string,
  baseDir: string,
): { text: string; name: string } {
  if (typeof ref !== 'string') return { text: JSON.stringify(ref, null, 2), name: `${source} (${what})` };
  const name = resolve(baseDir, ref);
  try {
    return { text: readFileSync(name, 'utf8'), name };
  } catch (err) {
    throw new ScenarioError(
      `${source}: ${what}: cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
}

/** The cloud file; a pool's initial instances are the fleet's nodes labelled with its id. */
function readCloud(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
  fleet: ParsedFleet,
): ParsedCloudFile {
  const { text, name } = readText(ref, 'cloud', source, baseDir);
  let cloud: ParsedCloudFile;
  try {
    cloud = parseCloudFile(text, name);
  } catch (err) {
    if (err instanceof CloudFileError) throw new ScenarioError(`${source}: cloud: ${err.message}`);
    throw err;
  }
  const members = (poolId: string) =>
    fleet.nodes.flatMap((g) =>
      g.labels?.[NODEPOOL_LABEL] === poolId
        ? g.count === undefined
          ? [g.name]
          : Array.from({ length: g.count }, (_, i) => `${g.name}-${i}`)
        : [],
    );
  return {
    ...cloud,
    pools: cloud.pools.map((p) => ({
      ...p,
      nodeNames: p.nodeNames.length > 0 ? p.nodeNames : members(p.id),
      size: Math.max(p.size, (p.nodeNames.length > 0 ? p.nodeNames : members(p.id)).length),
    })),
  };
}

function readAutoscale(
  ref: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: AutoscalePolicy } {
  const { text, name } = readText(ref, 'autoscale', source, baseDir);
  try {
    return { text, policy: parseAutoscalePolicy(text, name) };
  } catch (err) {
    if (err instanceof AutoscalePolicyError) throw new ScenarioError(`${source}: autoscale: ${err.message}`);
    throw err;
  }
}

/** The scenario's policy, loaded as the functions will load it: a bad one names its file, line and field. */
function readPolicy(
  policy: string | Record<string, unknown>,
  source: string,
  baseDir: string,
): { text: string; policy: Policy } {
  let text: string;
  let name: string;
  if (typeof policy === 'string') {
    name = resolve(baseDir, policy);
    try {
      text = readFileSync(name, 'utf8');
    } catch (err) {
      throw new ScenarioError(
        `${source}: policy: cannot read ${name}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      );
    }
  } else {
    name = `${source} (policy)`;
    text = JSON.stringify(policy, null, 2);
  }
  try {
    return { text, policy: loadPolicyFile(text, name).policy };
  } catch (err) {
    if (err instanceof PolicyFileError) throw new ScenarioError(`${source}: policy:\n  ${err.problems.join('\n  ')}`);
    throw err;
  }
}

/** Names that must exist in the fleet, and times inside the run. */
function crossCheck(s: ScenarioFile, fleet: ParsedFleet): string[] {
  const nodes = new Set(
    fleet.nodes.flatMap((g) =>
      g.count === undefined ? [g.name] : Array.from({ length: g.count }, (_, i) => `${g.name}-${i}`),
    ),
  );
  const out: string[] = [];
  if (Array.isArray(s.agents.nodes))
    s.agents.nodes.forEach((n, i) => nodes.has(n) || out.push(`agents.nodes.${i}: no node "${n}" in the fleet`));
  for (const n of Object.keys(s.nvml)) if (!nodes.has(n)) out.push(`nvml.${n}: no node "${n}" in the fleet`);
  s.timeline.forEach((step, i) => {
    if (step.at > s.durationSeconds * 1000)
      out.push(`timeline.${i}.at: ${step.at} ms is after the end (durationSeconds ${s.durationSeconds})`);
    if ('node' in step && !nodes.has(step.node)) out.push(`timeline.${i}.node: no node "${step.node}" in the fleet`);
  });
  return out;
}

export function parseScenario(text: string, source = 'scenario', baseDir = process.cwd()): Scenario {
  let raw: unknown;
  try {
    raw = parseYamlText(text);
  } catch (err) {
    throw new ScenarioError(`${source}: not YAML or JSON: ${(err as Error).message}`);
  }
  return validateScenario(raw ?? {}, source, baseDir);
}

export function loadScenario(path: string): Scenario {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ScenarioError(
      `cannot read scenario ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
    );
  }
  return parseScenario(text, path, dirname(resolve(path)));
}
