/**
 * What the actuator (actuator.ts) writes on its Node besides its answers, each tick, each rewritten only
 * when what it says changed: the GPUs' allocatable device IDs (events/gpu-devices.ts) and the MIG
 * inventory (events MIG_INVENTORY_ANNOTATION). A dry run writes neither.
 */
import {
  GPU_DEVICES_ANNOTATION,
  GPU_DEVICES_RECONFIRM_MS,
  MIG_INVENTORY_ANNOTATION,
  MIG_INVENTORY_RECONFIRM_MS,
  readGpuDevices,
  readMigInventory,
  type GpuDevices,
  type MigInventory,
} from '../../events/index.ts';
import type { ActuatorOptions } from './options.ts';

/** The allocatable-devices annotation, rewritten only when what it says changed (`at`: when it last did). */
export async function writeGpuDevices(o: ActuatorOptions, before: string | undefined): Promise<void> {
  if (!o.devices || !o.nodeApi.writeGpuDevices || o.dryRun) return;
  const now = await o.devices();
  const prior = readGpuDevices({ [GPU_DEVICES_ANNOTATION]: before ?? '' });
  const said = (d: { known: boolean; reason?: string; gpus?: Record<string, string[]> }) =>
    JSON.stringify([d.known, d.reason ?? '', d.gpus ?? {}]);
  const stamp = new Date(o.now()).toISOString();
  if (prior && said(prior) === said(now)) {
    // Unchanged: re-confirmed only while a GPU is out, what a verified fence rests on (events/gpu-devices.ts).
    const out = Object.values(prior.gpus).some((ids) => ids.length === 0);
    const last = Date.parse(prior.checked ?? prior.at);
    if (!out || o.now() - last < GPU_DEVICES_RECONFIRM_MS) return;
    await o.nodeApi.writeGpuDevices(JSON.stringify({ ...prior, checked: stamp } satisfies GpuDevices));
    return;
  }
  const doc: GpuDevices = {
    v: 1,
    at: stamp,
    checked: stamp,
    known: now.known,
    ...(now.known ? { gpus: now.gpus } : { reason: now.reason, gpus: {} }),
  };
  await o.nodeApi.writeGpuDevices(JSON.stringify(doc));
}

/**
 * The MIG inventory annotation, rewritten when what it says changed (its `at` is when it last did),
 * and re-confirmed unchanged every MIG_INVENTORY_RECONFIRM_MS (`checked`): without it an agent that died
 * left its last inventory reading as current, and the rebalancer planned on a layout no one still read.
 * A GPU without MIG is not listed; a node without MIG GPUs gets no annotation. A failure to read NVML is
 * logged and leaves the annotation as it was, unconfirmed: the functions read it as unknown once stale.
 */
export async function writeMigInventory(o: ActuatorOptions, before: string | undefined): Promise<void> {
  if (!o.migInventory || !o.nodeApi.writeMigInventory || o.dryRun) return;
  let gpus: MigInventory['gpus'];
  try {
    gpus = o.migInventory();
  } catch (err) {
    o.log?.(`MIG inventory not read: ${err instanceof Error ? err.message : String(err)}`);
    return;
  }
  if (gpus.length === 0 && before === undefined) return;
  const prior = before === undefined ? undefined : readMigInventory({ [MIG_INVENTORY_ANNOTATION]: before }).inventory;
  const stamp = new Date(o.now()).toISOString();
  if (prior && JSON.stringify(prior.gpus) === JSON.stringify(gpus)) {
    // An older agent's inventory has no `checked`: dated from its `at`, so it is confirmed at the first pass due.
    if (o.now() - Date.parse(prior.checked ?? prior.at) < MIG_INVENTORY_RECONFIRM_MS) return;
    await o.nodeApi.writeMigInventory(JSON.stringify({ ...prior, checked: stamp } satisfies MigInventory));
    return;
  }
  const inventory: MigInventory = { v: 1, at: stamp, checked: stamp, gpus };
  await o.nodeApi.writeMigInventory(JSON.stringify(inventory));
}
