import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, VirtualClock } from '../../events/clock.ts';
import { injectClock } from '../../functions/adapters/clock.ts';
import { startLocalBus } from './bus/index.ts';
import type { StackBus } from './bus/alibaba-bus.ts';
import { startAlibabaTarget } from './stack-alibaba.ts';
import { ClusterObserver } from './cluster-observer.ts';
import { buildMockNvml } from './mock-nvml/build.ts';
import { nodeDir } from './node-files.ts';
import type { Node } from './kube/types.ts';
import type { FaultStepT, Scenario } from './scenario.ts';
import { StackKube } from './stack-kube.ts';
import { StackRecorder } from './stack-recorder.ts';
import { startAgentProcesses, startInProcessAgents } from './stack-agents.ts';
import { DevicePluginStandIn, type DevicePluginKind } from './device-plugin.ts';
import { cardsOf } from './kube/gpushare.ts';
import { GpuOperatorClients } from './gpu-operator.ts';
import { remediationConfig } from '../../functions/remediate/wiring.ts';
import { fenceBackendOf, poolOf } from '../../functions/remediate/core/policy.ts';
import type { TimelineEntry } from './timeline.ts';
import { functionEnv, LOCAL_BUS_NAME, REPO_ROOT, withEnv } from './stack-env.ts';
import { startStackCloud } from './stack-cloud.ts';
import { startCluster } from './stack-cluster.ts';
import { applyScenarioSettings } from './stack-settings.ts';
import { StackNodes } from './stack-nodes.ts';
import { ScenarioSteps } from './stack-steps.ts';
import { runScenario } from './stack-run.ts';
import type { LocalStack, StackOptions } from './stack-types.ts';

export type { LocalStack, StackOptions, StackResult } from './stack-types.ts';

/**
 * Starts the whole pipeline (stack-types.ts StackOptions), one step after another: the cluster
 * (stack-cluster.ts), the scenario's settings for the functions (stack-settings.ts), the bus, the
 * recorder, the simulated Alibaba Cloud (stack-cloud.ts), the agent nodes' mock NVML (stack-nodes.ts),
 * the agents and the device plugins; `run()` then carries out the timeline (stack-steps.ts,
 * stack-run.ts).
 */
export async function startStack(scenario: Scenario, o: StackOptions): Promise<LocalStack> {
  const progress = (s: string) => o.out(o.colour ? `\u001b[2m${s}\u001b[0m` : s);
  const virtual = o.clock === 'virtual';
  // A real cluster keeps its own time: functions on a virtual clock would disagree with its
  // timestamps and Lease expiry, so a virtual run needs the simulated cluster.
  if (virtual && o.kubeconfig)
    throw new Error(
      'a virtual clock needs the simulated cluster: --kubeconfig works with `local` (the wall clock) only',
    );
  const wallStart = Date.now();
  // Short: each node's PodResources socket lies below it, and a unix socket path has at most 107 bytes
  // (sun_path, unix(7)); a long scenario name under a test's temp dir left the kubelet socket unserved.
  const work = mkdtempSync(
    join(tmpdir(), `gpu-reflex-local-${scenario.name.replace(/[^a-z0-9-]/gi, '').slice(0, 12)}-`),
  );
  // One clock for everything. Virtual: the agents, the bus, the simulated cluster and the
  // functions (injectClock) all read this one, starting at the scenario's `startAt`.
  const vclock = virtual ? new VirtualClock(scenario.startAt ?? Date.UTC(2026, 0, 1)) : undefined;
  const busClock = vclock ?? systemClock;
  const agentClock = vclock ?? systemClock;
  let t0 = busClock.now();
  const sinceStart = () => busClock.now() - t0;
  // What was started, undone in reverse order at the end, or at once if starting fails.
  const cleanups: (() => unknown)[] = [() => rmSync(work, { recursive: true, force: true })];
  if (vclock) {
    // A function's sleep (a drain's pause) moves the one clock itself: the bus is awaiting that
    // invocation, so nothing else would move time and a plain virtual sleep would never end.
    injectClock({ now: () => vclock.now(), sleep: async (ms) => vclock.advance(ms) });
    cleanups.push(() => injectClock(undefined));
  }
  const cleanup = async () => {
    for (const c of cleanups.reverse())
      await Promise.resolve()
        .then(c)
        .catch(() => undefined);
    cleanups.length = 0;
  };
  try {
    progress(`scenario ${scenario.name}: ${scenario.description.trim().split('\n')[0] ?? ''}`);
    progress('building the mock NVML library (cc) ...');
    const library = await buildMockNvml();

    const { sim, kubeconfig, functionsKubeconfig, agentKubeconfig } = await startCluster(scenario, {
      kubeconfig: o.kubeconfig,
      virtual,
      vclock,
      work,
      progress,
      cleanups,
    });
    const kube = new StackKube(kubeconfig);

    progress(
      o.target === 'alibaba'
        ? 'starting Alibaba EventBridge and Function Compute from the ROS template ...'
        : 'starting the event bus with serverless.yml ...',
    );
    const busName = LOCAL_BUS_NAME;
    cleanups.push(withEnv(functionEnv({ kubeconfig: functionsKubeconfig!, busUrl: 'http://pending', busName })));
    applyScenarioSettings(scenario, o, { work, progress, cleanups });
    const policy = scenario.policyFile?.policy ?? remediationConfig(process.env).own.policy;
    const busOptions = {
      serverlessYml: o.serverlessYml ?? join(REPO_ROOT, 'serverless.yml'),
      clock: busClock,
      dlqPath: join(work, 'dead-letters.jsonl'),
      busName,
      ...(o.historySize !== undefined ? { historySize: o.historySize } : {}),
    };
    const alibaba = o.target === 'alibaba' ? await startAlibabaTarget(busOptions) : undefined;
    const bus: StackBus = alibaba?.bus ?? (await startLocalBus(busOptions));
    cleanups.push(() => bus.close());
    if (alibaba) {
      cleanups.push(withEnv(alibaba.env));
      progress(`  target alibaba: ${alibaba.summary}`);
    }
    // On the Alibaba target an AWS client would meet the Alibaba endpoint's 404: nothing reaches AWS.
    process.env.AWS_ENDPOINT_URL_EVENTBRIDGE = bus.url;
    const functions = new Set(bus.table?.functions.map((f) => f.key) ?? []);
    const keyOf = new Map(bus.table?.functions.map((f) => [f.name, f.key]) ?? []);
    progress(`  bus at ${bus.url}; functions in serverless.yml: ${[...functions].join(', ')}`);

    // ---- the timeline: only observed things
    const podNames = new Map<string, string>();
    const podName = (uid: string) =>
      podNames.get(uid) ??
      (sim ? sim.store.list('pods').find((p) => p.metadata.uid === uid)?.metadata.name : undefined);
    const rec = new StackRecorder(bus, {
      out: o.out,
      colour: o.colour ?? false,
      sinceStart,
      startedAt: () => t0,
      podName,
      keyOf,
      ...(o.historySize !== undefined ? { historySize: o.historySize } : {}),
    });
    // An expectation on what events say (`says`) counts those events apart (report.ts EventTally.watch).
    rec.tally.watch((scenario.expect ?? []).flatMap((x) => ('event' in x && x.says ? [x.says] : [])));
    cleanups.push(rec.subscribe());
    const emit = (e: Omit<TimelineEntry, 'atMs'>) => rec.emit(e);
    const observer = sim ? new ClusterObserver(sim.store, (e) => rec.effect(e)) : undefined;
    cleanups.push(() => observer?.close());

    // ---- the simulated Alibaba Cloud, when the scenario has one: its instances are the pools' nodes
    const agentNodes = new StackNodes({ scenario, work, library, sim, policy, podNames, emit });
    if (scenario.cloudFile) {
      const onReboot = (node: string) => agentNodes.onReboot(node);
      const onJoin = (node: string) => void agentNodes.joinedNodes.push(node);
      const onLeave = (node: string) => void agentNodes.leftNodes.push(node);
      const cloud = await startStackCloud({
        cloud: scenario.cloudFile,
        clock: busClock,
        cluster: sim?.cluster,
        work,
        ...(scenario.autoscaleFile ? { autoscalePolicyText: scenario.autoscaleFile.text } : {}),
        emit,
        onReboot,
        onJoin,
        onLeave,
      });
      cleanups.push(() => cloud.close());
      cleanups.push(withEnv(cloud.env));
      // One RAM identity for every Alibaba service the functions call (FC's role): the bus takes its key too.
      alibaba?.trust(cloud.env.ALIBABA_CLOUD_ACCESS_KEY_ID!, cloud.env.ALIBABA_CLOUD_ACCESS_KEY_SECRET!);
      progress(
        `  Alibaba Cloud simulator ` +
          `at ${cloud.sim.url}: ` +
          scenario.cloudFile.pools.map((p) => `${p.name} ${cloud.sim.cloud.members(p.id).length}`).join(', ') +
          (scenario.autoscaleFile
            ? '; autoscaler manages ' + (Object.keys(scenario.autoscaleFile.policy.pools).join(', ') || 'no pool')
            : ''),
      );
    }

    // ---- one agent per GPU node, on its own mock NVML box
    const [nodes, initialPods] = await Promise.all([kube.nodes(), kube.pods()]);
    const faultSteps = scenario.timeline.filter((s): s is FaultStepT => 'fault' in s);
    await agentNodes.prepare(nodes, kube, faultSteps);
    const { files, nodeFiles, gpuSpecsByNode, sharingByNode } = agentNodes;
    cleanups.push(() => agentNodes.podResources.close());
    for (const name of files.keys()) await agentNodes.servePodResources(name);
    const off = agentNodes.watchPods();
    if (off) cleanups.push(off);
    const common = {
      ...(alibaba ? { alibaba: alibaba.agents } : {}),
      busUrl: bus.url,
      busName,
      region: 'us-east-1',
      sampleIntervalMs: scenario.agents.sampleIntervalMs,
      log: progress,
      ...(scenario.agents.actuator === false ? {} : { kubeconfig: agentKubeconfig! }),
      ...(scenario.agents.pauseOperator ? { pauseOperator: true } : {}),
    };
    if (!virtual) progress(`starting ${nodeFiles.length} agents (gpu-reflex agent) ...`);
    const agents = virtual
      ? await startInProcessAgents(nodeFiles, { ...common, clock: agentClock })
      : await startAgentProcesses(nodeFiles, common);
    // The ACK device plugin's part: the fence files the agents' actuators write drop allocatable.
    // Each pool runs the device plugin its fence backend is written for: NVIDIA's where it says
    // `nvidia-plugin`, a DRA driver where it says `dra`, the ACK plugin (reading the actuator's fence
    // file) elsewhere.
    const pluginKind = (name: string): DevicePluginKind => {
      const labels = nodes.find((n) => n.metadata.name === name)?.metadata.labels ?? {};
      const backend = fenceBackendOf(policy, poolOf(policy, labels));
      return backend === 'nvidia-plugin' ? 'nvidia' : backend === 'dra' ? 'dra' : 'ack';
    };
    const devicePlugin = sim
      ? new DevicePluginStandIn(
          sim,
          // A node that shares its cards (ACK cGPU) runs the gpushare device plugin instead, which
          // reads no unhealthy-devices file (GDP pkg/gpu/nvidia: no such read; docs/sharing.md).
          nodeFiles
            .filter((f) => !sharesCards(nodes.find((n) => n.metadata.name === f.node)))
            .map((f) => ({
              ...f,
              gpus: gpuSpecsByNode.get(f.node) ?? [],
              kind: pluginKind(f.node),
              ...(sharingByNode.has(f.node) ? { sharing: sharingByNode.get(f.node)! } : {}),
            })),
          policy.fence.nvidiaPlugin,
          policy.fence.dra.driver,
        )
      : undefined;
    // The GPU Operator's client pods hold their node's GPUs open (gpu-operator.ts): the mock refuses a reset meanwhile.
    const operatorClients = sim
      ? new GpuOperatorClients(sim, () =>
          [...files.keys()].map((node) => ({ node, clientsPath: nodeDir(work, node).clientsPath })),
        )
      : undefined;
    agentNodes.devicePlugin = devicePlugin;
    cleanups.push(() => agents.close());
    // Scenario time starts once every agent runs.
    t0 = busClock.now();
    progress(`${agents.count} agents running (${agents.how})`);
    const steps = new ScenarioSteps({
      scenario,
      work,
      sim,
      kube,
      nodes: agentNodes,
      agents,
      faultSteps,
      emit,
      sinceStart,
    });
    let stopped = false;
    return {
      run: () =>
        runScenario({
          scenario,
          o,
          virtual,
          wallStart,
          sim,
          kube,
          bus,
          functions,
          rec,
          observer,
          agents,
          agentNodes,
          steps,
          devicePlugin,
          operatorClients,
          nodes,
          initialPods,
          progress,
          sinceStart,
          stopped: () => stopped,
          cleanup,
        }),
      stop: () => {
        stopped = true;
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/** A node that shares its GPUs through ACK's gpushare (it advertises aliyun.com/gpu-mem and gpu-count). */
function sharesCards(node: Node | undefined): boolean {
  return node !== undefined && cardsOf(node) !== undefined;
}
