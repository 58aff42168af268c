/**
 * The node-agent's configuration: environment variables, parsed ONCE at start with zod, frozen.
 * Every variable is documented in docs/node-agent.md, section Environment (name, default,
 * meaning); keep the two in step. Errors name the variable, so a bad DaemonSet manifest says
 * exactly what to fix.
 */
import { hostname } from 'node:os';
import * as z from 'zod';

const MiB = 1024 * 1024;

const ms = (fallback: number) => z.coerce.number().int().positive().default(fallback);
const percent = (fallback: number) => z.coerce.number().min(0).max(100).default(fallback);
const celsius = (fallback: number) => z.coerce.number().min(0).max(150).default(fallback);
const optionalText = z.string().trim().min(1).optional();

const EnvSchema = z.object({
  NODE_NAME: optionalText,
  // Kubernetes sets this in every pod; its presence is how we know we run in-cluster.
  KUBERNETES_SERVICE_HOST: optionalText,
  EVENT_BUS_NAME: z.string().trim().min(1).default('gpu-reflex'),
  AWS_REGION: optionalText,
  /** Set: events go to Alibaba Cloud EventBridge's data plane (publisher/alibaba-sender.ts), not AWS. */
  ALIBABA_EVENTBRIDGE_ENDPOINT: z
    .string()
    .trim()
    .regex(
      /^[A-Za-z0-9.-]+(:\d+)?$/,
      'a host (and port), without a scheme: <account id>.eventbridge.<region>.aliyuncs.com',
    )
    .optional(),
  /** `http` only for a loopback simulator. */
  ALIBABA_CLOUD_PROTOCOL: z.enum(['http', 'https']).default('https'),
  NVML_LIBRARY_PATH: z.string().trim().min(1).default('libnvidia-ml.so.1'),
  SAMPLE_INTERVAL_MS: ms(5_000),
  /**
   * How long repeats of an application XID are held and counted (xid-aggregate.ts). At least 1 s; at
   * most 10 min, so held repeats reach remediate within the shortest escalation window people write.
   */
  XID_AGGREGATE_WINDOW_MS: z.coerce.number().int().min(1_000).max(600_000).default(60_000),
  UTILIZATION_WINDOW_MS: ms(60_000),
  INVENTORY_INTERVAL_MS: ms(300_000),
  GPU_UTIL_HIGH_PERCENT: percent(95),
  GPU_UTIL_HIGH_FOR_MS: ms(300_000),
  FB_USED_HIGH_PERCENT: percent(90),
  TEMP_WARN_C: celsius(80),
  TEMP_CRIT_C: celsius(85),
  POWER_HIGH_PERCENT: percent(90),
  HYSTERESIS_PERCENT: percent(5),
  SPOOL_PATH: z.string().trim().min(1).default('/var/lib/gpu-reflex/spool.jsonl'),
  SPOOL_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(64 * 1024)
    .default(64 * MiB),
  DEAD_LETTER_PATH: z.string().trim().min(1).default('/var/lib/gpu-reflex/dead-letter.jsonl'),
  BATCH_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(200),
  PUBLISH_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5),
  PUBLISH_PROBE_INTERVAL_MS: ms(10_000),
  HTTP_PORT: z.coerce.number().int().min(0).max(65_535).default(9400),
  /** Events waiting this long with nothing delivered: /healthz degraded (agent-health.ts). */
  DELIVERY_STALL_MINUTES: z.coerce.number().int().min(1).max(1440).default(10),
  KMSG_PATH: z.string().trim().min(1).default('/dev/kmsg'),
  // Where the kernel-log follower got to (kmsg/cursor.ts); unset: beside the spool, `<SPOOL_PATH>.kmsg.json`.
  KMSG_CURSOR_PATH: optionalText,
  PROC_ROOT: z.string().trim().min(1).default('/proc'),
  // The kubelet's PodResources socket (kubernetes/enhancements#2761): which pods hold which GPU.
  POD_RESOURCES_SOCKET: z.string().trim().min(1).default('/var/lib/kubelet/pod-resources/kubelet.sock'),
  POD_LOG_DIR: z.string().trim().min(1).default('/var/log/pods'),
  // Off where dcgm-exporter already runs on the node: otherwise every DCGM_FI_* series doubles (docs/node-agent.md).
  DCGM_METRICS: z.stringbool().default(true),
  EXPECTED_GPUS: z.coerce.number().int().min(1).max(64).optional(),
  DRY_RUN: z.stringbool().default(false),
  // The actuator (GPU actions the functions ask for in the Node annotation gpu-reflex.io/gpu-actions).
  GPU_ACTIONS: z.stringbool().default(false),
  GPU_ACTIONS_INTERVAL_MS: ms(5_000),
  FENCE_FILE: z.string().trim().min(1).default('/etc/nvidia-device-plugin/unhealthyDevices.json'),
  NVIDIA_SMI: z.string().trim().min(1).default('nvidia-smi'),
  DCGMI: z.string().trim().min(1).default('dcgmi'),
  // Opt-in: a reset pauses the GPU Operator's clients on the node first (actuator/operator-pause.ts).
  GPU_RESET_PAUSE_OPERATOR: z.stringbool().default(false),
  GPU_OPERATOR_NAMESPACE: z.string().trim().min(1).default('gpu-operator'),
  GPU_RESET_PAUSE_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(1_800_000).default(300_000),
  // The device plugin's health at each actuator tick (plugin-health.ts): NVML's GPUs against the Node's.
  DEVICE_PLUGIN_CHECK: z.stringbool().default(true),
  DEVICE_PLUGIN_LOG_PODS: z.string().trim().min(1).default('kube-system_nvidia-device-plugin'),
  /** Outside a cluster: where the Node is read from. In-cluster the ServiceAccount is used. */
  KUBECONFIG: optionalText,
});

export interface AgentConfig {
  readonly nodeName: string;
  readonly eventBusName: string;
  /** Alibaba Cloud EventBridge's data plane, where events go instead of AWS (issue #35). */
  readonly alibabaEventBridge?: { readonly endpoint: string; readonly protocol: 'http' | 'https' };
  /** Undefined: the AWS SDK's own resolution (profile, IMDS) decides. */
  readonly awsRegion: string | undefined;
  readonly nvmlLibraryPath: string;
  readonly sampleIntervalMs: number;
  /** XID_AGGREGATE_WINDOW_MS: the window repeats of an application XID are held and counted over. */
  readonly xidAggregateWindowMs: number;
  readonly utilizationWindowMs: number;
  readonly inventoryIntervalMs: number;
  readonly thresholds: Readonly<{
    gpuUtilHighPercent: number;
    gpuUtilHighForMs: number;
    fbUsedHighPercent: number;
    tempWarnC: number;
    tempCritC: number;
    /** Neither TEMP_WARN_C nor TEMP_CRIT_C set: each GPU's own limits decide (80/85 °C where it has none). */
    tempFromGpu: boolean;
    powerHighPercent: number;
    hysteresisPercent: number;
  }>;
  readonly spoolPath: string;
  readonly spoolMaxBytes: number;
  readonly deadLetterPath: string;
  readonly batchDelayMs: number;
  readonly publishMaxAttempts: number;
  readonly publishProbeIntervalMs: number;
  readonly httpPort: number;
  /** /healthz says degraded when events wait and nothing was delivered for this long (ms). */
  readonly deliveryStallMs: number;
  readonly kmsgPath: string;
  /** The kernel-log cursor (boot id, last record's sequence number): what the next run starts after. */
  readonly kmsgCursorPath: string;
  readonly procRoot: string;
  /** The kubelet's PodResources v1 socket; absent or unreadable: who holds a GPU is unknown. */
  readonly podResourcesSocket: string;
  /** The kubelet's pod log directories (`<namespace>_<pod>_<uid>`): pod names for /metrics. */
  readonly podLogDir: string;
  /** Export the GPUs under dcgm-exporter's DCGM_FI_* names (DCGM_METRICS; default on). */
  readonly dcgmMetrics: boolean;
  /** How many GPUs this node should have (its instance type's); fewer at start fires `gpu-count`. */
  readonly expectedGpus: number | undefined;
  /** Publish nothing: events are logged instead of sent (wired as a decorator on the sender). */
  readonly dryRun: boolean;
  /** The actuator: off unless GPU_ACTIONS=true (it needs the Node, the fence file's hostPath and nvidia-smi). */
  readonly gpuActions: Readonly<{
    enabled: boolean;
    intervalMs: number;
    fenceFile: string;
    nvidiaSmi: string;
    /** DCGM's CLI, for a probe that asks for its diagnostic (`dcgmi diag`). */
    dcgmi: string;
    /** Opt-in: pause the GPU Operator's clients around a reset (off: the reset runs with them in place). */
    pauseOperator: Readonly<{ enabled: boolean; namespace: string; timeoutMs: number }>;
    kubeconfig: string | undefined;
    inCluster: boolean;
  }>;
  /**
   * The device plugin check (plugin-health.ts), run with the actuator: on unless DEVICE_PLUGIN_CHECK=false
   * (a DRA-only node advertises no device plugin resource). `logPods`: the plugin's pod log directories'
   * prefix under POD_LOG_DIR (`<namespace>_<pod name prefix>`), where its known error lines are read.
   */
  readonly devicePlugin: Readonly<{ check: boolean; logPods: string }>;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadAgentConfig(env: Record<string, string | undefined> = process.env): AgentConfig {
  // An empty variable (`FOO=`) means "not set", as in most shells' and manifests' intent.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map(
      (i) =>
        `${String(i.path[0] ?? 'environment')}: ${i.message} ` +
        `(got ${JSON.stringify(cleaned[String(i.path[0])] ?? null)})`,
    );
    throw new ConfigError(`invalid node-agent environment:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  if (e.NODE_NAME === undefined && e.KUBERNETES_SERVICE_HOST !== undefined) {
    throw new ConfigError('NODE_NAME: required in-cluster; set it from the downward API (fieldRef: spec.nodeName)');
  }
  if (e.GPU_ACTIONS && e.KUBECONFIG === undefined && e.KUBERNETES_SERVICE_HOST === undefined) {
    throw new ConfigError(
      "GPU_ACTIONS: the actuator reads this node's Node object; set KUBECONFIG, or run it in-cluster",
    );
  }
  if (e.TEMP_WARN_C >= e.TEMP_CRIT_C) {
    throw new ConfigError(`TEMP_WARN_C (${e.TEMP_WARN_C}) must be below TEMP_CRIT_C (${e.TEMP_CRIT_C})`);
  }
  const config: AgentConfig = {
    nodeName: e.NODE_NAME ?? hostname(),
    eventBusName: e.EVENT_BUS_NAME,
    ...(e.ALIBABA_EVENTBRIDGE_ENDPOINT
      ? {
          alibabaEventBridge: Object.freeze({
            endpoint: e.ALIBABA_EVENTBRIDGE_ENDPOINT,
            protocol: e.ALIBABA_CLOUD_PROTOCOL,
          }),
        }
      : {}),
    awsRegion: e.AWS_REGION,
    nvmlLibraryPath: e.NVML_LIBRARY_PATH,
    sampleIntervalMs: e.SAMPLE_INTERVAL_MS,
    xidAggregateWindowMs: e.XID_AGGREGATE_WINDOW_MS,
    utilizationWindowMs: e.UTILIZATION_WINDOW_MS,
    inventoryIntervalMs: e.INVENTORY_INTERVAL_MS,
    thresholds: Object.freeze({
      gpuUtilHighPercent: e.GPU_UTIL_HIGH_PERCENT,
      gpuUtilHighForMs: e.GPU_UTIL_HIGH_FOR_MS,
      fbUsedHighPercent: e.FB_USED_HIGH_PERCENT,
      tempWarnC: e.TEMP_WARN_C,
      tempCritC: e.TEMP_CRIT_C,
      tempFromGpu: cleaned.TEMP_WARN_C === undefined && cleaned.TEMP_CRIT_C === undefined,
      powerHighPercent: e.POWER_HIGH_PERCENT,
      hysteresisPercent: e.HYSTERESIS_PERCENT,
    }),
    spoolPath: e.SPOOL_PATH,
    spoolMaxBytes: e.SPOOL_MAX_BYTES,
    deadLetterPath: e.DEAD_LETTER_PATH,
    batchDelayMs: e.BATCH_DELAY_MS,
    publishMaxAttempts: e.PUBLISH_MAX_ATTEMPTS,
    publishProbeIntervalMs: e.PUBLISH_PROBE_INTERVAL_MS,
    httpPort: e.HTTP_PORT,
    deliveryStallMs: e.DELIVERY_STALL_MINUTES * 60_000,
    kmsgPath: e.KMSG_PATH,
    kmsgCursorPath: e.KMSG_CURSOR_PATH ?? `${e.SPOOL_PATH}.kmsg.json`,
    procRoot: e.PROC_ROOT,
    podResourcesSocket: e.POD_RESOURCES_SOCKET,
    podLogDir: e.POD_LOG_DIR,
    dcgmMetrics: e.DCGM_METRICS,
    expectedGpus: e.EXPECTED_GPUS,
    dryRun: e.DRY_RUN,
    gpuActions: Object.freeze({
      enabled: e.GPU_ACTIONS,
      intervalMs: e.GPU_ACTIONS_INTERVAL_MS,
      fenceFile: e.FENCE_FILE,
      nvidiaSmi: e.NVIDIA_SMI,
      dcgmi: e.DCGMI,
      pauseOperator: Object.freeze({
        enabled: e.GPU_RESET_PAUSE_OPERATOR,
        namespace: e.GPU_OPERATOR_NAMESPACE,
        timeoutMs: e.GPU_RESET_PAUSE_TIMEOUT_MS,
      }),
      kubeconfig: e.KUBECONFIG,
      inCluster: e.KUBERNETES_SERVICE_HOST !== undefined,
    }),
    devicePlugin: Object.freeze({ check: e.DEVICE_PLUGIN_CHECK, logPods: e.DEVICE_PLUGIN_LOG_PODS }),
  };
  return Object.freeze(config);
}
