import { appendFileSync, copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describeXid } from '../../events/xid.ts';
import type { GpuProcessOfPod, GpuSpec } from './node-gpus.ts';
import type { Fault } from './scenario.ts';

/**
 * The files one simulated GPU node's agent reads, as a DaemonSet pod would see the host: its own
 * copy of the mock NVML library (so each dlopen in one process is a separate GPU box), the mock
 * NVML scenario (GPUs, processes, faults at their times), a fake `/proc` whose `<pid>/cgroup`
 * names each GPU process's pod, a kernel log the stack appends `NVRM: Xid` lines to, and the
 * agent's spool and dead-letter files.
 */
export interface NodeFiles {
  node: string;
  dir: string;
  libraryPath: string;
  scenarioPath: string;
  procRoot: string;
  kmsgPath: string;
  /** The mock's live process lists (`processesFile`), kept by NodeProcesses. */
  processesPath: string;
  spoolPath: string;
  deadLetterPath: string;
  /** The simulated kubelet's PodResources socket (infra/local/pod-resources/), when the stack serves one. */
  podResourcesSocket: string;
}

export interface NodeFault {
  atMs: number;
  gpu: number;
  fault: Fault;
}

export interface NvmlOverride {
  driverVersion?: string | undefined;
  cudaVersion?: number | undefined;
  gpus?: Record<string, Record<string, unknown>> | undefined;
  extraGpus?: Record<string, unknown>[] | undefined;
}

/** NVML fault JSON (docs/mock-nvml.md) for one scenario fault. */
function mockFault(f: NodeFault): Record<string, unknown> {
  const { kind } = f.fault;
  const base = { atMs: f.atMs, gpu: f.gpu, kind };
  switch (f.fault.kind) {
    case 'xid':
      return {
        ...base,
        xid: f.fault.xid,
        ...(f.fault.gpuInstanceId !== undefined ? { gpuInstanceId: f.fault.gpuInstanceId } : {}),
      };
    case 'ecc':
      return {
        ...base,
        ...(f.fault.corrected !== undefined ? { corrected: f.fault.corrected } : {}),
        ...(f.fault.uncorrected !== undefined ? { uncorrected: f.fault.uncorrected } : {}),
      };
    case 'recoveryAction':
      return { ...base, action: f.fault.action };
    case 'nvlinkDown':
      return { ...base, link: f.fault.link };
    default:
      return base;
  }
}

/** The node's mock NVML scenario: generated GPUs and processes, scenario overrides, faults. */
/** A GPU's MIG devices in the mock's format (scenario `migDevices`, and each entry of its `migFile`). */
export function migDevicesJson(g: GpuSpec): object[] {
  return g.mig.map((s) => ({
    profile: s.profile,
    giProfileId: s.giProfileId,
    start: s.start,
    size: s.size,
    giId: s.giId,
    ciId: 0,
    uuid: `MIG-${g.uuid.slice(4, 28)}${String(s.giId).padStart(12, '0')}`,
  }));
}

export function mockScenario(
  gpus: readonly GpuSpec[],
  procs: readonly GpuProcessOfPod[],
  faults: readonly NodeFault[],
  override: NvmlOverride = {},
  processesFile?: string,
  controlDir?: string,
  migFile?: string,
): object {
  const t4 = (g: GpuSpec) => g.name.includes('T4');
  const generated = gpus.map((g) => ({
    name: g.name,
    uuid: g.uuid,
    pciBusId: g.pciBusId,
    pciDeviceId: g.pciDeviceId,
    memoryTotalMiB: g.memoryTotalMiB,
    powerLimitW: g.powerLimitW,
    ...(g.mig.length > 0 ? { migCapable: true, migMode: true, migDevices: migDevicesJson(g) } : {}),
    // A board that refuses a single-GPU reset (gpu-reset-scope.ts; mock-nvml/src/control-dir.c).
    ...(g.resetScope ? { resetScope: g.resetScope } : {}),
    ...(t4(g)
      ? { unsupported: ['remappedRows', 'nvlink', 'recoveryAction'], supportedEvents: 15 }
      : { nvlinkCount: g.name.includes('A10 ') || g.name.endsWith('A10') ? 0 : 12 }),
    series: {
      intervalMs: 1000,
      loop: true,
      util: [62, 71, 68, 75],
      memUtil: [40, 44, 41, 47],
      tempC: [58, 60, 61, 59],
      powerW: [Math.round(g.powerLimitW * 0.55), Math.round(g.powerLimitW * 0.6)],
    },
    processes: procs
      .filter((p) => p.gpu === g.index && !p.noProcess)
      .map((p) => ({
        pid: p.pid,
        usedMiB: p.usedMiB,
        ...(p.mps === 'client' ? { mps: 1 } : {}),
        ...(p.gpuInstanceId !== undefined ? { gpuInstanceId: p.gpuInstanceId, computeInstanceId: 0 } : {}),
      })),
    ...(override.gpus?.[String(g.index)] ?? {}),
  }));
  return {
    driverVersion: override.driverVersion ?? '550.54.15',
    cudaVersion: override.cudaVersion ?? 12040,
    ...(processesFile ? { processesFile } : {}),
    // Where the mock nvidia-smi asks the agent's library for a reset (mock-nvml/src/control-dir.c).
    ...(controlDir ? { controlDir } : {}),
    // Who else holds the GPUs open: the GPU Operator's client pods on the node (gpu-operator.ts).
    ...(controlDir ? { clientsFile: clientsFileOf(controlDir) } : {}),
    // What mig-manager leaves on the GPUs after a relayout (mock-nvml/src/mig-file.c), kept by NodeProcesses.
    ...(migFile && gpus.some((g) => g.mig.length > 0) ? { migFile } : {}),
    gpus: [...generated, ...(override.extraGpus ?? [])],
    faults: [...faults].sort((a, b) => a.atMs - b.atMs).map(mockFault),
  };
}

/** Where a node's files go under `root` (the processes file must be named in its scenario). */
export function nodeDir(
  root: string,
  node: string,
): {
  dir: string;
  procRoot: string;
  processesPath: string;
  controlDir: string;
  migPath: string;
  clientsPath: string;
} {
  const dir = join(root, node);
  return {
    dir,
    procRoot: join(dir, 'proc'),
    processesPath: join(dir, 'processes.json'),
    controlDir: join(dir, 'nvml-control'),
    migPath: join(dir, 'mig.json'),
    clientsPath: clientsFileOf(join(dir, 'nvml-control')),
  };
}

/** The node's mock NVML `clientsFile` (gpu-operator.ts writes it), beside its control directory. */
export function clientsFileOf(controlDir: string): string {
  return join(dirname(controlDir), 'gpu-clients.json');
}

/**
 * Writes the library copy, the scenario and an empty kernel log under `<root>/<node>/`; the fake
 * /proc and the processes file are NodeProcesses' to write. `library` is the built mock.
 */
export function writeNodeFiles(root: string, node: string, library: string, scenario: object): NodeFiles {
  const { dir, procRoot, processesPath, controlDir } = nodeDir(root, node);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(procRoot, { recursive: true });
  mkdirSync(controlDir, { recursive: true });
  const libraryPath = join(dir, 'libnvidia-ml.so.1');
  copyFileSync(library, libraryPath);
  const scenarioPath = join(dir, 'nvml-scenario.json');
  writeFileSync(scenarioPath, JSON.stringify(scenario, null, 2));
  const kmsgPath = join(dir, 'kmsg.log');
  writeFileSync(kmsgPath, '');
  return {
    node,
    dir,
    libraryPath,
    scenarioPath,
    procRoot,
    kmsgPath,
    processesPath,
    spoolPath: join(dir, 'spool.jsonl'),
    deadLetterPath: join(dir, 'dead-letter.jsonl'),
    podResourcesSocket: join(dir, 'pod-resources', 'kubelet.sock'),
  };
}

/** `0000:3b:00` as the kernel prints the bus id (NVML's `00000000:3B:00.0` shortened, lower case). */
function kernelPci(pciBusId: string): string {
  const [, bus = '00', dev = '00'] = /^[0-9A-Fa-f]+:([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})/.exec(pciBusId) ?? [];
  return `0000:${bus}:${dev}`.toLowerCase();
}

/**
 * The driver's kernel-log line for an XID, as `dmesg` prints it. `text`: the driver's own words after
 * the number, written as given (NVLink5 lines name no pid: `149, NETIR_BER_EVENT Nonfatal … (0x… 0x…)`).
 */
export function kmsgXidLine(
  atMs: number,
  pciBusId: string,
  xid: number,
  pid: number | undefined,
  gpuInstanceId?: number,
  text?: string,
): string {
  const stamp = `[${(atMs / 1000).toFixed(6).padStart(12)}]`;
  const gi = gpuInstanceId !== undefined ? ` GPU-I:${String(gpuInstanceId).padStart(2, '0')}` : '';
  const who = pid !== undefined ? `pid=${pid}, name=python` : `pid='<unknown>', name=<unknown>`;
  return (
    `${stamp} NVRM: Xid ` +
    `(PCI:${kernelPci(pciBusId)}${gi}): ${xid}, ${text ?? `${who}, ${describeXid(xid).meaning}`}\n`
  );
}

export function appendKmsg(path: string, line: string): void {
  appendFileSync(path, line);
}
