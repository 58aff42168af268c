/**
 * What the MIG planner plans on, read from Kubernetes: MIG nodes (mixed strategy) with one layout
 * per GPU and which instances are in use, and the pending pods that ask for MIG instances. Pure:
 * the callers read nodes and pods (a live cluster, or a fleet file through the simulated cluster).
 *
 * A node's layout comes from its MIG capacity (capacity rather than allocatable: a fenced device or
 * a paused device plugin does not change what the GPUs hold) spread over `nvidia.com/gpu.count`
 * GPUs so each holds a valid layout (spreadTotals), as NVIDIA's mixed strategy advertises totals
 * only. Which GPU holds a running pod is not in
 * the API: `usage` (node → per-GPU profiles in use: the simulated device plugin's allocation) or
 * the node agent's `gpu-reflex.io/mig-inventory` annotation (events/mig-inventory.ts: exact
 * layouts and usage, checked against the pods bound there) says it; without either, every GPU of the
 * node is locked (counted as supply, never relaid) and a note says so.
 */
import { MIG_INVENTORY_ANNOTATION, readMigInventory } from '../../events/index.ts';
import type { NodeInfo, PodInfo } from '../adapters/kube/model.ts';
import type { MigGpu, MigNode, PendingMigPod } from './core/planner.ts';
import { migModel, modelFromReported, type MigModel } from '../lib/mig-profiles.ts';
import { MIG_CONFIG_LABEL, MIG_CONFIG_STATE_LABEL } from './core/rebalance.ts';
import { checkLayout } from './core/layout.ts';

import { agentInventory, holderOf, MIG_RESOURCE, migRequests, profileOfResource } from './inventory-read.ts';

const MIG_STRATEGY_LABEL = 'nvidia.com/mig.strategy';

/** node → per GPU index → profiles of the instances in use there. */
export type MigUsage = ReadonlyMap<string, readonly (readonly string[])[]>;

export interface MigFleet {
  nodes: MigNode[];
  pending: PendingMigPod[];
  /** What was left out or assumed, in words (a node mid-reconfiguration, an unknown model, …). */
  notes: string[];
}

/** A model the catalog lacks, from the profile table its node agent read through NVML (first GPU that has one). */
function reportedModel(n: NodeInfo, product: string): MigModel | undefined {
  const table = readMigInventory(n.annotations).inventory?.gpus.find((g) => g.profiles)?.profiles;
  return table ? modelFromReported(product || n.name, table) : undefined;
}

const finished = (p: PodInfo) => p.phase === 'Succeeded' || p.phase === 'Failed';

/**
 * Which running pods hold each GPU's in-use instances, where the API and the usage tell it
 * exactly: the pods of a node say how many instances of a profile they hold, never on which GPU,
 * so a GPU's holders are known when every profile in use on it is in use on no other GPU of the
 * node and the node's pods hold exactly as many of it as are in use. Then every pod asking for
 * one of those profiles is on that GPU. Elsewhere the holders stay unknown and the GPU is never
 * preempted (core/preemption.ts): evicting the wrong pod would leave the right one to mig-manager.
 */
function attachHolders(
  gpus: MigGpu[],
  running: readonly PodInfo[],
  model: MigModel,
  shared: ReadonlySet<number> = new Set(),
): void {
  const on = new Map<string, Set<number>>();
  const used = new Map<string, number>();
  for (const g of gpus) {
    for (const i of g.instances.filter((x) => x.inUse)) {
      on.set(i.profile, (on.get(i.profile) ?? new Set()).add(g.index));
      used.set(i.profile, (used.get(i.profile) ?? 0) + 1);
    }
  }
  const requests = running.map((p) => ({ pod: p, req: migRequests(p, model) }));
  const held = new Map<string, number>();
  for (const { req } of requests)
    for (const [profile, k] of Object.entries(req)) held.set(profile, (held.get(profile) ?? 0) + k);
  for (const g of gpus) {
    // A process the agent could not tie to a pod shares an instance in use: the pods' counts can agree without it.
    if (g.locked || g.holders || shared.has(g.index)) continue;
    const profiles = [...new Set(g.instances.filter((i) => i.inUse).map((i) => i.profile))];
    if (profiles.length === 0 || !profiles.every((p) => on.get(p)!.size === 1 && held.get(p) === used.get(p))) continue;
    g.holders = requests.filter(({ req }) => profiles.some((p) => (req[p] ?? 0) > 0)).map(({ pod }) => holderOf(pod));
  }
}

/**
 * `waited`: pending pods count as demand only once they have waited this long at `now` (a pod the
 * scheduler is about to bind is not a reason to relay a GPU; nos batches over 60 s).
 */
/**
 * The node's MIG totals as one layout per GPU: the instances `inUse` says a GPU holds stay on it,
 * the rest go largest first to the emptiest GPU they still fit on validly (else the emptiest).
 * The API gives totals only; this is a guess that at least never makes a layout no GPU can hold.
 */
export function spreadTotals(
  model: MigModel,
  gpuCount: number,
  totals: readonly (readonly [string, number])[],
  inUse?: readonly (readonly string[])[],
): string[][] {
  const perGpu: string[][] = Array.from({ length: gpuCount }, (_, i) => [...(inUse?.[i] ?? [])]);
  const left = new Map(totals.map(([p, n]) => [p, n]));
  for (const p of perGpu.flat()) left.set(p, (left.get(p) ?? 0) - 1);
  const size = (p: string) => model.profiles.find((q) => q.name === p)?.size ?? 0;
  for (const [profile, n] of [...left].sort(([a], [b]) => size(b) - size(a) || a.localeCompare(b))) {
    for (let i = 0; i < n; i++) {
      const used = (g: readonly string[]) => g.reduce((t, q) => t + size(q), 0);
      const emptiest = (gs: string[][]) => gs.reduce((a, b) => (used(b) < used(a) ? b : a));
      const fits = perGpu.filter((g) => checkLayout(model, [...g, profile]).valid);
      emptiest(fits.length > 0 ? fits : perGpu).push(profile);
    }
  }
  return perGpu;
}

export function readMigFleet(
  nodes: readonly NodeInfo[],
  pods: readonly PodInfo[],
  usage?: MigUsage,
  waited?: { now: Date; seconds: number },
  /** node → each GPU's layout, where the caller knows it (a fleet file's simulated GPUs); else guessed. */
  layouts?: MigUsage,
  /**
   * The time the node agents' inventories are judged fresh against (events/mig-inventory.ts migInventoryStale), when
   * there is no `waited`; without either (a fleet file's inventories, written once) they are taken as they are.
   */
  now?: Date,
): MigFleet {
  const asOf = waited?.now ?? now;
  const notes: string[] = [];
  const out: MigNode[] = [];
  for (const n of nodes) {
    const counts = n.capacity ?? n.allocatable;
    const migKeys = Object.keys(counts).filter((k) => MIG_RESOURCE.test(k));
    const strategy = n.labels[MIG_STRATEGY_LABEL];
    if (strategy === 'single') {
      // The device plugin's `single` strategy: every GPU of the node carries one profile, sold as
      // nvidia.com/gpu (k8s-device-plugin docs): a per-profile relayout has nothing to offer there.
      notes.push(
        `${n.name}: ${MIG_STRATEGY_LABEL}=single (every GPU one profile, sold as nvidia.com/gpu): left out; ` +
          `only the mixed strategy is relaid`,
      );
      continue;
    }
    if (strategy !== 'mixed' || migKeys.length === 0) continue;
    const product = n.labels['nvidia.com/gpu.product'] ?? '';
    const model = migModel(product) ?? reportedModel(n, product);
    if (!model) {
      notes.push(
        `${n.name}: ${product || 'no nvidia.com/gpu.product label'} is not a MIG model gpu-reflex knows, and its ` +
          `node agent has not reported the GPU's NVML profile table (${MIG_INVENTORY_ANNOTATION}): left out`,
      );
      continue;
    }
    if (!migModel(product))
      notes.push(`${n.name}: ${product} is not in the built-in catalog: planned from its agent's NVML profile table`);
    const state = n.labels[MIG_CONFIG_STATE_LABEL];
    if (state === 'pending' || state === 'rebooting') {
      notes.push(
        `${n.name}: mig-manager is reconfiguring it (${MIG_CONFIG_STATE_LABEL}=${state}): left out until it is done`,
      );
      continue;
    }
    // mig-manager could not apply the node's config (it runs again at every start and on every label change; a
    // failed `nvidia-mig-parted apply` labels `failed`: NVIDIA/mig-parted deployments/gpu-operator/reconfigure-mig.sh
    // exit_failed). Its GPUs may be half made, and a relayout would remove the state label, the one sign of it a
    // person has. Planned on as supply (the instances there are real), never relaid, until it reports success again.
    const failed =
      state === 'failed'
        ? `mig-manager reports ${MIG_CONFIG_STATE_LABEL}=failed for ${n.labels[MIG_CONFIG_LABEL] ?? 'its config'}: ` +
          `none of its GPUs is relaid until a person fixes it and mig-manager reports success`
        : undefined;
    if (failed) notes.push(`${n.name}: ${failed}`);
    const lockFailed = (gpus: MigGpu[]) => {
      if (failed) for (const g of gpus) g.locked ??= failed;
      return gpus;
    };
    const gpuCount = Number(n.labels['nvidia.com/gpu.count'] ?? '1') || 1;
    const exact = layouts?.get(n.name);
    const perGpu =
      exact?.map((l) => [...l]) ??
      spreadTotals(
        model,
        gpuCount,
        migKeys.map((k) => [profileOfResource(model, k)!, Number(counts[k]) || 0]),
        usage?.get(n.name),
      );
    const running = pods.filter(
      (p) => p.nodeName === n.name && !finished(p) && Object.keys(migRequests(p, model)).length > 0,
    );
    const fromAgent = usage?.get(n.name) ? undefined : agentInventory(n, model, running, notes, asOf);
    if (fromAgent) {
      attachHolders(fromAgent.gpus, running, model, fromAgent.shared);
      out.push({ name: n.name, labels: n.labels, schedulable: !n.unschedulable, gpus: lockFailed(fromAgent.gpus) });
      continue;
    }
    const known = usage?.get(n.name);
    // Neither the agent's inventory nor the caller says each GPU's layout: the API gives totals only.
    if (!exact)
      notes.push(
        `${n.name}: each GPU's layout is guessed from the node's MIG totals (no node agent inventory): FROM may ` +
          `differ from the GPUs`,
      );
    const gpus: MigGpu[] = perGpu.map((profiles, index) => {
      const used = [...(known?.[index] ?? [])];
      return {
        node: n.name,
        index,
        model,
        instances: profiles.map((profile) => {
          const at = used.indexOf(profile);
          if (at >= 0) used.splice(at, 1);
          return { profile, inUse: at >= 0 };
        }),
      };
    });
    if (!known && running.length > 0) {
      // Which GPU holds which pod is unknown: count the instances they use (so free supply is
      // right), taken GPU by GPU, and lock every GPU of the node against a relayout.
      for (const pod of running) {
        for (const [profile, want] of Object.entries(migRequests(pod, model))) {
          let left = want;
          for (const i of gpus.flatMap((g) => g.instances)) {
            if (left === 0) break;
            if (i.inUse || i.profile !== profile) continue;
            i.inUse = true;
            left--;
          }
        }
      }
      for (const g of gpus)
        g.locked = `${running.length} pod(s) hold MIG instances on ${n.name} and which GPUs they use is unknown`;
      notes.push(
        `${n.name}: ${running.length} pod(s) use MIG instances there, but not which GPUs: none of its GPUs will be ` +
          `relaid (the node agent's inventory tells)`,
      );
    } else if (!known && !exact) {
      // A live cluster's node without the agent's inventory: each GPU's layout is a guess and what runs in it (a
      // process outside Kubernetes too) unknown; and a relayout is done only once that inventory lists it
      // (core/relayout-evidence.ts), so one started here could only end failed, the node cordoned meanwhile.
      const why = `the node agent's MIG inventory (${MIG_INVENTORY_ANNOTATION}) is missing or unreadable`;
      for (const g of gpus) g.locked = `${why}: each GPU's layout and use are unknown`;
      notes.push(`${n.name}: ${why}: none of its GPUs will be relaid (a relayout could never be confirmed)`);
    } else attachHolders(gpus, running, model);
    out.push({ name: n.name, labels: n.labels, schedulable: !n.unschedulable, gpus: lockFailed(gpus) });
  }
  const pending: PendingMigPod[] = pods
    .filter((p) => !p.nodeName && !finished(p) && !p.terminating)
    .filter((p) => !waited || !p.createdAt || waited.now.getTime() - Date.parse(p.createdAt) >= waited.seconds * 1000)
    .map((p) => ({ pod: p, requests: migRequests(p) }))
    .filter((x) => Object.keys(x.requests).length > 0)
    .map(({ pod, requests }) => ({
      namespace: pod.namespace,
      name: pod.name,
      priority: pod.priority ?? 0,
      ...(pod.priorityClassName ? { priorityClassName: pod.priorityClassName } : {}),
      requests,
      nodeSelector: pod.nodeSelector ?? {},
    }));
  return { nodes: out, pending, notes };
}
