import { mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, VirtualClock } from '../../events/clock.ts';
import { injectClock } from '../../functions/adapters/clock.ts';
import { startLocalBus } from './bus/index.ts';
import type { StackBus } from './bus/alibaba-bus.ts';
import { startAlibabaTarget, type StackTarget } from './stack-alibaba.ts';
import { ClusterObserver, pendingByResource } from './cluster-observer.ts';
import { startKubeSim, wallClock, type KubeSim } from './kube/index.ts';
import { buildMockNvml } from './mock-nvml/build.ts';
import { allocateGpus, gpuSpecsOf, isGpuNode, type ClaimGpus, type GpuSpec } from './node-gpus.ts';
import { allocatedDevices, claimNameOf, CLAIMS, type Claim } from './kube/dra-allocator.ts';
import {
  appendKmsg,
  kmsgXidLine,
  mockScenario,
  nodeDir,
  writeNodeFiles,
  type NodeFiles,
  type NvmlOverride,
} from './node-files.ts';
import { NodeProcesses } from './node-processes.ts';
import { checkExpectations, summarize, type StackReport } from './report.ts';
import type { Node, Pod } from './kube/types.ts';
import { SIM_GPU_LAYOUT_ANNOTATION, SIM_MIG_APPLIED_ANNOTATION } from './kube/mig-manager.ts';
import type { FaultStepT, JoinStepT, NvmlStepT, Scenario, TimelineStep } from './scenario.ts';
import { resource } from './kube/resources.ts';
import { StackKube } from './stack-kube.ts';
import { AGENT_USER, FUNCTIONS_USER, installShippedRbac, type ShippedComponent } from './kube/shipped-rbac.ts';
import { StackRecorder } from './stack-recorder.ts';
import { startAgentProcesses, startInProcessAgents } from './stack-agents.ts';
import { DevicePluginStandIn, type DevicePluginKind } from './device-plugin.ts';
import { cardsOf, replaceUnhealthyCards } from './kube/gpushare.ts';
import { GpuOperatorClients } from './gpu-operator.ts';
import { nodeSharing, type PluginSharing } from './plugin-sharing.ts';
import { fenceFilePath, replaceUnhealthyDevices } from './ack-fence-file.ts';
import { remediationConfig } from '../../functions/remediate/wiring.ts';
import { fenceBackendOf, poolOf } from '../../functions/remediate/core/policy.ts';
import { labelNothingConfigText } from './cluster-identity.ts';
import { reportHtml } from './report-html.ts';
import { formatSummary, kubeconfigText, runningText, verdictLine, type TimelineEntry } from './timeline.ts';
import { functionEnv, gapNotice, LOCAL_BUS_NAME, REPO_ROOT, withEnv } from './stack-env.ts';
import { startStackCloud } from './stack-cloud.ts';
import { StackPodResources } from './pod-resources/index.ts';
import type { PodArrival } from './scenario.ts';

/**
 * The whole pipeline on one machine: the simulated cluster (or a real one through a kubeconfig),
 * the local EventBridge with the repository's serverless.yml (functions run in-process), and one
 * node agent per GPU node on its own mock NVML box. `virtual` runs on a manual clock in steps
 * (seconds for a minute of scenario); `wall` runs in real time. Faults enter only at the NVML
 * layer (and the kernel log); the timeline prints only what components were seen doing.
 */
export interface StackOptions {
  clock: 'wall' | 'virtual';
  /** Act on this cluster instead of the simulated one. */
  kubeconfig?: string;
  /**
   * The cluster of `kubeconfig` served the simulator's marker (cluster-identity.ts). Otherwise it
   * is taken for a real one, and the node labeler writes nothing there: the mock GPUs' driver,
   * CUDA and model are not its nodes'. The caller decided that writing to it is wanted.
   */
  kubeconfigIsSimulated?: boolean;
  reportPath?: string;
  /** Timeline and progress lines. */
  out: (line: string) => void;
  colour?: boolean;
  /** Overrides the scenario's durationSeconds. */
  durationMs?: number;
  /** Virtual step (default 100 ms). */
  stepMs?: number;
  /**
   * Virtual only: once nothing has happened for `settleMs` (default 30 s of scenario time), time
   * moves in steps of up to this many ms (default: the agents' sample interval) until the next
   * scenario step, so quiet hours replay in seconds. 0 keeps every step at `stepMs`.
   */
  quietStepMs?: number;
  /** The routing table (default: the repository's serverless.yml); tests point it at fixtures. */
  serverlessYml?: string;
  /** Events, deliveries, dead letters and timeline entries kept for the report: the last N of each (default 10,000). */
  historySize?: number;
  /**
   * `aws` (default): the local EventBridge with serverless.yml. `alibaba`: Alibaba EventBridge's data
   * plane with the ROS template's rules, the functions invoked as Function Compute 3.0 does (stack-alibaba.ts).
   */
  target?: StackTarget;
}

export interface StackResult {
  report: StackReport;
  /** The simulated cluster, still readable after the run (undefined with --kubeconfig). Closed. */
  sim: KubeSim | undefined;
  exitCode: number;
}

/** How much earlier than its NVML is due a fault step runs on the wall clock (see run()). */
const WALL_FAULT_MARGIN_MS = 500;

/** How long after a scenario step time keeps moving in fine steps before quiet steps may start. */
const SETTLE_MS = 30_000;
/** How often a pod admission refused is created again (a controller's retry). */
const RETRY_CREATE_MS = 10_000;

export interface LocalStack {
  /** Runs the scenario to its end (or until `stop()`), then shuts everything down. */
  run(): Promise<StackResult>;
  /** Ends a running stack at the next step (Ctrl-C with --follow). */
  stop(): void;
}

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

    let sim: KubeSim | undefined;
    let kubeconfig = o.kubeconfig;
    // A real cluster (--kubeconfig): everyone uses the caller's identity.
    let functionsKubeconfig = o.kubeconfig;
    let agentKubeconfig = o.kubeconfig;
    if (!kubeconfig) {
      progress(`starting the simulated Kubernetes cluster (${scenario.parsedFleet.nodes.length} node groups) ...`);
      sim = await startKubeSim({
        fleet: scenario.parsedFleet,
        clock: vclock ?? wallClock,
        apis: {
          ...(scenario.kubernetesVersion ? { kubernetesVersion: scenario.kubernetesVersion } : {}),
          ...(scenario.featureGates ? { featureGates: scenario.featureGates } : {}),
          ...(scenario.runtimeConfig ? { runtimeConfig: scenario.runtimeConfig } : {}),
        },
      });
      const started = sim;
      cleanups.push(() => started.close());
      kubeconfig = join(work, 'kubeconfig');
      sim.writeKubeconfig(kubeconfig);
      progress(`  cluster at ${sim.url}: ${sim.store.count('nodes')} nodes, ${sim.store.count('pods')} pods`);
      if (!virtual) progress(kubeconfigText(kubeconfig));
      // The functions and the agents run as their ServiceAccounts under infra/k8s's RBAC (shipped-rbac.ts).
      const skipped = installShippedRbac(sim.cluster, shippedComponents(scenario));
      for (const s of skipped) progress(`  infra/k8s: left out ${s}`);
      functionsKubeconfig = join(work, 'kubeconfig-functions');
      sim.writeKubeconfig(functionsKubeconfig, FUNCTIONS_USER);
      agentKubeconfig = join(work, 'kubeconfig-agent');
      sim.writeKubeconfig(agentKubeconfig, AGENT_USER);
      progress(`  functions act as ${FUNCTIONS_USER}, agents as ${AGENT_USER} (RBAC from infra/k8s)`);
    } else progress(`using the cluster in ${kubeconfig}`);
    const kube = new StackKube(kubeconfig);

    progress(
      o.target === 'alibaba'
        ? 'starting Alibaba EventBridge and Function Compute from the ROS template ...'
        : 'starting the event bus with serverless.yml ...',
    );
    const busName = LOCAL_BUS_NAME;
    cleanups.push(withEnv(functionEnv({ kubeconfig: functionsKubeconfig!, busUrl: 'http://pending', busName })));
    // The scenario's policy is the functions' policy file (else the caller's REMEDIATION_POLICY_FILE, else the
    // defaults).
    if (scenario.policyFile) {
      const policyPath = join(work, 'remediation-policy.yaml');
      writeFileSync(policyPath, scenario.policyFile.text);
      cleanups.push(withEnv({ REMEDIATION_POLICY_FILE: policyPath }));
      progress(`  remediation policy: the scenario's (${policyPath})`);
    }
    if (scenario.labelsFile) {
      const labelsPath = join(work, 'node-labels.yaml');
      writeFileSync(labelsPath, scenario.labelsFile.text);
      cleanups.push(withEnv({ LABELER_CONFIG_FILE: labelsPath }));
      progress(`  node labeler: the scenario's configuration (${labelsPath})`);
    }
    if (scenario.idleFile) {
      const idlePath = join(work, 'idle-policy.yaml');
      writeFileSync(idlePath, scenario.idleFile.text);
      cleanups.push(withEnv({ IDLE_POLICY_FILE: idlePath }));
      progress(`  idle GPUs: the scenario's policy (${idlePath})`);
    }
    if (scenario.migFile) {
      const migPath = join(work, 'mig-policy.yaml');
      writeFileSync(migPath, scenario.migFile.text);
      cleanups.push(withEnv({ MIG_POLICY_FILE: migPath }));
      progress(
        `  MIG policy: the scenario's (preemption ${scenario.migFile.policy.preemption.enabled ? 'on' : 'off'})`,
      );
    }
    if (Object.keys(scenario.env).length > 0) {
      cleanups.push(withEnv(scenario.env));
      progress(
        `  function settings: the scenario's (${Object.entries(scenario.env)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')})`,
      );
    }
    if (o.kubeconfig && !o.kubeconfigIsSimulated) {
      const labelsPath = join(work, 'node-labels-none.json');
      writeFileSync(labelsPath, labelNothingConfigText());
      cleanups.push(withEnv({ LABELER_CONFIG_FILE: labelsPath }));
      progress(`  node labeler: labels nothing on this cluster (its agents read mock GPUs, not these nodes')`);
    }
    if (scenario.quotaFile) {
      const quotaPath = join(work, 'quota-teams.yaml');
      writeFileSync(quotaPath, scenario.quotaFile.text);
      cleanups.push(withEnv({ QUOTA_CONFIG_FILE: quotaPath }));
      progress(`  quota teams: the scenario's (${scenario.quotaFile.config.teams.map((t) => t.name).join(', ')})`);
    }
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
    const flushEvents = () => rec.flushEvents();
    const observer = sim ? new ClusterObserver(sim.store, (e) => rec.effect(e)) : undefined;
    cleanups.push(() => observer?.close());

    // ---- the simulated Alibaba Cloud, when the scenario has one: its instances are the pools' nodes
    /** GPU nodes that joined since the last step: their agents start at the next one. */
    const joinedNodes: string[] = [];
    const leftNodes: string[] = [];
    /** GPUs that will not come back from their node's next reboot (scenario.ts afterReboot), by node. */
    const lostOnReboot = new Map<string, Set<number>>();
    if (scenario.cloudFile) {
      // A reboot power-cycles the node's GPUs: its agent's mock NVML resets each one (control dir,
      // as the mock nvidia-smi asks), so a lost GPU comes back as it would from a real reboot.
      let rebootSeq = 0;
      const onReboot = (node: string) => {
        const dir = nodeDir(work, node).controlDir;
        for (const g of gpuSpecsByNode.get(node) ?? []) {
          // Scripted adversity (scenario.ts afterReboot): this GPU stays off the bus after the power
          // cycle; nothing resets it, and the device plugin no longer enumerates it.
          if (lostOnReboot.get(node)?.has(g.index)) {
            devicePlugin?.lose(node, g.index);
            emit({
              who: 'scenario',
              kind: 'note',
              what: '',
              text:
                `GPU ${g.index} of ${node} does not come back from the reboot: still off the bus, NVML and the ` +
                `device plugin no longer list it`,
            });
            continue;
          }
          const id = `reboot-${++rebootSeq}`;
          writeFileSync(join(dir, `.${id}.tmp`), `reset ${g.uuid}\n`);
          renameSync(join(dir, `.${id}.tmp`), join(dir, `${id}.req`));
        }
      };
      const onJoin = (node: string) => void joinedNodes.push(node);
      const onLeave = (node: string) => void leftNodes.push(node);
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
    const agentNodes =
      scenario.agents.nodes === 'all-gpu-nodes'
        ? nodes.filter(isGpuNode).map((n) => n.metadata.name)
        : scenario.agents.nodes;
    const faultSteps = scenario.timeline.filter((s): s is FaultStepT => 'fault' in s);
    const nodeFiles: NodeFiles[] = [];
    const gpuSpecsByNode = new Map<string, GpuSpec[]>();
    const files = new Map<string, NodeFiles & { pci: string[]; tracker: NodeProcesses }>();
    // NVIDIA's plugin config per node (time-slicing, MPS: plugin-sharing.ts), from its namespace's ConfigMaps.
    const sharingByNode = new Map<string, PluginSharing>();
    const configMaps = (sim?.store.list('configmaps') ?? []).filter(
      (c) => c.metadata.namespace === policy.fence.nvidiaPlugin.namespace,
    ) as { data?: Record<string, string> }[];
    const sharedOf = (name: string) => {
      const s = sharingByNode.get(name);
      return s ? { resource: s.resource, replicas: s.replicas, strategy: s.strategy } : undefined;
    };
    // MPS: the control daemon sets its GPUs EXCLUSIVE_PROCESS (k8s-device-plugin cmd/mps-control-daemon/mps/
    // daemon.go); here from the node's start, as the daemon would once it runs (the scenario's own NVML wins).
    const withMps = (name: string): NvmlOverride | undefined => {
      const own = scenario.nvml[name];
      if (sharingByNode.get(name)?.strategy !== 'mps') return own;
      const gpus: Record<string, Record<string, unknown>> = {};
      for (const g of gpuSpecsByNode.get(name) ?? []) gpus[g.index] = { computeMode: 3, ...own?.gpus?.[g.index] };
      return { ...own, gpus };
    };
    // The kubelet prepares the devices the scheduler allocated to a pod's claim (gpu-<index>: dra-slice.ts).
    const claimGpus: ClaimGpus | undefined = sim
      ? (pod, entry) => {
          const name = claimNameOf(pod, entry);
          const claim = name ? sim.store.get(CLAIMS, pod.metadata.namespace ?? 'default', name) : undefined;
          return allocatedDevices(claim as Claim | undefined).flatMap((r) => {
            const m = /^gpu-(\d+)$/.exec(r.device);
            return m ? [Number(m[1])] : [];
          });
        }
      : undefined;
    for (const name of agentNodes) {
      const node = nodes.find((n) => n.metadata.name === name);
      if (!node) throw new Error(`agents.nodes: no node "${name}" in the cluster`);
      const gpus = gpuSpecsOf(node);
      gpuSpecsByNode.set(name, gpus);
      const sharing = nodeSharing(node.metadata.labels, node.metadata.annotations, { configMaps });
      if (sharing) sharingByNode.set(name, sharing);
      const pods = (await kube.podsOn(name)).filter(
        (p) => !p.metadata.ownerReferences?.some((r) => r.kind === 'DaemonSet'),
      );
      for (const p of pods) podNames.set(p.metadata.uid, `${p.metadata.namespace}/${p.metadata.name}`);
      const procs = allocateGpus(gpus, pods, undefined, undefined, undefined, sharedOf(name), claimGpus);
      const faults = faultSteps.filter((s) => s.node === name).map((s) => ({ atMs: s.at, gpu: s.gpu, fault: s.fault }));
      for (const f of faults)
        if (f.gpu >= gpus.length)
          throw new Error(`timeline: node ${name} has ${gpus.length} GPUs; there is no GPU ${f.gpu}`);
      const dirs = nodeDir(work, name);
      const nf = writeNodeFiles(
        work,
        name,
        library,
        mockScenario(gpus, procs, faults, withMps(name), dirs.processesPath, dirs.controlDir, dirs.migPath),
      );
      const tracker = new NodeProcesses(
        gpus,
        nf.procRoot,
        nf.processesPath,
        procs,
        sharedOf(name),
        scenario.agents.hostPID !== false,
        claimGpus,
      );
      files.set(name, { ...nf, pci: gpus.map((g) => g.pciBusId), tracker });
      nodeFiles.push(nf);
    }
    // Each agent node's kubelet serves PodResources v1 from what was allocated there (pod-resources/).
    const podResources = new StackPodResources();
    cleanups.push(() => podResources.close());
    const servePodResources = async (name: string) => {
      const f = files.get(name);
      if (!sim || !f) return;
      const store = sim.store;
      await podResources.add(f.podResourcesSocket, {
        node: name,
        gpus: () => files.get(name)?.tracker.gpuSpecs ?? [],
        allocation: () => files.get(name)?.tracker.current ?? [],
        pods: () => store.podsOnNode(name),
        notAdvertised: () => plugin.ref?.notAdvertised(name) ?? { held: [], gone: new Set() },
        sharing: () => sharingByNode.get(name),
        draDriver: policy.fence.dra.driver,
      });
    };
    // The device plugin stand-in is made once the agents run; the kubelets ask it at each call.
    const plugin: { ref?: DevicePluginStandIn } = {};
    for (const name of files.keys()) await servePodResources(name);
    // Pods arriving on or leaving an agent's node change what runs on its GPUs (NodeProcesses).
    const dirty = new Set<string>();
    if (sim) {
      const off = sim.store.subscribe((e) => {
        if (e.resource === 'nodes' && e.type === 'MODIFIED' && files.has(e.object.metadata.name)) {
          // mig-manager applied a config to the node's GPUs: its agent's NVML lists what it left
          // from now on, even when the layout did not change (instances a reset destroyed return).
          const applied = (n: Node | undefined) =>
            `${n?.metadata.annotations?.[SIM_GPU_LAYOUT_ANNOTATION]}|` +
            `${n?.metadata.annotations?.[SIM_MIG_APPLIED_ANNOTATION]}`;
          if (applied(e.previous as Node | undefined) !== applied(e.object as Node)) {
            const name = e.object.metadata.name;
            files.get(name)!.tracker.relayout(gpuSpecsOf(e.object as Node), nodeDir(work, name).migPath);
            dirty.add(name);
          }
          return;
        }
        if (e.resource !== 'pods') return;
        for (const o of [e.object, e.previous] as (Pod | undefined)[])
          if (o?.spec.nodeName && files.has(o.spec.nodeName)) dirty.add(o.spec.nodeName);
      });
      cleanups.push(off);
    }
    const syncProcesses = () => {
      for (const n of dirty)
        files.get(n)?.tracker.update(sim!.store.podsOnNode(n), devicePlugin?.fenced(n), devicePlugin?.replicasOut(n));
      dirty.clear();
    };
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
    plugin.ref = devicePlugin;
    cleanups.push(() => agents.close());
    // A GPU node that joined (a booted cloud instance) gets its agent, as the DaemonSet starts a pod
    // on a new node: its own mock NVML with the GPUs its labels say, no process on them yet.
    const startJoinedAgents = async () => {
      for (const name of leftNodes.splice(0)) {
        if (!files.has(name)) continue;
        files.delete(name);
        await agents.remove(name);
        await podResources.remove(name);
        emit({ who: 'stack', kind: 'stack', what: '', text: `${name} left: its node agent stops` });
      }
      if (scenario.agents.nodes !== 'all-gpu-nodes' || !sim) return;
      for (const name of joinedNodes.splice(0)) {
        const node = sim.store.get('nodes', '', name) as Node | undefined;
        if (!node || !isGpuNode(node) || files.has(name)) continue;
        const gpus = gpuSpecsOf(node);
        gpuSpecsByNode.set(name, gpus);
        const dirs = nodeDir(work, name);
        const nf = writeNodeFiles(
          work,
          name,
          library,
          mockScenario(gpus, [], [], scenario.nvml[name], dirs.processesPath, dirs.controlDir, dirs.migPath),
        );
        files.set(name, {
          ...nf,
          pci: gpus.map((g) => g.pciBusId),
          tracker: new NodeProcesses(
            gpus,
            nf.procRoot,
            nf.processesPath,
            [],
            undefined,
            scenario.agents.hostPID !== false,
          ),
        });
        await servePodResources(name);
        await agents.add(nf);
        // Pods the scheduler placed on it in the same step run on its GPUs from now on.
        dirty.add(name);
        emit({
          who: 'stack',
          kind: 'stack',
          what: '',
          text: `${name} joined with ${gpus.length} GPU${gpus.length === 1 ? '' : 's'}: its node agent starts`,
        });
      }
    };
    // Scenario time starts once every agent runs.
    t0 = busClock.now();
    progress(`${agents.count} agents running (${agents.how})`);

    // ---- maintenance: a node's NVML changes (driver upgrade, MIG mode) and its agent restarts
    const overrides = new Map<string, NvmlOverride>(Object.entries(scenario.nvml));
    const maintain = async (s: NvmlStepT) => {
      const f = files.get(s.node);
      if (!f)
        return emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text: `${s.node} runs no agent: its NVML is not changed`,
        });
      const was = overrides.get(s.node) ?? {};
      const gpus: Record<string, Record<string, unknown>> = { ...was.gpus };
      for (const [i, g] of Object.entries(s.nvml.gpus ?? {})) gpus[i] = { ...gpus[i], ...g };
      const next: NvmlOverride = { ...was, ...s.nvml, gpus };
      overrides.set(s.node, next);
      const said = [
        s.nvml.driverVersion ? `driver ${s.nvml.driverVersion}` : '',
        ...Object.entries(s.nvml.gpus ?? {}).map(([i, g]) => `GPU ${i} ${JSON.stringify(g)}`),
      ]
        .filter(Boolean)
        .join(', ');
      emit({
        who: 'scenario',
        kind: 'note',
        what: '',
        text:
          `maintenance on ${s.node}: ${said || 'its NVML changes'}; its node agent ` +
          `restarts${s.note ? ` — ${s.note}` : ''}`,
      });
      // The mock's clock starts again at the new nvmlInit: faults still to come move with it.
      const faults = faultSteps
        .filter((x) => x.node === s.node && x.at > s.at)
        .map((x) => ({ atMs: x.at - s.at, gpu: x.gpu, fault: x.fault }));
      const dirs = nodeDir(work, s.node);
      await agents.remove(s.node);
      writeFileSync(
        `${f.scenarioPath}.tmp`,
        JSON.stringify(
          mockScenario(
            gpuSpecsByNode.get(s.node) ?? [],
            f.tracker.current,
            faults,
            next,
            dirs.processesPath,
            dirs.controlDir,
            dirs.migPath,
          ),
          null,
          2,
        ),
      );
      renameSync(`${f.scenarioPath}.tmp`, f.scenarioPath);
      await agents.add(f);
    };

    // ---- scenario steps: faults at the NVML layer (+ the kernel-log line), pods through the API
    /** Kernel-log lines waiting for the instant their NVML fault fires. */
    let kernelLines: { dueAt: number; write: () => void }[] = [];
    const doStep = async (s: TimelineStep) => {
      if ('fault' in s) {
        const f = files.get(s.node);
        if (!f)
          return emit({
            who: 'scenario',
            kind: 'note',
            what: '',
            text: `${s.node} runs no agent: fault ${s.fault.kind} not injected`,
          });
        const what = s.fault.kind === 'xid' ? `XID ${s.fault.xid}` : s.fault.kind;
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text: `inject ${what} into the NVML of ${s.node} GPU ${s.gpu}${s.note ? ` — ${s.note}` : ''}`,
        });
        const fault = s.fault;
        if (fault.kind === 'xid') {
          // The kernel names the process on that GPU (instance) that hit it, if one runs there.
          const onGpu = f.tracker.current.filter((p) => p.gpu === s.gpu);
          const named = fault.pod !== undefined ? onGpu.find((p) => p.pod.name === fault.pod) : undefined;
          const pid =
            fault.pid ?? (named ?? onGpu.find((p) => p.gpuInstanceId === fault.gpuInstanceId) ?? onGpu[0])?.pid;
          const line = kmsgXidLine(s.at, f.pci[s.gpu]!, fault.xid, pid, fault.gpuInstanceId, fault.text);
          // Written when the node's NVML fires it (the step itself may run early, see run()).
          kernelLines.push({ dueAt: s.at - agents.leadMs(s.node), write: () => appendKmsg(f.kmsgPath, line) });
          // NVIDIA's device plugin sees the same XID through NVML (and latches the GPU).
          devicePlugin?.onXid(s.node, s.gpu, fault.xid);
        }
      } else if ('nvml' in s) {
        await maintain(s);
      } else if ('fenceFile' in s) {
        const f = files.get(s.node);
        if (!f)
          return emit({
            who: 'scenario',
            kind: 'note',
            what: '',
            text: `${s.node} runs no agent: its fence file is not written`,
          });
        const gpus = gpuSpecsByNode.get(s.node) ?? [];
        const content = {
          ...(s.fenceFile.index ? { index: s.fenceFile.index.map(String) } : {}),
          ...(s.fenceFile.gpus ? { uuid: s.fenceFile.gpus.map((g) => gpus[g]?.uuid ?? `GPU-unknown-${g}`) } : {}),
        };
        replaceUnhealthyDevices(fenceFilePath(f), content);
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `${s.fenceFile.by} replaces the unhealthy-devices file of ${s.node} ` +
            `with ${JSON.stringify(content)}${s.note ? ` — ${s.note}` : ''}`,
        });
      } else if ('unhealthyCards' in s) {
        if (sim) replaceUnhealthyCards(sim.store, s.node, s.unhealthyCards.gpus ?? undefined);
        const said = s.unhealthyCards.gpus === null ? 'drops its gpus' : `sets gpus to "${s.unhealthyCards.gpus}"`;
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `${s.unhealthyCards.by} rewrites kube-system/unhealthy-gpu-${s.node}: ${said}` +
            (s.note ? ` — ${s.note}` : ''),
        });
        sim?.tick();
      } else if ('join' in s) {
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text: `node ${s.join.node} joins the cluster${s.note ? ` — ${s.note}` : ''}`,
        });
        sim?.cluster.create(resource('nodes'), '', joiningNode(s));
        sim?.tick();
      } else if ('ungate' in s) {
        const done = await kube.ungate(s.ungate.namespace, s.ungate.name);
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `${s.ungate.by} lifts the scheduling gates of ${done.length} pod${done.length === 1 ? '' : 's'} ` +
            `${s.ungate.namespace}/${s.ungate.name}${s.note ? ` — ${s.note}` : ''}`,
        });
        sim?.tick();
      } else if ('pods' in s) {
        // The step is printed before the pods exist: the scheduler's lines are its effects.
        const n = s.pods.count;
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `create ${n} pod${n === 1 ? '' : 's'} ${s.pods.namespace}/${s.pods.name}${n > 1 ? '-*' : ''} ` +
            `requesting ${Object.keys(s.pods.requests)
              .filter((k) => k.includes('/'))
              .join(', ')}`.trimEnd() +
            (s.pods.resourceClaims
              ? ` claiming ${s.pods.resourceClaims
                  .map((c) =>
                    'resourceClaimName' in c ? c.resourceClaimName : `a claim from ${c.resourceClaimTemplateName}`,
                  )
                  .join(', ')}`
              : '') +
            (s.note ? ` — ${s.note}` : ''),
        });
        const r = await kube.createPods(s.pods);
        for (const x of r.refused) {
          emit({
            who: 'cluster',
            kind: 'gap',
            what: '',
            text:
              `pod ${s.pods.namespace}/${x.name} refused: ${x.reason} — its controller retries ` +
              `every ${RETRY_CREATE_MS / 1000}s`,
          });
          refusedPods.push({ arrival: s.pods, name: x.name, at: sinceStart() + RETRY_CREATE_MS });
        }
      } else if ('afterReboot' in s) {
        // Only a GPU that fell off the bus can stay off it: the scenario must have lost it first.
        const lost = faultSteps.some(
          (x) => x.node === s.node && x.gpu === s.gpu && x.fault.kind === 'gpuLost' && x.at <= s.at,
        );
        if (!lost)
          throw new Error(
            `timeline: afterReboot missing on ${s.node} GPU ${s.gpu} needs a gpuLost fault on that GPU at or before it`,
          );
        lostOnReboot.set(s.node, new Set([...(lostOnReboot.get(s.node) ?? []), s.gpu]));
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text: `GPU ${s.gpu} of ${s.node} will not come back from a reboot${s.note ? ` — ${s.note}` : ''}`,
        });
      } else if ('devicePlugin' in s) {
        // Scripted adversity: the node's device plugin stops serving (device-plugin.ts breakPlugin).
        devicePlugin?.breakPlugin(s.node, s.devicePlugin.log, s.devicePlugin.persistent);
        emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `the device plugin of ${s.node} stops serving` +
            `${s.devicePlugin.persistent ? ' (and a new pod will too)' : ''}` +
            `${s.devicePlugin.log.length ? `, logging "${s.devicePlugin.log[0]}"` : ''}${s.note ? ` — ${s.note}` : ''}`,
        });
        devicePlugin?.sync();
        sim?.tick();
      } else emit({ who: 'scenario', kind: 'note', what: '', text: s.note });
    };
    // Pods admission refused (a quota): created again every RETRY_CREATE_MS, as a Job or
    // ReplicaSet controller retries a failed create.
    let refusedPods: { arrival: PodArrival; name: string; at: number }[] = [];
    const retryRefused = async () => {
      const now = sinceStart();
      const due = refusedPods.filter((x) => x.at <= now);
      if (due.length === 0) return;
      refusedPods = refusedPods.filter((x) => x.at > now);
      for (const x of due) {
        const r = await kube.createPods(x.arrival, x.name);
        if (r.created.length > 0)
          emit({
            who: 'cluster',
            kind: 'cluster',
            what: '',
            text: `pod ${x.arrival.namespace}/${x.name} created on its controller's retry: the quota admits it now`,
          });
        else refusedPods.push({ ...x, at: now + RETRY_CREATE_MS });
      }
    };

    const duration = o.durationMs ?? scenario.durationSeconds * 1000;
    const stepMs = o.stepMs ?? 100;
    let stopped = false;
    let lastPending = '';
    const checkPending = async () => {
      // Only unbound pods can be pending: the store's spec.nodeName index has them (not every pod, every step).
      const pods = sim
        ? (sim.store.select('pods', { fields: [{ field: 'spec.nodeName', equal: true, value: '' }] }) as Pod[])
        : await kube.pods();
      const pending = pendingByResource(pods);
      const key = JSON.stringify(pending);
      if (key === lastPending) return;
      lastPending = key;
      for (const [resource, n] of Object.entries(pending))
        emit({
          who: 'cluster',
          kind: 'gap',
          what: '',
          text:
            `${n} pod${n === 1 ? '' : 's'} pending ` +
            `on ${resource}` +
            `${gapNotice(resource, functions, Object.keys(scenario.autoscaleFile?.policy.pools ?? {}).length)}`,
        });
    };

    let met = false;
    const expectationsHold = async (expect: NonNullable<Scenario['expect']>) => {
      const [ns, ps] = await Promise.all([kube.nodes(), kube.pods()]);
      return checkExpectations(expect, ns, ps, rec.tally).every((c) => c.ok);
    };

    async function run(): Promise<StackResult> {
      // A fault is due when the node's NVML fires it (its mock clock may run ahead, see StackAgents).
      // On the wall clock a child agent's NVML fires the fault on its own clock, whose start the
      // stack only estimates (leadMs): the step (its inject line) runs a margin early, so the cause
      // is printed before the XID it causes; its kernel-log line still waits for the NVML time.
      const margin = virtual ? 0 : WALL_FAULT_MARGIN_MS;
      const dueAt = (s: TimelineStep) => ('fault' in s ? Math.max(0, s.at - agents.leadMs(s.node) - margin) : s.at);
      const steps = [...scenario.timeline].sort((a, b) => dueAt(a) - dueAt(b));
      let next = 0;
      let lastWall = Date.now();
      let lastPendingCheck = -Infinity;
      try {
        progress(runningText(duration, o.clock));
        let t = 0;
        let lastStepAt = 0;
        const quietStepMs = o.quietStepMs ?? scenario.agents.sampleIntervalMs;
        for (; !stopped && t < duration;) {
          let dt = stepMs;
          if (virtual && quietStepMs > stepMs && t - lastStepAt >= SETTLE_MS) {
            // Quiet: nothing happened for a while. Move to the next scenario step (or the end)
            // in steps of at most quietStepMs; timers falling due on the way fire at their times.
            const nextDue = next < steps.length ? dueAt(steps[next]!) : duration;
            dt = Math.max(stepMs, Math.min(quietStepMs, nextDue - t));
          }
          if (!virtual) {
            await new Promise((r) => setTimeout(r, stepMs));
            const now = Date.now();
            dt = now - lastWall;
            lastWall = now;
          }
          t += dt;
          // The bus moves the one clock, firing the agents' timers and its schedules on the way.
          if (virtual) await bus.advance(dt);
          sim?.tick();
          // A fault due in this step: its kernel-log line is written now; the mock fires the NVML
          // side by itself when the node's step moves its clock past `atMs`.
          while (next < steps.length && dueAt(steps[next]!) <= t) {
            await doStep(steps[next++]!);
            lastStepAt = t;
          }
          await retryRefused();
          await startJoinedAgents();
          for (const k of kernelLines.filter((k) => k.dueAt <= t)) k.write();
          kernelLines = kernelLines.filter((k) => k.dueAt > t);
          syncProcesses();
          operatorClients?.sync();
          await agents.step(dt);
          devicePlugin?.sync();
          await agents.whenIdle();
          await bus.drain();
          // The functions may have changed what a DRA plugin reads (a rule deleted): the kubelet
          // and the scheduler see it now, not at the next step (which may be a minute away). The
          // other plugins read node-local files or NVML, which only the step above changes.
          if (devicePlugin && devicePlugin.sync('dra').length > 0) sim?.tick();
          flushEvents();
          if (t - lastPendingCheck >= 1000) {
            lastPendingCheck = t;
            await checkPending();
            if (scenario.endWhenMet && scenario.expect && (await expectationsHold(scenario.expect))) {
              met = true;
              progress(`expect: every check holds at ${(t / 1000).toFixed(1)}s; the run ends here (endWhenMet)`);
              break;
            }
          }
        }
        await agents.close();
        await bus.drain();
        flushEvents();
        const [finalNodes, finalPods] = await Promise.all([kube.nodes(), kube.pods()]);
        const summary = summarize({
          tally: rec.tally,
          deadLetters: bus.counts.deadLetters,
          counters: observer?.counters ?? { evicted: [], rescheduled: [] },
          observed: observer !== undefined,
          nodes: finalNodes,
          pods: finalPods,
        });
        // The checks describe the scenario's end state: a run stopped or cut short before it is not judged.
        const complete = met || t >= scenario.durationSeconds * 1000;
        if (scenario.expect && complete)
          summary.expectations = checkExpectations(scenario.expect, finalNodes, finalPods, rec.tally);
        else if (scenario.expect)
          progress(
            `expect: not checked, the run ended at ${(t / 1000).toFixed(1)}s, before the scenario's end ` +
              `(${scenario.durationSeconds}s)`,
          );
        for (const l of formatSummary(summary)) o.out(l);
        const report: StackReport = {
          scenario: {
            name: scenario.name,
            description: scenario.description,
            source: scenario.source,
            durationSeconds: sinceStart() / 1000,
          },
          clock: o.clock,
          cluster: sim ? 'simulated' : 'kubeconfig',
          wallMs: Date.now() - wallStart,
          events: rec.events,
          deliveries: rec.deliveries,
          deadLetters: [...bus.deadLetters],
          actions: rec.events
            .filter((e) => e.source === 'gpu-reflex.functions')
            .map((e) => ({ atMs: e.atMs, detailType: e.detailType, detail: e.detail as Record<string, unknown> })),
          evicted: observer?.counters.evicted ?? [],
          rescheduled: observer?.counters.rescheduled ?? [],
          timeline: rec.entries,
          dropped: { ...rec.dropped(), deadLetters: bus.counts.deadLetters - bus.deadLetters.length },
          initial: { nodes, pods: initialPods },
          final: { nodes: finalNodes, pods: finalPods },
          summary,
        };
        if (o.reportPath) {
          // `.html`: the page a person looks at (report-html.ts); anything else: the JSON report.
          writeFileSync(
            o.reportPath,
            /\.html?$/i.test(o.reportPath) ? reportHtml(report) : JSON.stringify(report, null, 2),
          );
          progress(`report written to ${o.reportPath}`);
        }
        o.out(verdictLine(summary));
        const failedChecks = (summary.expectations ?? []).filter((x) => !x.ok).length;
        return { report, sim, exitCode: failedChecks > 0 ? 1 : 0 };
      } finally {
        await cleanup();
      }
    }

    return {
      run,
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

/**
 * The infra/k8s components a scenario's deployment enables, as docs/deploy.md tells people to: the
 * actuator unless the agents run without it, the reset pause where the actuators pause the GPU
 * Operator, ACK cGPU's RBAC where a node shares its cards.
 */
function shippedComponents(scenario: Scenario): ShippedComponent[] {
  const nodes = scenario.parsedFleet.nodes;
  return [
    ...(scenario.agents.actuator === false ? [] : (['actuator'] as const)),
    ...(scenario.agents.actuator !== false && scenario.agents.pauseOperator ? (['actuator-reset-pause'] as const) : []),
    ...(nodes.some((n) => Object.keys({ ...n.capacity, ...n.allocatable }).some((k) => k.startsWith('aliyun.com/gpu')))
      ? (['ack-cgpu'] as const)
      : []),
  ];
}

/** The Node a scenario `join` step adds: its labels (and the kubelet's own), its allocatable, Ready. */
function joiningNode({ join: j }: JoinStepT): object {
  const allocatable = Object.fromEntries(Object.entries(j.allocatable).map(([k, v]) => [k, String(v)]));
  return {
    metadata: {
      name: j.node,
      labels: { 'kubernetes.io/hostname': j.node, 'kubernetes.io/os': 'linux', ...j.labels },
    },
    spec: {},
    status: { capacity: { pods: '110', ...allocatable }, allocatable: { pods: '110', ...allocatable } },
  };
}
