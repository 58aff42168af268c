import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pod } from './kube/types.ts';
import {
  allocateGpus,
  cgroupLine,
  type ClaimGpus,
  type GpuProcessOfPod,
  type GpuSpec,
  type SharedGpus,
} from './node-gpus.ts';
import { migDevicesJson } from './node-files.ts';

/**
 * What runs on one simulated node's GPUs, kept in step with the cluster: when pods arrive on the
 * node or leave it, the device-plugin allocation is updated (running pods keep their GPUs), the
 * node's fake `/proc` gains or loses `<pid>/cgroup`, and the mock NVML's `processesFile` is
 * replaced (the mock re-reads it, docs/mock-nvml.md). So the agent sees the pods that run there
 * now, through the same NVML → pid → cgroup → pod path. Terminating pods keep their processes
 * until the API server deletes them (their grace period), as containers do.
 */
export class NodeProcesses {
  private procs: GpuProcessOfPod[];
  private nextPid: number;

  constructor(
    private gpus: readonly GpuSpec[],
    private readonly procRoot: string,
    private readonly processesFile: string,
    initial: readonly GpuProcessOfPod[],
    /** The device plugin shares the node's GPUs (time-slicing or MPS replicas). */
    private readonly shared?: SharedGpus,
    /**
     * false: the agent does not share the host's PID namespace (a DaemonSet without hostPID): NVML
     * still lists the processes, but their `/proc/<pid>` is not there, so no pid names its pod.
     */
    private readonly hostPid = true,
    /** The devices the scheduler allocated to each pod's claims (the cluster's ResourceClaims). */
    private readonly claimGpus?: ClaimGpus,
  ) {
    this.procs = [...initial];
    this.nextPid = Math.max(4099, ...initial.map((p) => p.pid)) + 1;
    this.write(initial, []);
  }

  get current(): readonly GpuProcessOfPod[] {
    return this.procs;
  }

  /** The node's GPUs as of the last relayout. */
  get gpuSpecs(): readonly GpuSpec[] {
    return this.gpus;
  }

  /**
   * mig-manager changed the node's MIG layout: the mock's `migFile` gets every GPU's new instances
   * (what NVML lists from now on), and processes on GPUs whose layout changed are dropped (a
   * relayout wipes their instances; the rebalancer only relays GPUs nothing runs on). The next
   * `update` allocates on the new instances.
   */
  relayout(gpus: readonly GpuSpec[], migFile: string): void {
    const same = (a: GpuSpec | undefined, b: GpuSpec) => JSON.stringify(a?.mig ?? []) === JSON.stringify(b.mig);
    const changed = new Set(gpus.filter((g) => !same(this.gpus[g.index], g)).map((g) => g.index));
    this.gpus = gpus;
    writeFileSync(`${migFile}.tmp`, JSON.stringify(gpus.map(migDevicesJson)));
    renameSync(`${migFile}.tmp`, migFile);
    const dropped = this.procs.filter((p) => changed.has(p.gpu));
    if (dropped.length === 0) return;
    this.procs = this.procs.filter((p) => !changed.has(p.gpu));
    this.write([], dropped);
  }

  /** `pods`: the pods bound to the node now. Returns whether anything changed. */
  update(
    pods: readonly Pod[],
    fenced: ReadonlySet<number> = new Set(),
    replicasOut?: ReadonlyMap<number, number>,
  ): boolean {
    const live = (p: Pod) =>
      p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed' && !p.metadata.deletionTimestamp;
    const running = pods.filter(
      (p) =>
        p.status?.phase !== 'Succeeded' &&
        p.status?.phase !== 'Failed' &&
        !p.metadata.ownerReferences?.some((o) => o.kind === 'DaemonSet'),
    );
    const shared = this.shared ? { ...this.shared, ...(replicasOut ? { replicasOut } : {}) } : undefined;
    const tenants = allocateGpus(
      this.gpus,
      running,
      this.nextPid,
      this.procs.filter((p) => p.mps !== 'server'),
      fenced,
      shared,
      this.claimGpus,
    );
    const next = [...tenants, ...this.mpsServers(tenants, pods.filter(live))];
    const before = new Set(this.procs.map((p) => p.pid));
    const after = new Set(next.map((p) => p.pid));
    const added = next.filter((p) => !before.has(p.pid));
    const removed = this.procs.filter((p) => !after.has(p.pid));
    if (added.length === 0 && removed.length === 0) return false;
    this.procs = next;
    this.nextPid = Math.max(this.nextPid - 1, ...next.map((p) => p.pid)) + 1;
    this.write(added, removed);
    return true;
  }

  /**
   * MPS: the control daemon (NVIDIA's `*-mps-control-daemon` DaemonSet pod, k8s-device-plugin
   * cmd/mps-control-daemon) runs the MPS server, one compute process per card that has clients; NVML
   * lists the server among compute processes and the clients apart (nvmlDeviceGetMPSComputeRunningProcesses_v3,
   * reference sharing.md §2). A server keeps its pid while its card has clients.
   */
  private mpsServers(tenants: readonly GpuProcessOfPod[], pods: readonly Pod[]): GpuProcessOfPod[] {
    if (this.shared?.strategy !== 'mps') return [];
    const daemon = pods.find((p) => p.metadata.name.includes('mps-control-daemon'));
    if (!daemon) return [];
    const ref = {
      uid: daemon.metadata.uid,
      namespace: daemon.metadata.namespace ?? 'default',
      name: daemon.metadata.name,
    };
    const cards = [...new Set(tenants.filter((p) => p.mps === 'client').map((p) => p.gpu))];
    let pid = Math.max(this.nextPid, ...tenants.map((p) => p.pid + 1));
    return cards.map(
      (gpu) =>
        this.procs.find((p) => p.mps === 'server' && p.gpu === gpu && p.pod.uid === ref.uid) ?? {
          pid: pid++,
          gpu,
          usedMiB: 30,
          pod: ref,
          mps: 'server' as const,
        },
    );
  }

  private write(added: readonly GpuProcessOfPod[], removed: readonly GpuProcessOfPod[]): void {
    for (const p of removed) rmSync(join(this.procRoot, String(p.pid)), { recursive: true, force: true });
    for (const p of this.hostPid ? added.filter((a) => !a.noProcess) : []) {
      mkdirSync(join(this.procRoot, String(p.pid)), { recursive: true });
      writeFileSync(join(this.procRoot, String(p.pid), 'cgroup'), cgroupLine(p.pod.uid, p.pid));
      writeFileSync(join(this.procRoot, String(p.pid), 'comm'), 'python\n');
    }
    const lists = this.gpus.map((g) =>
      this.procs
        .filter((p) => p.gpu === g.index && !p.noProcess)
        .map((p) => ({
          pid: p.pid,
          usedMiB: p.usedMiB,
          ...(p.mps === 'client' ? { mps: 1 } : {}),
          ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId, computeInstanceId: 0 } : {}),
        })),
    );
    // Replace, never rewrite in place: the agent's NVML may read it at any moment.
    writeFileSync(`${this.processesFile}.tmp`, JSON.stringify(lists));
    renameSync(`${this.processesFile}.tmp`, this.processesFile);
  }
}
