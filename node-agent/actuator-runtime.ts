/**
 * The actuator's wiring and loop, in a module of its own so that agent-runtime.ts can load it only when
 * GPU_ACTIONS is on: it is the one part of the agent that needs the Kubernetes client, and that client
 * is most of the agent's memory (docs/node-agent.md "Memory"). node-agent/agent-bundle.test.ts keeps
 * this module and the client off the agent's start-up path.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { GpuActuator } from './actuator/actuator.ts';
import { FenceFile } from './actuator/fence-file.ts';
import { kubeNode, nvidiaSmiReset, nvmlGpus, nvmlMigInventory } from './actuator/ports.ts';
import { OperatorPause } from './actuator/operator-pause.ts';
import { kubeOperatorClients, nvidiaSmiPersistence } from './actuator/operator-ports.ts';
import type { Agent, EventSink } from './agent.ts';
import type { RunAgentOptions } from './agent-runtime.ts';
import type { AgentConfig } from './config.ts';
import { gpuActionResultEvent } from './events.ts';
import { allocatableByGpu, podResourcesSource } from './collectors/pod-resources-source.ts';
import type { Nvml } from './nvml/nvml.ts';
import type { PublisherLog } from './publisher/types.ts';
import { kubeNodeView, PluginHealthCheck, pluginErrorLines } from './plugin-health.ts';

/** The actuator's loop: reads this node's GPU actions every `intervalMs` (docs/node-agent.md "The actuator"). */
export async function runActuator(
  nvml: Nvml,
  sink: EventSink,
  config: AgentConfig,
  o: RunAgentOptions,
  log: PublisherLog,
  agent: Agent,
): Promise<void> {
  const a = config.gpuActions;
  const kc = new KubeConfig();
  if (a.kubeconfig) kc.loadFromFile(a.kubeconfig);
  else kc.loadFromCluster();
  const core = kc.makeApiClient(CoreV1Api);
  const gpus = nvmlGpus(nvml, nvidiaSmiReset(a.nvidiaSmi));
  const podResources = podResourcesSource(config.podResourcesSocket);
  // Opt-in, chosen here once: a reset pauses the GPU Operator's clients (actuator/operator-pause.ts).
  const persistence = nvidiaSmiPersistence(a.nvidiaSmi);
  const pause = a.pauseOperator.enabled
    ? new OperatorPause({
        port: kubeOperatorClients(core, config.nodeName, a.pauseOperator.namespace),
        pauseTimeoutMs: a.pauseOperator.timeoutMs,
        now: Date.now,
        holders: (uuid) => gpus.holders(uuid),
        reset: (uuid) => gpus.reset(uuid),
        persistence: persistence.read,
        setPersistence: persistence.set,
        log: (line) => log.info(line),
      })
    : undefined;
  const actuator = new GpuActuator({
    node: config.nodeName,
    nodeApi: kubeNode(core, config.nodeName),
    gpus,
    ...(pause ? { pause } : {}),
    fence: new FenceFile(a.fenceFile),
    migInventory: nvmlMigInventory(nvml, (pid) => agent.podOfPid(pid)),
    xids: (uuid, since) => agent.xidsSince(uuid, since),
    // PodResources' allocatable device IDs, by GPU: a fence under NVIDIA's plugin is verified by them.
    devices: async () => allocatableByGpu(await podResources.read(), agent.gpuIdentities()),
    publish: async (_type, detail) => void sink.publish(gpuActionResultEvent(detail)),
    now: Date.now,
    dryRun: o.print === true,
    log: (line) => log.info(line),
  });
  // The device plugin's health, read with the actuator's Node access at each of its ticks (plugin-health.ts).
  const plugin = config.devicePlugin.check
    ? new PluginHealthCheck({
        nodeName: config.nodeName,
        readNode: kubeNodeView(core, config.nodeName),
        errorLines: () => pluginErrorLines(config.podLogDir, config.devicePlugin.logPods),
        log: (line) => log.warn(line),
      })
    : undefined;
  log.info('actuator started', {
    fenceFile: a.fenceFile,
    nvidiaSmi: a.nvidiaSmi,
    everyMs: a.intervalMs,
    pauseOperator: a.pauseOperator.enabled ? a.pauseOperator.namespace : false,
  });
  while (!o.stop.aborted) {
    await actuator
      .tick()
      .catch((err: unknown) =>
        log.error('gpu actions failed', { error: err instanceof Error ? err.message : String(err) }),
      );
    const mismatch = await plugin?.check(Date.now(), agent.latestInventory).catch((err: unknown) => {
      log.error('device plugin check failed', { error: err instanceof Error ? err.message : String(err) });
      return [];
    });
    for (const e of mismatch ?? []) sink.publish(e);
    await sleep(a.intervalMs, undefined, { signal: o.stop }).catch(() => undefined);
  }
}
