import { renameSync, writeFileSync } from 'node:fs';
import type { Policy } from '../../functions/remediate/core/policy.ts';
import { join } from 'node:path';
import type { DevicePluginStandIn } from './device-plugin.ts';
import { allocatedDevices, claimNameOf, CLAIMS, type Claim } from './kube/dra-allocator.ts';
import type { KubeSim } from './kube/index.ts';
import { SIM_GPU_LAYOUT_ANNOTATION, SIM_MIG_APPLIED_ANNOTATION } from './kube/mig-manager.ts';
import type { Node, Pod } from './kube/types.ts';
import { allocateGpus, gpuSpecsOf, isGpuNode, type ClaimGpus, type GpuSpec } from './node-gpus.ts';
import { mockScenario, nodeDir, writeNodeFiles, type NodeFiles, type NvmlOverride } from './node-files.ts';
import { NodeProcesses } from './node-processes.ts';
import { nodeSharing, type PluginSharing } from './plugin-sharing.ts';
import { StackPodResources } from './pod-resources/index.ts';
import type { FaultStepT, Scenario } from './scenario.ts';
import type { StackAgents } from './stack-agents.ts';
import type { StackKube } from './stack-kube.ts';
import type { TimelineEntry } from './timeline.ts';

/** An agent node's files, its GPUs' PCI bus ids, and what runs on its GPUs. */
export type AgentNodeFiles = NodeFiles & { pci: string[]; tracker: NodeProcesses };

/**
 * The stack's GPU nodes that run an agent: each one's mock NVML files, the processes on its GPUs
 * (kept in step with the pods the cluster places there), its kubelet's PodResources socket, and
 * the nodes that join or leave during the run (a booted or removed cloud instance).
 */
export class StackNodes {
  readonly files = new Map<string, AgentNodeFiles>();
  readonly nodeFiles: NodeFiles[] = [];
  readonly gpuSpecsByNode = new Map<string, GpuSpec[]>();
  // NVIDIA's plugin config per node (time-slicing, MPS: plugin-sharing.ts), from its namespace's ConfigMaps.
  readonly sharingByNode = new Map<string, PluginSharing>();
  /** GPU nodes that joined since the last step: their agents start at the next one. */
  readonly joinedNodes: string[] = [];
  readonly leftNodes: string[] = [];
  /** GPUs that will not come back from their node's next reboot (scenario.ts afterReboot), by node. */
  readonly lostOnReboot = new Map<string, Set<number>>();
  // Each agent node's kubelet serves PodResources v1 from what was allocated there (pod-resources/).
  readonly podResources = new StackPodResources();
  /** Agent nodes whose pods changed since the last step. */
  readonly dirty = new Set<string>();
  /** The device plugin stand-in is made once the agents run; the kubelets ask it at each call. */
  devicePlugin: DevicePluginStandIn | undefined;
  private rebootSeq = 0;

  constructor(
    private readonly d: {
      scenario: Scenario;
      work: string;
      library: string;
      sim: KubeSim | undefined;
      policy: Policy;
      podNames: Map<string, string>;
      emit: (e: Omit<TimelineEntry, 'atMs'>) => void;
    },
  ) {}

  // A reboot power-cycles the node's GPUs: its agent's mock NVML resets each one (control dir,
  // as the mock nvidia-smi asks), so a lost GPU comes back as it would from a real reboot.
  onReboot(node: string): void {
    const dir = nodeDir(this.d.work, node).controlDir;
    for (const g of this.gpuSpecsByNode.get(node) ?? []) {
      // Scripted adversity (scenario.ts afterReboot): this GPU stays off the bus after the power
      // cycle; nothing resets it, and the device plugin no longer enumerates it.
      if (this.lostOnReboot.get(node)?.has(g.index)) {
        this.devicePlugin?.lose(node, g.index);
        this.d.emit({
          who: 'scenario',
          kind: 'note',
          what: '',
          text:
            `GPU ${g.index} of ${node} does not come back from the reboot: still off the bus, NVML and the ` +
            `device plugin no longer list it`,
        });
        continue;
      }
      const id = `reboot-${++this.rebootSeq}`;
      writeFileSync(join(dir, `.${id}.tmp`), `reset ${g.uuid}\n`);
      renameSync(join(dir, `.${id}.tmp`), join(dir, `${id}.req`));
    }
  }

  /** Writes each agent node's mock NVML files, with the processes its pods run on its GPUs. */
  async prepare(nodes: Node[], kube: StackKube, faultSteps: FaultStepT[]): Promise<void> {
    const { scenario, work, library, sim, policy, podNames } = this.d;
    const { files, nodeFiles, gpuSpecsByNode, sharingByNode } = this;
    const agentNodes =
      scenario.agents.nodes === 'all-gpu-nodes'
        ? nodes.filter(isGpuNode).map((n) => n.metadata.name)
        : scenario.agents.nodes;
    const configMaps = (sim?.store.list('configmaps') ?? []).filter(
      (c) => c.metadata.namespace === policy.fence.nvidiaPlugin.namespace,
    ) as { data?: Record<string, string> }[];
    const sharedOf = (name: string) => this.sharedOf(name);
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
  }

  private sharedOf(name: string) {
    const s = this.sharingByNode.get(name);
    return s ? { resource: s.resource, replicas: s.replicas, strategy: s.strategy } : undefined;
  }

  async servePodResources(name: string): Promise<void> {
    const { sim, policy } = this.d;
    const { files, sharingByNode } = this;
    const f = files.get(name);
    if (!sim || !f) return;
    const store = sim.store;
    await this.podResources.add(f.podResourcesSocket, {
      node: name,
      gpus: () => files.get(name)?.tracker.gpuSpecs ?? [],
      allocation: () => files.get(name)?.tracker.current ?? [],
      pods: () => store.podsOnNode(name),
      notAdvertised: () => this.devicePlugin?.notAdvertised(name) ?? { held: [], gone: new Set() },
      sharing: () => sharingByNode.get(name),
      draDriver: policy.fence.dra.driver,
    });
  }

  /** Pods arriving on or leaving an agent's node change what runs on its GPUs (NodeProcesses). */
  watchPods(): (() => void) | undefined {
    const { sim, work } = this.d;
    const { files, dirty } = this;
    if (!sim) return undefined;
    return sim.store.subscribe((e) => {
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
  }

  syncProcesses(): void {
    const { sim } = this.d;
    const devicePlugin = this.devicePlugin;
    for (const n of this.dirty)
      this.files
        .get(n)
        ?.tracker.update(sim!.store.podsOnNode(n), devicePlugin?.fenced(n), devicePlugin?.replicasOut(n));
    this.dirty.clear();
  }

  // A GPU node that joined (a booted cloud instance) gets its agent, as the DaemonSet starts a pod
  // on a new node: its own mock NVML with the GPUs its labels say, no process on them yet.
  async startJoinedAgents(agents: StackAgents): Promise<void> {
    const { scenario, work, library, sim, emit } = this.d;
    const { files, podResources, gpuSpecsByNode, dirty } = this;
    for (const name of this.leftNodes.splice(0)) {
      if (!files.has(name)) continue;
      files.delete(name);
      await agents.remove(name);
      await podResources.remove(name);
      emit({ who: 'stack', kind: 'stack', what: '', text: `${name} left: its node agent stops` });
    }
    if (scenario.agents.nodes !== 'all-gpu-nodes' || !sim) return;
    for (const name of this.joinedNodes.splice(0)) {
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
      await this.servePodResources(name);
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
  }
}
