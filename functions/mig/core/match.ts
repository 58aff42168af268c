/**
 * How pending pods are matched to free MIG instances, which is also how the planner counts
 * "satisfied": pods in priority order, those that may use fewer nodes first (a pod that may go
 * anywhere does not take the instance the only node another may use offers), then those asking
 * for more instances (which must all come from one node), then namespace/name,
 * each on the first node (by name) it may use where every instance it asks for is free; instances
 * are taken GPU by GPU in index order. With relayouts planned, a pod that fits in what is free on
 * GPUs left as they are goes there first (the first such node; those GPUs first): it is scheduled
 * at once, before mig-manager relays anything, so a pod free to go anywhere does not take the new
 * instance a relayout made for a pod that can use only that node, whatever their priorities.
 * A model of the scheduler, not the scheduler: what a plan is judged by (planner.ts, afterPlan,
 * `bench mig`). Pure.
 *
 * It runs several times per plan over fleets of thousands of GPUs, so profiles are numbered and
 * each node keeps its free instances summed over its GPUs in a typed array: a pod fits a node when the sums cover its
 * requests (taking GPU
 * by GPU in index order then always succeeds), and the nodes a pod may use are worked out once per
 * distinct nodeSelector.
 */
import type { MigGpu, MigNode, PendingMigPod } from './planner.ts';

/** GPU key → its layout when relaid (every instance of a relaid GPU is free). */
export type Layouts = ReadonlyMap<string, readonly string[]>;

export const gpuKey = (g: Pick<MigGpu, 'node' | 'index'>) => `${g.node}#${g.index}`;
export const podKey = (p: Pick<PendingMigPod, 'namespace' | 'name'>) => `${p.namespace}/${p.name}`;

export function fits(node: MigNode, pod: PendingMigPod): boolean {
  return node.schedulable && Object.entries(pod.nodeSelector).every(([k, v]) => node.labels[k] === v);
}

export function podOrder(a: PendingMigPod, b: PendingMigPod): number {
  return b.priority - a.priority || podKey(a).localeCompare(podKey(b));
}

/**
 * Pods that ask for an instance, in the order they are matched (priority, then those that may use
 * fewer nodes, then those asking for more instances, then namespace/name), and the nodes each may
 * use (`nodes` sorted: sortFleet).
 */
export function matchingOrder(
  nodes: readonly MigNode[],
  pending: readonly PendingMigPod[],
): { pods: PendingMigPod[]; eligible: Map<PendingMigPod, number[]> } {
  const asking = pending.filter((p) => Object.values(p.requests).some((v) => v > 0));
  const eligible = eligibility(nodes, asking);
  const count = (p: PendingMigPod) => Object.values(p.requests).reduce((t, n) => t + Math.max(0, n), 0);
  const pods = asking.sort(
    (a, b) =>
      b.priority - a.priority ||
      eligible.get(a)!.length - eligible.get(b)!.length ||
      count(b) - count(a) ||
      podOrder(a, b),
  );
  return { pods, eligible };
}

/** Nodes sorted by name, each one's GPUs by index: the order everything here walks them in. */
export function sortFleet(nodes: readonly MigNode[]): MigNode[] {
  return [...nodes]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((n) => ({ ...n, gpus: [...n.gpus].sort((a, b) => a.index - b.index) }));
}

/** Per pod, the indexes (into `nodes`) of the nodes it may use, computed once per nodeSelector. */
export function eligibility(nodes: readonly MigNode[], pods: readonly PendingMigPod[]): Map<PendingMigPod, number[]> {
  const bySelector = new Map<string, number[]>();
  const out = new Map<PendingMigPod, number[]>();
  for (const pod of pods) {
    const sel = JSON.stringify(Object.entries(pod.nodeSelector).sort(([a], [b]) => a.localeCompare(b)));
    let list = bySelector.get(sel);
    if (!list) {
      list = nodes.flatMap((n, i) => (fits(n, pod) ? [i] : []));
      bySelector.set(sel, list);
    }
    out.set(pod, list);
  }
  return out;
}

export interface Assignment {
  /** pod key → GPU keys its instances come from. */
  placed: Map<string, string[]>;
  /** pod key → [gpu key, profile] of every instance it takes. */
  taken: Map<string, [string, string][]>;
  /** Satisfied pods per priority, highest first: compared lexicographically. */
  score: number[];
}

/** Counts of profiles. */
export function tally(profiles: Iterable<string>): Map<string, number> {
  const m = new Map<string, number>();
  for (const p of profiles) m.set(p, (m.get(p) ?? 0) + 1);
  return m;
}

/**
 * Matches `pods` (already in matching order: matchingOrder) to the free instances of `nodes` (sorted:
 * sortFleet), a relaid GPU offering every instance of its layout in `layouts`.
 */
export function assign(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  layouts: Layouts,
  priorities: readonly number[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]> = eligibility(nodes, pods),
): Assignment {
  // Profiles as small integers, free counts in one typed array per node and per GPU.
  const ids = new Map<string, number>();
  const id = (p: string) => ids.get(p) ?? (ids.set(p, ids.size), ids.size - 1);
  const offered = nodes.map((n) =>
    n.gpus.map((g) => (layouts.get(gpuKey(g)) ?? g.instances.filter((i) => !i.inUse).map((i) => i.profile)).map(id)),
  );
  const asks = pods.map((pod) =>
    Object.entries(pod.requests)
      .filter(([, n]) => n > 0)
      .map(([p, n]) => [id(p), n, p] as const),
  );
  const width = ids.size;
  const gpuFree = offered.map((gs) =>
    gs.map((ps) => {
      const c = new Int32Array(width);
      for (const p of ps) c[p]!++;
      return c;
    }),
  );
  const relaid = nodes.map((n) => n.gpus.map((g) => layouts.has(gpuKey(g))));
  const sumOver = (keep: (i: number, gi: number) => boolean) =>
    gpuFree.map((gs, i) => {
      const sum = new Int32Array(width);
      gs.forEach((g, gi) => {
        if (keep(i, gi)) for (let p = 0; p < width; p++) sum[p]! += g[p]!;
      });
      return sum;
    });
  const nodeFree = sumOver(() => true);
  // What is free now, on GPUs no relayout touches: a pod that fits there is scheduled at once,
  // long before mig-manager has relaid anything, so it takes those first (on the first node where
  // it can) and leaves the relaid GPUs' new instances to the pods they were relaid for.
  const nowFree = layouts.size > 0 ? sumOver((i, gi) => !relaid[i]![gi]) : nodeFree;
  const placed = new Map<string, string[]>();
  const taken = new Map<string, [string, string][]>();
  const byPriority = new Map<number, number>();
  const firstFit = (pod: PendingMigPod, want: readonly (readonly [number, number, string])[], sums: Int32Array[]) => {
    for (const i of eligible.get(pod)!) {
      const free = sums[i]!;
      let ok = true;
      for (const [p, n] of want) if (free[p]! < n) ok = false;
      if (ok) return i;
    }
    return -1;
  };
  pods.forEach((pod, k) => {
    const want = asks[k]!;
    let at = nowFree === nodeFree ? -1 : firstFit(pod, want, nowFree);
    if (at < 0) at = firstFit(pod, want, nodeFree);
    if (at < 0) return;
    const take: [string, string][] = [];
    for (const [p, n, profile] of want) {
      let left = n;
      // GPUs as they are first (index order), then the relaid ones.
      for (const second of [false, true]) {
        nodes[at]!.gpus.forEach((g, gi) => {
          if (relaid[at]![gi] !== second) return;
          const c = gpuFree[at]![gi]!;
          const m = Math.min(left, c[p]!);
          if (m === 0) return;
          c[p]! -= m;
          if (!second && nowFree !== nodeFree) nowFree[at]![p]! -= m;
          for (let j = 0; j < m; j++) take.push([gpuKey(g), profile]);
          left -= m;
        });
      }
      nodeFree[at]![p]! -= n;
    }
    const key = podKey(pod);
    placed.set(key, [...new Set(take.map(([g]) => g))]);
    taken.set(key, take);
    byPriority.set(pod.priority, (byPriority.get(pod.priority) ?? 0) + 1);
  });
  return { placed, taken, score: priorities.map((p) => byPriority.get(p) ?? 0) };
}

/** > 0 when `a` satisfies more than `b` (lexicographic from the highest priority). */
export function better(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/** At least as many satisfied at every priority. */
export function atLeast(a: readonly number[], b: readonly number[]): boolean {
  return a.every((x, i) => x >= b[i]!);
}

/** At least as many satisfied at every priority, and more at one. */
export function dominates(a: readonly number[], b: readonly number[]): boolean {
  return atLeast(a, b) && a.some((x, i) => x > b[i]!);
}

/** Instances the two layouts share, counted by profile (what a change keeps of the old layout). */
export function kept(from: readonly string[], to: readonly string[]): number {
  const left = tally(from);
  let n = 0;
  for (const p of to) {
    if ((left.get(p) ?? 0) > 0) {
      left.set(p, left.get(p)! - 1);
      n++;
    }
  }
  return n;
}

export const sameLayout = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && kept(a, b) === a.length;
