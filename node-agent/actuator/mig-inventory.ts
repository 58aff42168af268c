/**
 * The MIG inventory the actuator writes on its Node (events/mig-inventory.ts), read through NVML: its own file, out of
 * ports.ts (the file-size contract, test/contract/file-size.test.ts).
 */
import type { MigInventory } from '../../events/index.ts';
import { gpuInstanceProfiles, migDevices, migMode } from '../nvml/mig.ts';
import type { Nvml } from '../nvml/nvml.ts';
import { processesOf } from './ports.ts';

/**
 * Each MIG GPU's instances through NVML, with whether a process runs in each (its GPU instance
 * id): what the MIG planner needs and the Kubernetes API cannot say. A GPU whose processes NVML does
 * not list reads every instance in use, with why (`inUseUnknown`), never "nothing runs here". A GPU in MIG mode with no
 * instance is listed with none: a reset destroys every instance and only mig-manager recreates
 * them, so an empty MIG GPU is a fact the functions must see (never returned to service so).
 * GPUs without MIG mode are left out; one with no instance whose mode NVML cannot read, or one in MIG mode (or whose
 * mode NVML cannot read) whose instances NVML does not list, is listed empty, with why (`migModeUnknown`).
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
      } catch (err) {
        const listed = unlisted(nvml, d, index, err);
        return void (listed && out.push(listed));
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
 * A GPU whose MIG instances NVML did not list (right after a reset the listing can fail while the mode still reads
 * on): listed empty with why, as one whose mode NVML cannot read, where leaving it out let remediation's restore
 * (functions/remediate/core/mig-restore.ts) read "nothing of MIG to wait for" and return the emptied GPU to service;
 * what it holds is unknown, so the planner relays nothing on it either. Left out: a GPU whose mode NVML reads off (or
 * NOT_SUPPORTED: no MIG), and one NVML cannot even name (lost: the inventory is by UUID; its health probe fails on the
 * same UUID read, ports.ts nvmlGpus, so it is not returned to service on this).
 */
function unlisted(
  nvml: Nvml,
  d: ReturnType<Nvml['devices']>[number],
  index: number,
  err: unknown,
): MigInventory['gpus'][number] | undefined {
  if (migModeOn(nvml, d) === false) return undefined;
  let uuid: string;
  try {
    uuid = d.uuid();
  } catch {
    return undefined;
  }
  const why = err instanceof Error ? err.message : String(err);
  return { index, uuid, instances: [], migModeUnknown: `NVML did not list its MIG instances (${why})`.slice(0, 256) };
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
