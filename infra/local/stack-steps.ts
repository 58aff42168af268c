import { renameSync, writeFileSync } from 'node:fs';
import { fenceFilePath, replaceUnhealthyDevices } from './ack-fence-file.ts';
import { replaceUnhealthyCards } from './kube/gpushare.ts';
import type { KubeSim } from './kube/index.ts';
import { resource } from './kube/resources.ts';
import { appendKmsg, kmsgXidLine, mockScenario, nodeDir, type NvmlOverride } from './node-files.ts';
import type { FaultStepT, JoinStepT, NvmlStepT, PodArrival, Scenario, TimelineStep } from './scenario.ts';
import type { StackAgents } from './stack-agents.ts';
import type { StackKube } from './stack-kube.ts';
import type { StackNodes } from './stack-nodes.ts';
import type { TimelineEntry } from './timeline.ts';

/** How often a pod admission refused is created again (a controller's retry). */
const RETRY_CREATE_MS = 10_000;

/**
 * The scenario's timeline steps, carried out: faults at the NVML layer (+ the kernel-log line), maintenance
 * (a node's NVML changes and its agent restarts), pods through the API, and the scripted adversity of the
 * cluster's other components. The timeline prints only what the scenario did; components' lines are effects.
 */
export class ScenarioSteps {
  private readonly overrides: Map<string, NvmlOverride>;
  /** Kernel-log lines waiting for the instant their NVML fault fires. */
  private kernelLines: { dueAt: number; write: () => void }[] = [];
  // Pods admission refused (a quota): created again every RETRY_CREATE_MS, as a Job or
  // ReplicaSet controller retries a failed create.
  private refusedPods: { arrival: PodArrival; name: string; at: number }[] = [];

  constructor(
    private readonly d: {
      scenario: Scenario;
      work: string;
      sim: KubeSim | undefined;
      kube: StackKube;
      nodes: StackNodes;
      agents: StackAgents;
      faultSteps: FaultStepT[];
      emit: (e: Omit<TimelineEntry, 'atMs'>) => void;
      sinceStart: () => number;
    },
  ) {
    this.overrides = new Map<string, NvmlOverride>(Object.entries(d.scenario.nvml));
  }

  // ---- maintenance: a node's NVML changes (driver upgrade, MIG mode) and its agent restarts
  private async maintain(s: NvmlStepT): Promise<void> {
    const { work, agents, emit, faultSteps } = this.d;
    const { files, gpuSpecsByNode } = this.d.nodes;
    const f = files.get(s.node);
    if (!f)
      return emit({
        who: 'scenario',
        kind: 'note',
        what: '',
        text: `${s.node} runs no agent: its NVML is not changed`,
      });
    const was = this.overrides.get(s.node) ?? {};
    const gpus: Record<string, Record<string, unknown>> = { ...was.gpus };
    for (const [i, g] of Object.entries(s.nvml.gpus ?? {})) gpus[i] = { ...gpus[i], ...g };
    const next: NvmlOverride = { ...was, ...s.nvml, gpus };
    this.overrides.set(s.node, next);
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
  }

  async run(s: TimelineStep): Promise<void> {
    const { sim, kube, agents, emit, faultSteps, sinceStart } = this.d;
    const { files, gpuSpecsByNode, lostOnReboot, devicePlugin } = this.d.nodes;
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
        const pid = fault.pid ?? (named ?? onGpu.find((p) => p.gpuInstanceId === fault.gpuInstanceId) ?? onGpu[0])?.pid;
        const line = kmsgXidLine(s.at, f.pci[s.gpu]!, fault.xid, pid, fault.gpuInstanceId, fault.text);
        // Written when the node's NVML fires it (the step itself may run early, see run()).
        this.kernelLines.push({ dueAt: s.at - agents.leadMs(s.node), write: () => appendKmsg(f.kmsgPath, line) });
        // NVIDIA's device plugin sees the same XID through NVML (and latches the GPU).
        devicePlugin?.onXid(s.node, s.gpu, fault.xid);
      }
    } else if ('nvml' in s) {
      await this.maintain(s);
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
        this.refusedPods.push({ arrival: s.pods, name: x.name, at: sinceStart() + RETRY_CREATE_MS });
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
  }

  /** Creates again the refused pods whose retry is due. */
  async retryRefused(): Promise<void> {
    const { kube, emit, sinceStart } = this.d;
    const now = sinceStart();
    const due = this.refusedPods.filter((x) => x.at <= now);
    if (due.length === 0) return;
    this.refusedPods = this.refusedPods.filter((x) => x.at > now);
    for (const x of due) {
      const r = await kube.createPods(x.arrival, x.name);
      if (r.created.length > 0)
        emit({
          who: 'cluster',
          kind: 'cluster',
          what: '',
          text: `pod ${x.arrival.namespace}/${x.name} created on its controller's retry: the quota admits it now`,
        });
      else this.refusedPods.push({ ...x, at: now + RETRY_CREATE_MS });
    }
  }

  /** Writes the kernel-log lines due by `t`. */
  writeKernelLines(t: number): void {
    for (const k of this.kernelLines.filter((k) => k.dueAt <= t)) k.write();
    this.kernelLines = this.kernelLines.filter((k) => k.dueAt > t);
  }
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
