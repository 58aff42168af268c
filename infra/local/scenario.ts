import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseYamlText } from '../../functions/lib/yaml-text.ts';
import * as z from 'zod';
import { loadFleet, validateFleet, type ParsedFleet } from './kube/fleet.ts';
import { KUBERNETES_VERSIONS } from './kube/api-versions.ts';
import type { Policy } from '../../functions/remediate/core/policy.ts';
import type { AutoscalePolicy } from '../../functions/lib/pool-policy.ts';
import type { ParsedCloudFile } from './alicloud/cloud-file.ts';
import type { QuotaConfig } from '../../functions/quota/core/config.ts';
import type { LabelerConfig } from '../../functions/labels/core/config.ts';
import type { IdlePolicy } from '../../functions/idle/core/policy.ts';
import type { MigPolicy } from '../../functions/mig/core/policy.ts';
import { migConfig } from '../../functions/mig/wiring.ts';
import { Name } from './scenario-fields.ts';
import { NvmlNodeOverride, TimelineStepSchema } from './scenario-timeline.ts';
import { ExpectSchema } from './scenario-expect.ts';
import { ScenarioError } from './scenario-error.ts';
import { readAutoscale, readCloud, readIdle, readLabels, readMig, readPolicy, readQuota } from './scenario-files.ts';

export { parseDuration, FaultSchema, PodArrivalSchema, type Fault, type PodArrival } from './scenario-fields.ts';
export {
  TimelineStepSchema,
  type AfterRebootStepT,
  type DevicePluginStepT,
  type FaultStepT,
  type FenceFileStepT,
  type JoinStepT,
  type NvmlStepT,
  type PodsStepT,
  type TimelineStep,
  type UngateStepT,
} from './scenario-timeline.ts';
export { ExpectSchema, type Expectation } from './scenario-expect.ts';
export { ScenarioError } from './scenario-error.ts';

/**
 * The scenario file of the local stack (`gpu-reflex local|simulate --scenario FILE`): a fleet,
 * which nodes run an agent, and a timeline of what happens. YAML or JSON, validated with zod so
 * every mistake names its field (`timeline.2.fault.xid: ...`). Faults are injected at the NVML
 * layer (they become the node's mock NVML `faults`); pod arrivals go through the Kubernetes API.
 * Nothing in a scenario can put an event on the bus directly: what the timeline shows is what the
 * components did. Format: docs/local-stack.md.
 */

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
