/**
 * The actuator's ports over what a node really has: its Node object through the Kubernetes API
 * (client-node; RBAC nodes get/patch — the DaemonSet's service account), and its GPUs through
 * NVML plus a reset tool (`nvidia-smi --gpu-reset`, or the mock NVML library's reset under the
 * local stack).
 */
import { execFile } from 'node:child_process';
import { PatchStrategy, setHeaderOptions, type CoreV1Api } from '@kubernetes/client-node';
import {
  GPU_ACTION_RESULTS_ANNOTATION,
  GPU_DEVICES_ANNOTATION,
  MIG_INVENTORY_ANNOTATION,
  type MigInventory,
} from '../../events/index.ts';
import { gpuInstanceProfiles, migDevices, migMode } from '../nvml/mig.ts';
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
function processesOf(d: ReturnType<Nvml['devices']>[number]): GpuProcess[] | { unknown: string } {
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

/**
 * Each MIG GPU's instances through NVML, with whether a process runs in each (its GPU instance
 * id): what the MIG planner needs and the Kubernetes API cannot say. A GPU whose processes NVML does
 * not list reads every instance in use, with why (`inUseUnknown`), never "nothing runs here". A GPU in MIG mode with no
 * instance is listed with none: a reset destroys every instance and only mig-manager recreates
 * them, so an empty MIG GPU is a fact the functions must see (never returned to service so).
 * GPUs without MIG mode are left out; one with no instance whose mode NVML cannot read is listed empty, with why.
 */
/** The names the inventory's contract takes (events/common.ts MigProfile); a table row named otherwise is left out. */
const MIG_PROFILE_NAME = /^\d+g\.\d+gb(\+me|\+me\.all|-me|\+gfx)?$/;

export function nvmlMigInventory(
  nvml: Nvml,
  podOfPid: (pid: number) => string | undefined = () => undefined,
): () => MigInventory['gpus'] {
  // A GPU's profile table never changes while the driver runs: read once per GPU (by UUID).
  const tables = new Map<string, NonNullable<MigInventory['gpus'][number]['profiles']>>();
  const tableOf = (d: ReturnType<Nvml['devices']>[number], uuid: string) => {
    if (!tables.has(uuid)) {
      let rows: ReturnType<typeof gpuInstanceProfiles> = [];
      try {
        rows = gpuInstanceProfiles(nvml, d);
      } catch {
        return undefined; // not read now: asked again next time
      }
      tables.set(
        uuid,
        rows
          .filter((p) => MIG_PROFILE_NAME.test(p.name))
          .slice(0, 32)
          .map((p) => ({
            name: p.name,
            id: p.id,
            sliceCount: p.sliceCount,
            instanceCount: p.instanceCount,
            placements: p.placements.slice(0, 8).map((x) => ({ start: x.start, size: x.size })),
          })),
      );
    }
    const t = tables.get(uuid)!;
    return t.length > 0 ? t : undefined;
  };
  return () => {
    const out: MigInventory['gpus'] = [];
    nvml.devices().forEach((d, index) => {
      let devices: ReturnType<typeof migDevices>;
      try {
        devices = migDevices(nvml, d);
      } catch {
        return; // a GPU NVML cannot read (lost, or refusing) is not listed: the planner then sees no layout for it
      }
      // Only for a GPU with no instance (most have none): MIG-enabled but empty? Unknown: listed empty, with why.
      const mode = devices.length ? true : migModeOn(nvml, d);
      if (mode === false) return;
      const uuid = d.uuid();
      if (typeof mode === 'string') return void out.push({ index, uuid, instances: [], migModeUnknown: mode });
      // Which instances processes run in, or why NVML cannot say: then every instance reads in use, and the
      // GPU says why (the planner relays nothing on it), where `?? []` called a GPU NVML could not list idle.
      const listed = processesOf(d);
      const unknown = Array.isArray(listed) ? undefined : listed.unknown;
      const procs = Array.isArray(listed) ? listed : [];
      const busy = new Set(procs.map((p) => p.gpuInstanceId).filter((gi): gi is number => gi !== undefined));
      // The pods running in each instance, where the agent knows the process's pod: which pod holds
      // which instance is what the MIG planner cannot get from the Kubernetes API (preemption). `unnamed`:
      // a process there the agent cannot tie to a pod, or pods past the contract's 16: the pods named are
      // then not all that holds the instance (the planner takes them as its holders only where they are).
      const podsIn = (gi: number) => {
        const owners = procs.filter((p) => p.gpuInstanceId === gi).map((p) => podOfPid(p.pid));
        const named = [...new Set(owners.filter((u): u is string => u !== undefined))].sort();
        return { pods: named.slice(0, 16), unnamed: owners.some((u) => u === undefined) || named.length > 16 };
      };
      const instances = devices
        .filter((m): m is typeof m & { profile: string } => m.profile !== undefined)
        .map((m) => {
          const { pods, unnamed } = podsIn(m.gpuInstanceId);
          return {
            profile: m.profile,
            gi: m.gpuInstanceId,
            ...(m.placement ? { start: m.placement.start, size: m.placement.size } : {}),
            inUse: unknown !== undefined || busy.has(m.gpuInstanceId),
            ...(pods.length ? { pods } : {}),
            // Only beside pods: an instance in use that names none is already one whose holders are unknown.
            ...(pods.length && unnamed ? { unnamed: true as const } : {}),
          };
        })
        .sort((a, b) => (a.start ?? 0) - (b.start ?? 0) || a.gi - b.gi);
      const profiles = tableOf(d, uuid);
      out.push({
        index,
        uuid,
        instances,
        ...(unknown !== undefined ? { inUseUnknown: unknown } : {}),
        ...(profiles ? { profiles } : {}),
      });
    });
    return out;
  };
}

/**
 * MIG mode is on now, or why NVML cannot say. NOT_SUPPORTED is a GPU without MIG (NVML API Reference,
 * nvmlDeviceGetMigMode: "NVML_ERROR_NOT_SUPPORTED if device doesn't support MIG mode"); any other error is unknown,
 * never "off" (as in the agent's published inventory, collectors/mig-mode-watch.ts).
 */
function migModeOn(nvml: Nvml, d: ReturnType<Nvml['devices']>[number]): boolean | string {
  try {
    return migMode(nvml, d)?.current === true;
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return `NVML did not say whether it is in MIG mode (${why})`.slice(0, 256);
  }
}
