/**
 * A repaired MIG GPU comes back empty: a GPU reset destroys every GPU and compute instance on it
 * (MIG mode stays on), and an empty MIG GPU breaks the device plugin (docs/mig.md). NVIDIA's
 * mig-manager applies the node's `nvidia.com/mig.config` only when its pod starts (its informer's
 * first sight of the Node) and when that label's value changes — never after a reset. When it does
 * apply, it asserts the config per GPU and recreates only the GPUs that differ, so restarting its pod
 * on the node recreates the reset GPU's instances and leaves the running ones alone.
 *
 * So once the probe after a reset passed, a GPU the node agent lists in MIG mode with no instance
 * (`gpu-reflex.io/mig-inventory`) is not back yet: mig-manager's pod on the node is restarted (evicted;
 * its DaemonSet recreates it), and the GPU returns only when the agent's inventory, written after the
 * restart, lists its instances again. The same shape as NVIDIA's device-plugin restart (gpu-repair.ts).
 * Pure.
 */
import { migInventoryStale, readMigInventory } from '../../../events/index.ts';
import type { Policy } from './policy.ts';
import { cmp, type Incident } from './state.ts';
import type { NodeFacts, PodFacts } from './types.ts';

export type MigRestoreStep =
  /** Nothing of MIG keeps the GPU out: the restore goes ahead (with the evidence, when there is some). */
  | { kind: 'ready'; incident: Incident; why?: string }
  /** Not yet: `why` names what it waits for, in words that do not move with the clock (recorded when they change). */
  | { kind: 'wait'; why: string }
  /** Restart mig-manager on the node (its pods, evicted): it applies the node's config again. */
  | { kind: 'restart'; incident: Incident; pods: PodFacts[]; why: string }
  | { kind: 'failed'; incident: Incident; why: string };

const MIN = 60_000;
const CONFIG = 'nvidia.com/mig.config';
const CONFIG_STATE = 'nvidia.com/mig.config.state';

/** mig-manager's pods on the node (the policy's namespace and labels). */
export function migManagerPods(pods: readonly PodFacts[], policy: Pick<Policy, 'repair'>): PodFacts[] {
  const { namespace, selector } = policy.repair.migManager;
  return pods.filter(
    (p) => p.namespace === namespace && Object.entries(selector).every(([k, v]) => p.labels?.[k] === v),
  );
}

/**
 * After the passed probe of a reset GPU (`i.resetAt` set): may it return, or must its MIG instances
 * come back first? A GPU the agent does not list (not in MIG mode), or a node whose agent writes no
 * inventory, has nothing of MIG to wait for. An inventory the agent last read before the reset (its `checked`,
 * or `at` from an agent older than that stamp), or one that cannot be read, is waited for, saying why; no newer one
 * within `repair.answerTimeoutMinutes`, or instances that do not return within that long after the restart, or
 * mig-manager reporting `failed`, is a failed repair (the ladder climbs: a reboot starts mig-manager afresh as well).
 * A wait while the agent stopped confirming its inventory (events/mig-inventory.ts migInventoryStale) says so: an
 * agent gone is not an inventory on its way.
 */
export function stepMigRestore(
  i: Incident,
  node: Pick<NodeFacts, 'labels' | 'annotations'>,
  pods: readonly PodFacts[],
  now: Date,
  policy: Pick<Policy, 'repair'>,
): MigRestoreStep {
  const { inventory, problem } = readMigInventory(node.annotations);
  const entry = inventory?.gpus.find((g) => g.uuid === i.gpu);
  const config = node.labels[CONFIG];
  const timeout = policy.repair.answerTimeoutMinutes;
  const late = (since: string) => now.getTime() - Date.parse(since) >= timeout * MIN;
  // Why nothing newer may come: the agent stopped confirming the inventory it wrote.
  const quiet = inventory && migInventoryStale(inventory, now);
  const waiting = (why: string): MigRestoreStep => ({ kind: 'wait', why: quiet ? `${why}; ${quiet}` : why });
  const failed = (why: string): MigRestoreStep => ({
    kind: 'failed',
    incident: i,
    why: quiet ? `${why}; ${quiet}` : why,
  });
  // An annotation these functions cannot read (not JSON, or a newer agent's field the contract refuses) is there:
  // the agent lists MIG GPUs, and whether this one is among them, and with what, is unknown — never "not MIG".
  if (problem !== undefined && i.resetAt !== undefined) {
    const since = i.migRestartedAt ?? i.resetAt;
    if (!late(since))
      return waiting(
        `whether the MIG instances of ${i.gpu} are back is unknown: ${problem}; waiting up to ${timeout} min after ` +
          `${i.migRestartedAt ? `restarting mig-manager at ${i.migRestartedAt}` : `its reset at ${i.resetAt}`}`,
      );
    return failed(
      `whether the MIG instances of ${i.gpu} are back is unknown ${timeout} min after ` +
        `${i.migRestartedAt ? 'restarting mig-manager' : 'its reset'}: ${problem}`,
    );
  }
  if (!i.migRestartedAt) {
    if (!inventory || !entry || i.resetAt === undefined) return { kind: 'ready', incident: i };
    // When the agent last read the GPUs: `checked`, or `at` from an agent older than that stamp. An inventory the
    // agent confirmed after the reset is the GPU after it, though unchanged since before (where `at` alone waited out
    // the timeout and climbed to a reboot).
    if (cmp(inventory.checked ?? inventory.at, i.resetAt) < 0) {
      if (!late(i.resetAt))
        return waiting(
          `the node agent's MIG inventory was last written at ${inventory.at}, before the reset of ${i.gpu} at ` +
            `${i.resetAt}: waiting up to ${timeout} min for the agent to read the GPU again`,
        );
      return failed(
        `the node agent's MIG inventory was not written again within ${timeout} min of the ` +
          `reset of ${i.gpu} (last at ${inventory.at}): whether its MIG instances survived is unknown`,
      );
    }
    if (entry.instances.length > 0)
      return { kind: 'ready', incident: i, why: `its MIG instances are there (${profiles(entry.instances)})` };
    const manager = migManagerPods(pods, policy);
    const where = `${policy.repair.migManager.namespace} (${Object.entries(policy.repair.migManager.selector)
      .map(([k, v]) => `${k}=${v}`)
      .join(',')})`;
    const head =
      `${i.gpu} passed its reset and probe, but the reset destroyed its MIG instances, ` +
      `and mig-manager applies a config only when it starts or ${CONFIG} changes`;
    const why =
      manager.length > 0
        ? `${head}: restarting ${manager.map((p) => `${p.namespace}/${p.name}`).join(', ')} so it ` +
          `applies ${config ?? "the node's config"} again; the GPU returns once the node agent lists its instances`
        : `${head}, and no mig-manager pod was found on the node in ${where}: the GPU stays out ` +
          `until its instances return (check repair.migManager)`;
    return { kind: 'restart', incident: { ...i, migRestartedAt: now.toISOString() }, pods: manager, why };
  }
  const state = node.labels[CONFIG_STATE];
  if (state === 'failed')
    return {
      kind: 'failed',
      incident: i,
      why:
        `mig-manager could not apply ${config ?? "the node's config"} again after the reset of ` +
        `${i.gpu} (${CONFIG_STATE}=failed)`,
    };
  const back =
    inventory !== undefined &&
    entry !== undefined &&
    entry.instances.length > 0 &&
    cmp(inventory.at, i.migRestartedAt) >= 0;
  if (back && state !== 'pending' && state !== 'rebooting') {
    return {
      kind: 'ready',
      incident: { ...i, migBackAt: inventory.at },
      why:
        `mig-manager applied ${config ?? "the node's config"} again: the node agent lists its ` +
        `MIG instances at ${inventory.at} (${profiles(entry.instances)})`,
    };
  }
  if (!late(i.migRestartedAt))
    return waiting(
      `waiting for mig-manager, restarted at ${i.migRestartedAt}, to apply ${config ?? "the node's config"} again: ` +
        (back
          ? `${CONFIG_STATE}=${state}`
          : entry
            ? `the node agent lists ${entry.instances.length} MIG instance(s) of ${i.gpu} at ${inventory!.at}` +
              `${state ? ` (${CONFIG_STATE}=${state})` : ''}`
            : `the node agent does not list ${i.gpu}`) +
        `; up to ${timeout} min`,
    );
  return failed(
    `the MIG instances of ${i.gpu} did not come back within ${timeout} min of restarting ` +
      `mig-manager at ${i.migRestartedAt} ` +
      `(${
        entry
          ? `the node agent lists ${entry.instances.length} at ` + `${inventory!.at}`
          : 'the node agent does not list the GPU'
      }${state ? `, ${CONFIG_STATE}=${state}` : ''})`,
  );
}

function profiles(instances: readonly { profile: string }[]): string {
  const n = new Map<string, number>();
  for (const x of instances) n.set(x.profile, (n.get(x.profile) ?? 0) + 1);
  return [...n].map(([p, k]) => (k > 1 ? `${k}×${p}` : p)).join(' + ');
}
