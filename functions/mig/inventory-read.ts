import { MIG_INVENTORY_UNCONFIRMED, migInventoryStale, readMigInventory } from '../../events/index.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import { MIG_MODELS, migResourceName, type MigModel } from '../lib/mig-profiles.ts';
import type { MigGpu, MigHolder } from './core/planner.ts';

// A node's MIG facts as the pods and the node agent tell them: what a pod asks for, who holds an
// instance, and the agent's inventory as planner GPUs (supply.ts reads the fleet with them).
export const MIG_RESOURCE = /^nvidia\.com\/mig-(.+)$/;

/** The profile a `nvidia.com/mig-…` resource stands for on this model (`+` was spelled `.`). */
export function profileOfResource(model: MigModel | undefined, resource: string): string | undefined {
  const m = MIG_RESOURCE.exec(resource);
  if (!m) return undefined;
  const models = model ? [model] : MIG_MODELS;
  for (const mm of models) for (const p of mm.profiles) if (migResourceName(p.name) === resource) return p.name;
  return m[1];
}

export function migRequests(pod: PodInfo, model?: MigModel): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(pod.extendedResources)) {
    const profile = profileOfResource(model, k);
    if (profile && v > 0) out[profile] = (out[profile] ?? 0) + v;
  }
  return out;
}

/**
 * The node agent's MIG inventory annotation, as planner GPUs: exact layouts and instances in use.
 * Checked against the API: when the pods bound to the node use more instances of a profile than
 * the inventory shows in use, it is older than they are, and the node's GPUs are locked.
 * `shared`: the GPUs (by index) with an instance in use that also runs a process the agent could not tie
 * to a pod (`unnamed`): no count of the node's pods tells their holders (supply.ts attachHolders).
 */
export function agentInventory(
  n: NodeInfo,
  model: MigModel,
  running: readonly PodInfo[],
  notes: string[],
  now?: Date,
): { gpus: MigGpu[]; shared: ReadonlySet<number> } | undefined {
  const { inventory, problem } = readMigInventory(n.annotations);
  if (problem) notes.push(`${n.name}: ${problem}: read as unknown`);
  if (!inventory) return undefined;
  const gpus: MigGpu[] = inventory.gpus.map((g) => ({
    node: n.name,
    index: g.index,
    model,
    // Which instances processes run in is unknown (NVML did not list them): every one is in use, whatever it says.
    instances: g.instances.map((i) => ({ profile: i.profile, inUse: g.inUseUnknown !== undefined || i.inUse })),
  }));
  // Its agent stopped confirming it (events/mig-inventory.ts checked): the layout and what runs in it are unknown now,
  // and a relayout there could never be confirmed (core/relayout-evidence.ts) — it would end failed, the node cordoned
  // and its pods preempted for nothing. Counted as the supply it last was, never relaid (as a node with no inventory).
  const stale = now && migInventoryStale(inventory, now);
  if (stale) {
    for (const g of gpus) g.locked = stale;
    notes.push(`${n.name}: ${stale}: none of its GPUs will be relaid until the agent confirms it again`);
    return { gpus, shared: new Set() };
  }
  // An older agent's (no `checked`): planned on as before, since functions are upgraded before agents and locking
  // every MIG node until the DaemonSet has rolled would stop all relayouts; said on every round, never trusted quietly.
  if (now && inventory.checked === undefined) notes.push(`${n.name}: ${MIG_INVENTORY_UNCONFIRMED}`);
  // The GPUs whose instances in use are known: only they say which GPU a pod is on.
  const known = inventory.gpus.filter((g) => g.inUseUnknown === undefined);
  // Where the agent names the pod in every instance in use, the GPU's holders are known exactly.
  for (const [k, g] of inventory.gpus.entries()) {
    if (g.inUseUnknown !== undefined) continue;
    const inUse = g.instances.filter((i) => i.inUse);
    // An instance that also runs a process the agent could not tie to a pod (`unnamed`) is not wholly its pods'.
    if (inUse.length === 0 || !inUse.every((i) => i.pods && i.pods.length > 0 && !i.unnamed)) continue;
    const uids = new Set(inUse.flatMap((i) => i.pods ?? []));
    const holders = running.filter((p) => p.uid !== undefined && uids.has(p.uid));
    // A pod the agent names that the API does not (yet) list: not exact after all.
    if (holders.length === uids.size) gpus[k]!.holders = holders.map(holderOf);
  }
  // The agent could not list the GPU's processes (nvmlDeviceGetComputeRunningProcesses_v3 answered NOT_SUPPORTED or
  // an error: events/mig-inventory.ts inUseUnknown): a process may run in any of its instances, one outside
  // Kubernetes too, and a relayout destroys them all. Unknown is not idle.
  for (const [k, g] of inventory.gpus.entries()) {
    if (g.inUseUnknown === undefined || g.instances.length === 0) continue;
    gpus[k]!.locked =
      `GPU ${g.index}: the node agent cannot tell which of its instances processes run in (${g.inUseUnknown})`;
    notes.push(`${n.name}: ${gpus[k]!.locked}: read as in use, not relaid`);
  }
  // A MIG GPU with no instance was just reset (a reset destroys them all): its repair restarts
  // mig-manager so the node's config is applied again (docs/remediation.md). Relaying it here would
  // race that repair and return a fenced GPU by another road.
  // One whose MIG state NVML did not answer (migModeUnknown: its mode, or its instances) may be that GPU, one without
  // MIG, or one whose instances are all there: not relaid either.
  for (const [k, g] of gpus.entries()) {
    if (g.instances.length > 0) continue;
    const unknown = inventory.gpus[k]!.migModeUnknown;
    g.locked = unknown
      ? `GPU ${g.index} has no MIG instance listed and the node agent cannot read its MIG state (${unknown})`
      : `GPU ${g.index} is in MIG mode with no instance (a reset destroyed them; its repair has mig-manager ` +
        `apply the node's config again)`;
    notes.push(`${n.name}: ${g.locked}: not relaid`);
  }
  // Counted on the GPUs whose processes are known: an instance read in use because it is unknown places no pod.
  const inUse = new Map<string, number>();
  for (const i of known.flatMap((g) => g.instances)) if (i.inUse) inUse.set(i.profile, (inUse.get(i.profile) ?? 0) + 1);
  const wanted = new Map<string, number>();
  for (const p of running)
    for (const [profile, k] of Object.entries(migRequests(p, model)))
      wanted.set(profile, (wanted.get(profile) ?? 0) + k);
  const behind = [...wanted].filter(([profile, k]) => k > (inUse.get(profile) ?? 0));
  // By identity too: a count can match while the pods do not (an agent that stopped writing still shows a pod since
  // ended in use on one GPU, and calls idle the GPU its successor runs on). A running pod the inventory names in no
  // instance holds one of the instances in use that name nobody (an agent that could not map that process), or one
  // the inventory calls free: where those unnamed instances are fewer than such pods hold, which GPU they are on is
  // unknown.
  const named = new Set(inventory.gpus.flatMap((g) => g.instances.flatMap((i) => i.pods ?? [])));
  const unnamedInUse = new Map<string, number>();
  for (const i of known.flatMap((g) => g.instances))
    if (i.inUse && (i.pods ?? []).length === 0) unnamedInUse.set(i.profile, (unnamedInUse.get(i.profile) ?? 0) + 1);
  const unnamedHeld = new Map<string, { k: number; pods: string[] }>();
  for (const p of running) {
    if (p.uid !== undefined && named.has(p.uid)) continue;
    for (const [profile, k] of Object.entries(migRequests(p, model))) {
      const h = unnamedHeld.get(profile) ?? { k: 0, pods: [] };
      unnamedHeld.set(profile, { k: h.k + k, pods: [...h.pods, `${p.namespace}/${p.name}`] });
    }
  }
  const unplaced = [...unnamedHeld].filter(([profile, h]) => h.k > (unnamedInUse.get(profile) ?? 0));
  const unknownGpus = inventory.gpus.filter((g) => g.inUseUnknown !== undefined).map((g) => g.index);
  const uncounted = unknownGpus.length
    ? `; GPU ${unknownGpus.join(', ')} not counted: which of its instances processes run in is unknown`
    : '';
  if (behind.length > 0) {
    const why =
      `the node agent's MIG inventory (${inventory.at}) shows fewer instances in use than its pods hold ` +
      `(${behind.map(([p, k]) => `${p}: ${inUse.get(p) ?? 0} < ${k}`).join(', ')}${uncounted})`;
    for (const g of gpus) g.locked = why;
    notes.push(`${n.name}: ${why}: none of its GPUs will be relaid until it catches up`);
  } else if (unplaced.length > 0) {
    const why =
      `the node agent's MIG inventory (${inventory.at}) names no instance of running pod(s) ` +
      `${[...new Set(unplaced.flatMap(([, h]) => h.pods))].join(', ')}: which GPU they use is unknown${uncounted}`;
    for (const g of gpus) g.locked = why;
    notes.push(`${n.name}: ${why}: none of its GPUs will be relaid until it catches up`);
  }
  const shared = new Set(
    inventory.gpus.filter((g) => g.instances.some((i) => i.inUse && i.unnamed)).map((g) => g.index),
  );
  return { gpus, shared };
}

export const holderOf = (p: PodInfo): MigHolder => ({
  namespace: p.namespace,
  name: p.name,
  ...(p.uid ? { uid: p.uid } : {}),
  priority: p.priority ?? 0,
  ...(p.priorityClassName ? { priorityClassName: p.priorityClassName } : {}),
});
