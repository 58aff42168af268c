/**
 * The MIG rebalancer's planner (issue #12): which idle MIG GPUs to carve differently so that
 * pending pods asking for `nvidia.com/mig-<profile>` can run. Pure and deterministic.
 *
 * Supply is every MIG-enabled GPU with its instances and whether each is in use; demand is the
 * pending pods, each with its per-profile requests, priority and the nodes it may land on. The
 * objective, in order:
 *   1. satisfy more demand, higher priorities first, and never less at any priority: a relayout
 *      never takes away an instance a pending pod could already use;
 *   2. change the fewest GPUs (mig-manager wipes every instance of a GPU it changes);
 *   3. never touch a GPU with an instance in use, unless the policy allows preempting lower
 *      priorities (preemption.ts): then destroy the least, and only for pods far enough above;
 *   4. never leave a MIG-enabled GPU empty (every candidate layout holds an instance);
 *   5. keep as much of a changed GPU's old layout as possible, then prefer zero-waste layouts.
 * "Never less at any priority" counts pods: a relayout may give the instance one pending pod
 * would take to another of higher priority when that pod then runs elsewhere, or when as many of
 * its priority run anyway.
 *
 * relay.ts plans: pods in priority order packed onto idle GPUs, a GPU already relaid filled before
 * another is changed, checked by matching (match.ts), in a few rounds until one serves nobody
 * more, so replanning on the applied state is a no-op. With preemption on, a GPU whose running
 * pods the policy lets go is a candidate too, for pods far enough above them, after every idle
 * one (the fewest preempted, the lowest priorities), at most maxGpusPerRound of them, each kept
 * only where what it serves outweighs what it destroys (preemption.ts).
 *
 * How demand is matched to supply (also how "satisfied" is counted): match.ts.
 */
import { layoutWords } from './layout.ts';
import { assign, fits, gpuKey, kept, matchingOrder, podKey, sortFleet, type Assignment } from './match.ts';
import type { PreemptionPolicy } from './policy.ts';
import { holderKey, type MigHolder } from './preemption.ts';
import type { MigModel } from '../../lib/mig-profiles.ts';
import { relayIdle } from './relay.ts';

export type { MigHolder };

export interface MigInstanceState {
  profile: string;
  /** A pod holds it: the GPU must not be relaid (mig-manager would destroy it). */
  inUse: boolean;
}

export interface MigGpu {
  node: string;
  index: number;
  model: MigModel;
  instances: MigInstanceState[];
  /** Never relaid, and why (its pods' instances are not known one by one). */
  locked?: string;
  /**
   * The running pods holding its in-use instances, when known exactly (supply.ts); only such a
   * GPU can be preempted. Undefined: unknown.
   */
  holders?: MigHolder[];
}

export interface MigNode {
  name: string;
  labels: Readonly<Record<string, string>>;
  /** Cordoned nodes take no new pods: their GPUs count as supply for nobody. */
  schedulable: boolean;
  gpus: MigGpu[];
}

export interface PendingMigPod {
  namespace: string;
  name: string;
  priority: number;
  priorityClassName?: string;
  /** profile → instances, from its `nvidia.com/mig-<profile>` requests. */
  requests: Readonly<Record<string, number>>;
  /** Its nodeSelector: a node qualifies when it carries every one of these labels. */
  nodeSelector: Readonly<Record<string, string>>;
}

export interface GpuChange {
  node: string;
  gpu: number;
  model: string;
  from: string[];
  to: string[];
  /** Pods (`namespace/name`) that run on this GPU's new instances. */
  unblocks: string[];
  /** Pods (`namespace/name`) whose instances this change destroys: the pods it preempts. */
  disrupts: string[];
  /** The pods it preempts (empty unless the policy allows it): evicted before the relayout. */
  preempts: MigHolder[];
  why: string;
}

export interface MigPlan {
  changes: GpuChange[];
  /** Pending pods satisfied by the current layouts, and after the changes. */
  satisfiedBefore: number;
  satisfiedAfter: number;
  /** Pending pods no change of an idle GPU can satisfy, with why. */
  unmet: { pod: string; why: string }[];
}

export interface PlanOptions {
  /** Absent or disabled: a GPU with an instance in use is never relaid. */
  preemption?: PreemptionPolicy;
}

export function planMig(
  nodes: readonly MigNode[],
  pendingPods: readonly PendingMigPod[],
  options: PlanOptions = {},
): MigPlan {
  const preemption = options.preemption?.enabled ? options.preemption : undefined;
  const sortedNodes = sortFleet(nodes);
  const { pods, eligible } = matchingOrder(sortedNodes, pendingPods);
  const priorities = [...new Set(pods.map((p) => p.priority))].sort((a, b) => b - a);
  const before = assign(sortedNodes, pods, new Map(), priorities, eligible);
  // relay.ts: idle GPUs, and with preemption on GPUs whose running pods the policy lets go.
  const { layouts, result, preempted } = relayIdle(sortedNodes, pods, priorities, eligible, before, preemption);
  return describe(sortedNodes, pods, layouts, preempted, result, before, preemption);
}

/** The plan: a change per relaid GPU (nodes by name, GPUs by index), with whom it serves and why. */
function describe(
  sortedNodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  relaid: ReadonlyMap<string, string[]>,
  preempted: ReadonlyMap<string, MigHolder[]>,
  current: Assignment,
  before: Assignment,
  preemption: PreemptionPolicy | undefined,
): MigPlan {
  const podByKey = new Map(pods.map((p) => [podKey(p), p]));
  // GPU key → the pods placed on it, in matching order.
  const servedBy = new Map<string, PendingMigPod[]>();
  for (const p of pods)
    for (const k of current.placed.get(podKey(p)) ?? []) (servedBy.get(k) ?? servedBy.set(k, []).get(k)!).push(p);
  const changes: GpuChange[] = [];
  for (const n of sortedNodes) {
    for (const g of n.gpus) {
      const to = relaid.get(gpuKey(g));
      if (!to) continue;
      const from = g.instances.map((i) => i.profile);
      // Every pod that lands on the new instances (all of a relaid GPU's instances are new; a pod
      // that had a free instance elsewhere may move here to make room for a higher priority).
      const unblocks = (servedBy.get(gpuKey(g)) ?? []).map(podKey);
      const wanted = [...new Set(unblocks.flatMap((u) => Object.keys(podByKey.get(u)!.requests)))];
      const preempts = preempted.get(gpuKey(g)) ?? [];
      const serves =
        `${layoutWords(from)} → ${layoutWords(to)} gives ${unblocks.length} pending ` +
        `pod${unblocks.length === 1 ? '' : 's'} the ${wanted.join(', ')} ` +
        `instance${unblocks.length === 1 ? '' : 's'} ${unblocks.length === 1 ? 'it waits' : 'they wait'} for`;
      changes.push({
        node: n.name,
        gpu: g.index,
        model: g.model.name,
        from,
        to,
        unblocks,
        disrupts: preempts.map(holderKey),
        preempts,
        why:
          preempts.length === 0
            ? `${n.name} GPU ${g.index} is idle (no instance in use); ${serves}, keeping ${kept(from, to)} of ` +
              `its ${from.length} instance${from.length === 1 ? '' : 's'}`
            : `${n.name} GPU ${g.index} runs only pods of priority ${Math.max(...preempts.map((h) => h.priority))} ` +
              `or lower (${preempts.map((h) => `${holderKey(h)} at ${h.priority}`).join(', ')}), at ` +
              `least ${preemption!.minPriorityGap} below the pending pods of ` +
              `priority ${Math.max(...unblocks.map((u) => podByKey.get(u)!.priority))} it serves; ` +
              `preempting ${preempts.length === 1 ? 'it' : 'them'} (mig-manager recreates every instance of a ` +
              `changed GPU), ${serves}`,
      });
    }
  }
  const unmet = pods
    .filter((p) => !current.placed.has(podKey(p)))
    .map((p) => ({ pod: podKey(p), why: unmetWhy(sortedNodes, p) }));
  return { changes, satisfiedBefore: before.placed.size, satisfiedAfter: current.placed.size, unmet };
}

function unmetWhy(nodes: readonly MigNode[], pod: PendingMigPod): string {
  const want = Object.entries(pod.requests)
    .map(([p, n]) => (n === 1 ? p : `${n}×${p}`))
    .join(' + ');
  const eligible = nodes.filter((n) => fits(n, pod));
  if (eligible.length === 0)
    return `no schedulable MIG node matches its nodeSelector (${
      Object.entries(pod.nodeSelector)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ') || 'none'
    })`;
  const offers = eligible.some((n) =>
    n.gpus.some((g) => Object.keys(pod.requests).every((p) => g.model.profiles.some((q) => q.name === p))),
  );
  if (!offers) return `no GPU model on the ${eligible.length} node(s) it may use has the profile(s) ${want}`;
  return (
    `${want}: every GPU that could be relaid for it on the ${eligible.length} node(s) it may use has an ` +
    `instance in use, holds instances other pending pods can use, or went to a pod before it`
  );
}

/**
 * The fleet once `plan` is applied and the pods that fit have started (matched as the planner
 * matches them): relaid GPUs carry their new layouts, the instances the pods took are in use, and
 * the pods still pending are returned. What `simulate`-free tests replan on.
 */
export function afterPlan(
  nodes: readonly MigNode[],
  pendingPods: readonly PendingMigPod[],
  plan: Pick<MigPlan, 'changes'>,
): { nodes: MigNode[]; pending: PendingMigPod[] } {
  const to = new Map(plan.changes.map((c) => [`${c.node}#${c.gpu}`, c.to]));
  // Preempted pods are gone (evicted); their controllers' replacements are not modelled here.
  const gone = new Set(plan.changes.flatMap((c) => c.disrupts));
  const relaid: MigNode[] = [...nodes]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => ({
      ...n,
      gpus: [...n.gpus]
        .sort((a, b) => a.index - b.index)
        .map((g): MigGpu => {
          const layout = to.get(gpuKey(g));
          const { holders, ...rest } = g;
          if (layout) return { ...rest, instances: layout.map((profile) => ({ profile, inUse: false })), holders: [] };
          const known = holders ?? (g.instances.every((i) => !i.inUse) ? [] : undefined);
          return {
            ...rest,
            instances: g.instances.map((i) => ({ ...i })),
            ...(known ? { holders: known.filter((h) => !gone.has(holderKey(h))) } : {}),
          };
        }),
    }));
  const { pods, eligible } = matchingOrder(relaid, pendingPods);
  const priorities = [...new Set(pods.map((p) => p.priority))].sort((a, b) => b - a);
  // The relaid GPUs named as such: a pod that fits on GPUs left as they are is scheduled there first (match.ts).
  const result = assign(relaid, pods, to, priorities, eligible);
  const byKey = new Map(relaid.flatMap((n) => n.gpus.map((g) => [gpuKey(g), g] as const)));
  for (const pod of pods) {
    for (const [k, profile] of result.taken.get(podKey(pod)) ?? []) {
      const g = byKey.get(k)!;
      const inst = g.instances.find((i) => i.profile === profile && !i.inUse);
      if (inst) inst.inUse = true;
      const holder: MigHolder = {
        namespace: pod.namespace,
        name: pod.name,
        priority: pod.priority,
        ...(pod.priorityClassName ? { priorityClassName: pod.priorityClassName } : {}),
      };
      if (g.holders && !g.holders.some((h) => holderKey(h) === podKey(pod))) g.holders.push(holder);
    }
  }
  return { nodes: relaid, pending: pods.filter((p) => !result.placed.has(podKey(p))) };
}
