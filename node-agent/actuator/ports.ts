/**
 * The actuator's ports over what a node really has: its Node object through the Kubernetes API
 * (client-node; RBAC nodes get/patch — the DaemonSet's service account), and its GPUs through
 * NVML plus a reset tool (`nvidia-smi --gpu-reset`, or the mock NVML library's reset under the
 * local stack).
 */
import { execFile } from 'node:child_process';
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import { GPU_ACTION_RESULTS_ANNOTATION, GPU_DEVICES_ANNOTATION, MIG_INVENTORY_ANNOTATION } from '../../events/index.ts';
import type { GpuProcess } from '../nvml/device-types.ts';
import type { Nvml } from '../nvml/nvml.ts';
import type { ActuatorGpus, ActuatorNode, GpuHealthReading } from './actuator.ts';

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export function kubeNode(core: CoreV1Api, name: string): ActuatorNode {
  let gpus: number | undefined;
  return {
    async annotations() {
      const n = await core.readNode({ name });
      gpus = gpuDevices(n.status?.allocatable);
      return { ...(n.metadata?.annotations ?? {}) };
    },
    gpuAllocatable: () => gpus,
    async writeResults(json) {
      await core.patchNode(
        { name, body: { metadata: { annotations: { [GPU_ACTION_RESULTS_ANNOTATION]: json } } } },
        MERGE_PATCH,
      );
    },
    async writeGpuDevices(json) {
      await core.patchNode(
        { name, body: { metadata: { annotations: { [GPU_DEVICES_ANNOTATION]: json } } } },
        MERGE_PATCH,
      );
    },
    async writeMigInventory(json) {
      await core.patchNode(
        { name, body: { metadata: { annotations: { [MIG_INVENTORY_ANNOTATION]: json } } } },
        MERGE_PATCH,
      );
    },
  };
}

/** GPU devices in a Node's allocatable: every `nvidia.com/` resource (whole GPUs, MIG devices, shared replicas). */
function gpuDevices(allocatable: Record<string, string> | undefined): number | undefined {
  if (!allocatable) return undefined;
  let n = 0;
  for (const [k, v] of Object.entries(allocatable)) if (k.startsWith('nvidia.com/')) n += Number(v) || 0;
  return n;
}

/** Resets one GPU by UUID: ok, or why not (the tool's own words). */
export type GpuReset = (uuid: string, index: number) => Promise<{ ok: true } | { ok: false; reason: string }>;

export function nvmlGpus(
  nvml: Nvml,
  reset: GpuReset,
  podOfPid: (pid: number) => string | undefined = () => undefined,
): ActuatorGpus {
  const indexOf = (uuid: string): number | undefined => {
    const devices = nvml.devices();
    for (let i = 0; i < devices.length; i++) {
      try {
        if (devices[i]!.uuid() === uuid) return i;
      } catch {
        // A GPU that fell off the bus answers no UUID (NVML_ERROR_GPU_IS_LOST): it is not counted, and
        // every other GPU's action goes on (a throw here stalled every GPU action of the node).
      }
    }
    return undefined;
  };
  const byUuid = (uuid: string) => {
    const i = indexOf(uuid);
    return i === undefined ? undefined : nvml.device(i);
  };
  return {
    indexOf,
    holders(uuid) {
      const d = byUuid(uuid);
      // A GPU NVML does not know has no processes to list; its reset is refused by indexOf first.
      if (!d) return [];
      const procs = processesOf(d);
      if (!Array.isArray(procs)) return procs;
      return [...new Set(procs.map((p) => podOfPid(p.pid) ?? `pid ${p.pid}`))];
    },
    async reset(uuid) {
      const i = indexOf(uuid);
      if (i === undefined) return { ok: false, reason: 'NVML does not know this GPU' };
      return reset(uuid, i);
    },
    drain(uuid, on) {
      const d = byUuid(uuid);
      if (!d) return { ok: false, reason: 'NVML does not know this GPU' };
      try {
        d.setDrainState(on);
        return { ok: true };
      } catch (err) {
        return { ok: false, reason: err instanceof Error ? err.message : String(err) };
      }
    },
    health(uuid): GpuHealthReading {
      const d = byUuid(uuid);
      if (!d)
        return {
          nvmlAnswers: false,
          recoveryAction: 'unknown',
          remapPending: false,
          remapFailed: false,
          eccUncorrected: 0,
        };
      try {
        const rows = d.remappedRows();
        const ecc = d.ecc();
        const ra = d.recoveryAction();
        // Unknown is never none: a driver without field 230 (undefined) or a code nvml.h does not
        // name (events/xid.ts) reads `unknown` / `code N`, and neither passes a probe.
        return {
          nvmlAnswers: true,
          recoveryAction: ra?.action ?? (ra ? `code ${ra.code}` : 'unknown'),
          remapPending: rows?.pending ?? false,
          remapFailed: rows?.failure ?? false,
          // No ECC (off or absent: no counter at all) has nothing to count; ECC on without this counter is unknown.
          eccUncorrected: ecc?.aggregateUncorrected ?? 0,
          ...(ecc !== undefined && ecc.aggregateUncorrected === undefined ? { eccUnreadable: true } : {}),
        };
      } catch {
        return {
          nvmlAnswers: false,
          recoveryAction: 'unknown',
          remapPending: false,
          remapFailed: false,
          eccUncorrected: 0,
        };
      }
    },
  };
}

/**
 * A GPU's compute processes, or why NVML gave none: NOT_SUPPORTED answers undefined, any other error
 * throws (options.ts Holders). Either is unknown, never "no process" (a reset, a drain or a relayout
 * of a GPU something runs on).
 */
export function processesOf(d: ReturnType<Nvml['devices']>[number]): GpuProcess[] | { unknown: string } {
  try {
    return (
      d.processes() ?? {
        unknown: 'NVML cannot list its compute processes (nvmlDeviceGetComputeRunningProcesses_v3: NOT_SUPPORTED)',
      }
    );
  } catch (err) {
    return {
      unknown: `NVML did not list its compute processes (${err instanceof Error ? err.message : String(err)})`.slice(
        0,
        256,
      ),
    };
  }
}

/**
 * `nvidia-smi --gpu-reset -i <uuid>`: ok on exit 0; otherwise its own words (last line of its
 * output), or why it could not run. Bounded (a reset that hangs is a failed reset). Run without
 * blocking: a reset takes seconds, and the agent keeps watching its other GPUs (XIDs, health)
 * meanwhile; the local stack's mock nvidia-smi even needs the agent's NVML calls to answer it.
 */
export function nvidiaSmiReset(path: string, timeoutMs = 120_000): GpuReset {
  return (uuid) =>
    new Promise((done) => {
      execFile(path, ['--gpu-reset', '-i', uuid], { encoding: 'utf8', timeout: timeoutMs }, (err, stdout, stderr) => {
        if (!err) return done({ ok: true });
        const e = err as NodeJS.ErrnoException & { code?: string | number; killed?: boolean; signal?: string | null };
        if (typeof e.code === 'string') return done({ ok: false, reason: `${path}: ${e.code}` });
        const said = `${stdout ?? ''}\n${stderr ?? ''}`.trim().split('\n').filter(Boolean).at(-1) ?? '';
        const how = e.killed ? `timed out after ${timeoutMs} ms` : `exited ${e.code ?? e.signal}`;
        done({ ok: false, reason: `${path} --gpu-reset ${how}${said ? `: ${said}` : ''}` });
      });
    });
}
