/**
 * The actuator's wiring and loop, in a module of its own so that agent-runtime.ts can load it only when
 * GPU_ACTIONS is on: it is the one part of the agent that needs the Kubernetes client, and that client
 * is most of the agent's memory (docs/node-agent.md "Memory"). node-agent/agent-bundle.test.ts keeps
 * this module and the client off the agent's start-up path.
 *
 * `wireActuator` is the one wiring of a GpuActuator: the agent's runtime passes the node's real tools
 * (`actuatorFromConfig`), the embedded stack's in-process agents pass the mock NVML's (infra/local/agent-host.ts).
 */
import { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { GpuActuator } from './actuator/actuator.ts';
import { dcgmiProcess, runDcgmDiag, type DcgmiRun } from './actuator/dcgm-diag.ts';
import { FenceFile } from './actuator/fence-file.ts';
import { nvmlMigInventory } from './actuator/mig-inventory.ts';
import { kubeNode, nvidiaSmiReset, nvmlGpus, type GpuReset } from './actuator/ports.ts';
import { OperatorPause } from './actuator/operator-pause.ts';
import { kubeOperatorClients, nvidiaSmiPersistence } from './actuator/operator-ports.ts';
import type { Agent, EventSink } from './agent.ts';
import type { Clock } from './clock.ts';
import type { AgentConfig } from './config.ts';
import { gpuActionResultEvent } from './events.ts';
import type { LoopSpec } from './loops.ts';
import { allocatableByGpu, podResourcesSource } from './collectors/pod-resources-source.ts';
import { kubeNodeView, PluginHealthCheck, pluginErrorLines } from './plugin-health.ts';
import { kubeNodeSlices } from './plugin-dra.ts';
import type { Nvml } from './nvml/nvml.ts';
import type { PublisherLog } from './publisher/types.ts';

export interface ActuatorWiring {
  core: CoreV1Api;
  /** resource.k8s.io reads: the device plugin check recognises a DRA node by its ResourceSlice (plugin-dra.ts). */
  custom?: Pick<CustomObjectsApi, 'listClusterCustomObject'>;
  node: string;
  nvml: Nvml;
  agent: Agent;
  sink: EventSink;
  clock: Pick<Clock, 'now'>;
  fenceFile: string;
  /** How a GPU is reset (`nvidia-smi --gpu-reset`; the mock's reset in the embedded stack). */
  reset: GpuReset;
  /** DCGM's CLI, for a probe that asks for its diagnostic (actuator/dcgm-diag.ts); absent: none runs. */
  dcgmi?: DcgmiRun;
  /** Persistence mode, read and set around a reset (`nvidia-smi -pm`). */
  persistence: ReturnType<typeof nvidiaSmiPersistence>;
  /** Opt-in (GPU_RESET_PAUSE_OPERATOR): a reset pauses the GPU Operator's clients (actuator/operator-pause.ts). */
  pauseOperator?: { namespace: string; timeoutMs: number };
  /** The kubelet's PodResources socket: a fence under NVIDIA's plugin is verified by its device IDs. */
  podResourcesSocket: string;
  /** The device plugin's pod logs (plugin-health.ts): absent, its health is not checked (DEVICE_PLUGIN_CHECK=false). */
  devicePlugin?: { logDir: string; logPods: string };
  dryRun: boolean;
  log: (line: string) => void;
  /** Where the device plugin check's findings go (default `log`). */
  warn?: (line: string) => void;
}

/** The actuator and, where checked, the device plugin's health, read at each of its ticks. */
export interface WiredActuator {
  actuator: GpuActuator;
  plugin?: PluginHealthCheck;
}

export function wireActuator(w: ActuatorWiring): WiredActuator {
  const gpus = nvmlGpus(w.nvml, w.reset);
  const podResources = podResourcesSource(w.podResourcesSocket);
  const pause = w.pauseOperator
    ? new OperatorPause({
        port: kubeOperatorClients(w.core, w.node, w.pauseOperator.namespace),
        pauseTimeoutMs: w.pauseOperator.timeoutMs,
        now: () => w.clock.now(),
        holders: (uuid) => gpus.holders(uuid),
        reset: (uuid) => gpus.reset(uuid),
        persistence: w.persistence.read,
        setPersistence: w.persistence.set,
        log: w.log,
      })
    : undefined;
  const actuator = new GpuActuator({
    node: w.node,
    nodeApi: kubeNode(w.core, w.node),
    gpus,
    ...(pause ? { pause } : {}),
    fence: new FenceFile(w.fenceFile),
    migInventory: nvmlMigInventory(w.nvml, (pid) => w.agent.podOfPid(pid)),
    xids: (uuid, since) => w.agent.xidsSince(uuid, since),
    ...(w.dcgmi ? { diag: (index, level) => runDcgmDiag(w.dcgmi!, index, level) } : {}),
    // PodResources' allocatable device IDs, by GPU: a fence under NVIDIA's plugin is verified by them.
    devices: async () => allocatableByGpu(await podResources.read(), w.agent.gpuIdentities()),
    publish: async (_type, detail) => void w.sink.publish(gpuActionResultEvent(detail)),
    now: () => w.clock.now(),
    ...(w.dryRun ? { dryRun: true } : {}),
    log: w.log,
  });
  const plugin = w.devicePlugin
    ? new PluginHealthCheck({
        nodeName: w.node,
        readNode: kubeNodeView(w.core, w.node),
        ...(w.custom ? { readSlices: kubeNodeSlices(w.custom, w.node) } : {}),
        errorLines: () => pluginErrorLines(w.devicePlugin!.logDir, w.devicePlugin!.logPods),
        log: w.warn ?? w.log,
      })
    : undefined;
  return { actuator, ...(plugin ? { plugin } : {}) };
}

/**
 * The actuator's loop: reads this node's GPU actions `everyMs` after its last pass
 * (docs/node-agent.md "The actuator"), then, whatever the pass did, the device plugin's health
 * (plugin-health.ts), its mismatches published.
 */
export function actuatorLoop(
  wired: WiredActuator,
  everyMs: number,
  o: { agent: Agent; sink: EventSink; clock: Pick<Clock, 'now'>; log: PublisherLog },
): LoopSpec {
  const run = async (): Promise<void> => {
    try {
      await wired.actuator.tick();
    } finally {
      const mismatch = await wired.plugin?.check(o.clock.now(), o.agent.latestInventory).catch((err: unknown) => {
        o.log.error('device plugin check failed', { error: err instanceof Error ? err.message : String(err) });
        return [];
      });
      for (const e of mismatch ?? []) o.sink.publish(e);
    }
  };
  return { name: 'gpu actions', everyMs, cadence: 'delay', run };
}

/** The agent's actuator from its config: the in-cluster (or GPU_ACTIONS_KUBECONFIG) client and nvidia-smi. */
export function actuatorFromConfig(o: {
  config: AgentConfig;
  nvml: Nvml;
  agent: Agent;
  sink: EventSink;
  clock: Pick<Clock, 'now'>;
  dryRun: boolean;
  log: PublisherLog;
}): LoopSpec {
  const a = o.config.gpuActions;
  const kc = new KubeConfig();
  if (a.kubeconfig) kc.loadFromFile(a.kubeconfig);
  else kc.loadFromCluster();
  const wired = wireActuator({
    core: kc.makeApiClient(CoreV1Api),
    custom: kc.makeApiClient(CustomObjectsApi),
    node: o.config.nodeName,
    nvml: o.nvml,
    agent: o.agent,
    sink: o.sink,
    clock: o.clock,
    fenceFile: a.fenceFile,
    reset: nvidiaSmiReset(a.nvidiaSmi),
    dcgmi: dcgmiProcess(a.dcgmi),
    persistence: nvidiaSmiPersistence(a.nvidiaSmi),
    ...(a.pauseOperator.enabled
      ? { pauseOperator: { namespace: a.pauseOperator.namespace, timeoutMs: a.pauseOperator.timeoutMs } }
      : {}),
    podResourcesSocket: o.config.podResourcesSocket,
    ...(o.config.devicePlugin.check
      ? { devicePlugin: { logDir: o.config.podLogDir, logPods: o.config.devicePlugin.logPods } }
      : {}),
    dryRun: o.dryRun,
    log: (line) => o.log.info(line),
    warn: (line) => o.log.warn(line),
  });
  o.log.info('actuator started', {
    fenceFile: a.fenceFile,
    nvidiaSmi: a.nvidiaSmi,
    everyMs: a.intervalMs,
    pauseOperator: a.pauseOperator.enabled ? a.pauseOperator.namespace : false,
  });
  return actuatorLoop(wired, a.intervalMs, o);
}
