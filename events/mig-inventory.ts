/**
 * The node annotation `gpu-reflex.io/mig-inventory`: what the node agent's actuator reads through
 * NVML about each MIG GPU — its instances, where they sit, and which ones a process runs in. The
 * Kubernetes API says how many instances of a profile a node has, never which GPU holds which pod;
 * the MIG planner needs exactly that to relay only GPUs nothing runs on (functions/mig/supply.ts).
 * The agent writes it (a JSON merge patch of that key) whenever it changes; `at` is when it last did.
 *
 * `checked` is when the agent last read it through NVML and found it so: an unchanged inventory is re-confirmed at
 * least every MIG_INVENTORY_RECONFIRM_MS, and the functions read one confirmed longer than MIG_INVENTORY_STALE_MS ago
 * as unknown (migInventoryStale). `at` alone cannot tell an agent that died (its DaemonSet pod gone, NVML wedged) from
 * GPUs that did not change: the last inventory stays on the Node either way. An inventory without `checked` (an agent
 * from before it; functions are upgraded first, docs/upgrade.md) is read as before, and said so (docs/mig.md).
 */
import * as z from 'zod';
import { count, GpuUuid, MigProfile, Timestamp } from './common.ts';

export const MIG_INVENTORY_ANNOTATION = 'gpu-reflex.io/mig-inventory';
/**
 * How often the agent re-confirms an unchanged inventory. Its actuator reads NVML every GPU_ACTIONS_INTERVAL_MS (5 s
 * by default), but each write changes the Node's resourceVersion and fails a function's update made from an earlier
 * read (a 409, retried): a fixed, slower confirmation the functions can count on without knowing the agent's config,
 * as the allocatable-devices annotation does (events/gpu-devices.ts GPU_DEVICES_RECONFIRM_MS).
 */
export const MIG_INVENTORY_RECONFIRM_MS = 2 * 60_000;
/** A confirmation older than this is no evidence: five re-confirmations missed (a slow tick or API hiccup is not). */
export const MIG_INVENTORY_STALE_MS = 5 * MIG_INVENTORY_RECONFIRM_MS;

export const MigInventorySchema = z
  .object({
    v: z.literal(1),
    at: Timestamp,
    /** When the agent last read the GPUs and found them so (absent: an agent from before it wrote none). */
    checked: Timestamp.optional(),
    gpus: z
      .array(
        z
          .object({
            index: count(),
            uuid: GpuUuid,
            instances: z
              .array(
                z
                  .object({
                    profile: MigProfile,
                    gi: count(),
                    start: count().optional(),
                    size: count().optional(),
                    inUse: z.boolean(),
                    /** UIDs of the pods whose processes run in this instance, where the agent knows them. */
                    pods: z.array(z.string().min(1).max(64)).max(16).optional(),
                    /**
                     * Beside `pods`: a process runs in this instance too whose pod the agent cannot tell (one outside
                     * Kubernetes, or a pod whose cgroup it could not read), so the pods named are not all that holds
                     * it. Optional: absent, `pods` names every process's pod (an older agent never sends it).
                     */
                    unnamed: z.literal(true).optional(),
                  })
                  .strict(),
              )
              .max(7),
            /**
             * Why the agent cannot say which instances processes run in (NVML did not list the GPU's compute
             * processes: `nvmlDeviceGetComputeRunningProcesses_v3` answered NOT_SUPPORTED, NO_PERMISSION,
             * GPU_IS_LOST…); every instance then reads `inUse: true`, naming no pod, and the MIG planner relays
             * nothing on it (functions/mig/inventory-read.ts). Optional: absent, `inUse` is what NVML listed (and
             * an older agent, which never sends it, is read as before).
             */
            inUseUnknown: z.string().min(1).max(256).optional(),
            /**
             * Why NVML's MIG state of this GPU, listed with `instances: []`, is unknown: with no instance,
             * `nvmlDeviceGetMigMode` failed (any error but NOT_SUPPORTED, which NVIDIA's NVML API Reference gives for a
             * GPU without MIG); or, its mode on or unknown, NVML did not list its MIG instances
             * (`nvmlDeviceGetMaxMigDeviceCount`, the instance handles or ids failed, as right after a reset). After a
             * reset only these tell an emptied MIG GPU from one without MIG, or from one whose instances are all there:
             * the MIG planner relays nothing on it, remediation's restore returns no reset GPU on it
             * (functions/remediate/core/mig-restore.ts), and the applied-layout check tells it as drift. Optional:
             * absent, a listed GPU is in MIG mode with the instances listed.
             */
            migModeUnknown: z.string().min(1).max(256).optional(),
            /**
             * The GPU's MIG profile table as NVML offers it (`nvmlDeviceGetGpuInstanceProfileInfoV` and its
             * possible placements): for a model no built-in table lists, the planner's only source
             * (functions/lib/mig-profiles.ts modelFromReported). Optional: older agents do not send it.
             */
            profiles: z
              .array(
                z
                  .object({
                    name: MigProfile,
                    id: count(),
                    sliceCount: count(),
                    instanceCount: count(),
                    placements: z.array(z.object({ start: count(), size: count() }).strict()).max(8),
                  })
                  .strict(),
              )
              .max(32)
              .optional(),
          })
          .strict(),
      )
      .max(16),
  })
  .strict();
export type MigInventory = z.infer<typeof MigInventorySchema>;

/** The annotation's inventory, or why it cannot be read (absent: undefined, no reason). */
export function readMigInventory(annotations: Readonly<Record<string, string>>): {
  inventory?: MigInventory;
  problem?: string;
} {
  const raw = annotations[MIG_INVENTORY_ANNOTATION];
  if (raw === undefined) return {};
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { problem: `${MIG_INVENTORY_ANNOTATION} is not JSON` };
  }
  const parsed = MigInventorySchema.safeParse(json);
  return parsed.success
    ? { inventory: parsed.data }
    : {
        problem:
          `${MIG_INVENTORY_ANNOTATION} does not match the contract ` +
          `(${parsed.error.issues[0]?.path.join('.') ?? ''}: ${parsed.error.issues[0]?.message ?? 'invalid'})`,
      };
}

/**
 * Why the inventory cannot be taken as the GPUs now, or undefined when it can: its agent last confirmed it over
 * MIG_INVENTORY_STALE_MS before `now` (dead, or no longer reading NVML). One without `checked` cannot be dated and is
 * not called stale here: `unconfirmed` says so, for the reader to say.
 */
export function migInventoryStale(inv: Pick<MigInventory, 'checked'>, now: Date): string | undefined {
  if (inv.checked === undefined || now.getTime() - Date.parse(inv.checked) <= MIG_INVENTORY_STALE_MS) return undefined;
  return (
    `the node agent last confirmed its MIG inventory at ${inv.checked}, over ${MIG_INVENTORY_STALE_MS / 60_000} min ` +
    `ago (is the agent running?): what the GPUs hold now is unknown`
  );
}

/** Said of an inventory an agent from before `checked` wrote: read as current, though nothing dates it. */
export const MIG_INVENTORY_UNCONFIRMED =
  'its MIG inventory carries no confirmation time (written by a node agent older than the `checked` stamp): ' +
  'read as current, though whether that agent still runs is unknown; upgrade the agent';
