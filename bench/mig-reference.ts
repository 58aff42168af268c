/**
 * Two reference MIG planners `bench mig` measures the planner against; the product never uses them.
 *
 * - `exactMig`: the most demand any choice of layouts for the idle GPUs can satisfy, weighed as
 *   the planner weighs it (satisfied pods per priority, highest first, compared lexicographically),
 *   and the fewest GPU changes that reach it. Exhaustive, so only for small fleets (a few nodes, a
 *   few GPUs, ≤ ~10 pods). A pod takes all its instances from one node (from any of its GPUs), so
 *   each node is reduced to the instance counts its GPUs can offer together (every idle GPU: its
 *   layout, or any other from enumerateLayouts at one change), then pods are searched node by node.
 * - `nosStyleMig`: what nebuly-ai/nos's MIG partitioner does, adapted to mig-manager (a changed GPU
 *   loses every instance, so only GPUs with none in use are relaid, as the planner does) and to
 *   this catalog (its layouts, not nos's tables). Pods by priority, then the smaller profile; the
 *   "lacking" instances: what each pod asks for beyond the fleet's free instances; nodes by name;
 *   on each node, GPU by GPU, the layout that offers most of what is still lacking (the first such
 *   in catalog order: nos takes a Go map's order), minus what the GPU already has free; then the
 *   pods that fit go onto the node (each pod on one GPU, as nos adds it); a node where none fits
 *   keeps its old layouts. Greedy per GPU, no look at which pods an instance could serve.
 */
import { enumerateLayouts } from '../functions/mig/core/layout.ts';
import type { MigGpu, MigNode, PendingMigPod } from '../functions/mig/core/planner.ts';
import type { MigModel } from '../functions/lib/mig-profiles.ts';

const podKey = (p: PendingMigPod) => `${p.namespace}/${p.name}`;
const fits = (n: MigNode, p: PendingMigPod) =>
  n.schedulable && Object.entries(p.nodeSelector).every(([k, v]) => n.labels[k] === v);
const asking = (pods: readonly PendingMigPod[]) =>
  pods
    .filter((p) => Object.values(p.requests).some((v) => v > 0))
    .sort((a, b) => b.priority - a.priority || podKey(a).localeCompare(podKey(b)));

const layoutsOf = new Map<MigModel, string[][]>();
const layouts = (m: MigModel) => layoutsOf.get(m) ?? (layoutsOf.set(m, enumerateLayouts(m)), layoutsOf.get(m)!);
const idle = (g: MigGpu) => !g.locked && g.instances.every((i) => !i.inUse);
const same = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

/**
 * Satisfied pods per priority (`priorities`, highest first) as one number that orders like the
 * lexicographic vector: a pod at a priority weighs more than every pod below it together.
 */
export function lexWeight(pods: readonly PendingMigPod[], satisfied: readonly PendingMigPod[]): number {
  const levels = [...new Set(pods.map((p) => p.priority))].sort((a, b) => a - b); // lowest first
  const weight = new Map<number, number>();
  let below = 0;
  for (const lv of levels) {
    weight.set(lv, below + 1);
    below += pods.filter((p) => p.priority === lv).length * (below + 1);
  }
  return satisfied.reduce((s, p) => s + weight.get(p.priority)!, 0);
}

export interface ExactMig {
  /** The pods of one optimal choice. */
  satisfied: PendingMigPod[];
  /** Its lexWeight: the most any relayout of idle GPUs satisfies. */
  weight: number;
  /** The fewest GPUs changed to satisfy that much. */
  changes: number;
}

/** Per node: for every request vector (over the profiles its pods ask for), the fewest changes that offer it. */
function nodeTable(n: MigNode, pods: readonly PendingMigPod[]) {
  const dims = [...new Set(pods.flatMap((p) => Object.keys(p.requests)))].sort();
  const cap = dims.map((d) => pods.reduce((s, p) => s + (p.requests[d] ?? 0), 0));
  const stride: number[] = [];
  let size = 1;
  for (const c of cap) {
    stride.push(size);
    size *= c + 1;
  }
  const index = (counts: ReadonlyMap<string, number> | Readonly<Record<string, number>>) =>
    dims.reduce(
      (ix, d, k) =>
        ix +
        Math.min(cap[k]!, (counts instanceof Map ? counts.get(d) : (counts as Record<string, number>)[d]) ?? 0) *
          stride[k]!,
      0,
    );
  const count = (profiles: readonly string[]) => {
    const m = new Map<string, number>();
    for (const p of profiles) m.set(p, (m.get(p) ?? 0) + 1);
    return m;
  };
  const digit = (ix: number, k: number) => Math.floor(ix / stride[k]!) % (cap[k]! + 1);
  const add = (a: number, b: number) =>
    dims.reduce((ix, _, k) => ix + Math.min(cap[k]!, digit(a, k) + digit(b, k)) * stride[k]!, 0);
  // What the GPUs can offer together (capped), with the fewest changes for each.
  let reach = new Map<number, number>([[0, 0]]);
  for (const g of n.gpus) {
    const options = new Map<number, number>([
      [index(count(g.instances.filter((i) => !i.inUse).map((i) => i.profile))), 0],
    ]);
    if (idle(g)) {
      const old = g.instances.map((i) => i.profile);
      for (const l of layouts(g.model))
        if (!same(l, old) && !options.has(index(count(l)))) options.set(index(count(l)), 1);
    }
    const next = new Map<number, number>();
    for (const [v, c] of reach)
      for (const [o, d] of options) {
        const k = add(v, o);
        if ((next.get(k) ?? Infinity) > c + d) next.set(k, c + d);
      }
    reach = next;
  }
  // Anything below an offer is offered too: best[x] = min over y ≥ x of reach[y].
  const best = Array.from({ length: size }, (_, ix) => reach.get(ix) ?? Infinity);
  dims.forEach((_, k) => {
    for (let ix = size - 1; ix >= 0; ix--)
      if (digit(ix, k) < cap[k]!) best[ix] = Math.min(best[ix]!, best[ix + stride[k]!]!);
  });
  return { best, index, add };
}

export function exactMig(nodes: readonly MigNode[], pendingPods: readonly PendingMigPod[]): ExactMig {
  const pods = asking(pendingPods);
  const tables = nodes.map((n) =>
    nodeTable(
      n,
      pods.filter((p) => fits(n, p)),
    ),
  );
  const eligible = pods.map((p) => nodes.flatMap((n, k) => (fits(n, p) ? [k] : [])));
  const asks = pods.map((p) => tables.map((t) => t.index(p.requests)));
  const weights = pods.map((p) => lexWeight(pods, [p]));
  const load = nodes.map(() => 0); // per node: the request vector index of the pods put there
  const chosen: number[] = [];
  let top: ExactMig = { satisfied: [], weight: 0, changes: nodes.reduce((s, _, k) => s + tables[k]!.best[0]!, 0) };
  const search = (i: number, weight: number, left: number) => {
    if (weight + left < top.weight) return;
    if (i === pods.length) {
      const changes = load.reduce((s, ix, k) => s + tables[k]!.best[ix]!, 0);
      if (weight > top.weight || (weight === top.weight && changes < top.changes))
        top = { satisfied: chosen.map((c) => pods[c]!), weight, changes };
      return;
    }
    for (const k of eligible[i]!) {
      const before = load[k]!;
      const after = tables[k]!.add(before, asks[i]![k]!);
      if (tables[k]!.best[after] === Infinity) continue;
      load[k] = after;
      chosen.push(i);
      search(i + 1, weight + weights[i]!, left - weights[i]!);
      chosen.pop();
      load[k] = before;
    }
    search(i + 1, weight, left - weights[i]!);
  };
  search(
    0,
    0,
    weights.reduce((s, w) => s + w, 0),
  );
  return top;
}

/** The GPUs a nos-style pass relays: node, GPU index and new layout (the planner's `changes` shape). */
export function nosStyleMig(
  nodes: readonly MigNode[],
  pendingPods: readonly PendingMigPod[],
): { node: string; gpu: number; to: string[] }[] {
  const size = (profile: string) => Number(/^(\d+)g/.exec(profile)?.[1] ?? 0);
  const smallest = (p: PendingMigPod) => Math.min(...Object.keys(p.requests).map(size));
  let pending = asking(pendingPods).sort((a, b) => b.priority - a.priority || smallest(a) - smallest(b));
  const sorted = [...nodes].sort((a, b) => a.name.localeCompare(b.name));
  const free = new Map<MigGpu, Map<string, number>>();
  for (const n of sorted)
    for (const g of n.gpus) free.set(g, countFree(g.instances.filter((i) => !i.inUse).map((i) => i.profile)));
  // What each pod lacks beyond the fleet's free instances, counted once, as nos's tracker does.
  const fleet = new Map<string, number>();
  for (const f of free.values()) for (const [p, c] of f) fleet.set(p, (fleet.get(p) ?? 0) + c);
  const lacks = new Map(
    pending.map((p) => [
      p,
      Object.entries(p.requests)
        .filter(([prof, want]) => want > (fleet.get(prof) ?? 0))
        .map(([prof, want]) => [prof, want - (fleet.get(prof) ?? 0)] as const),
    ]),
  );
  const out: { node: string; gpu: number; to: string[] }[] = [];
  for (const n of sorted) {
    const lacking = new Map<string, number>();
    for (const p of pending) for (const [prof, c] of lacks.get(p)!) lacking.set(prof, (lacking.get(prof) ?? 0) + c);
    if (lacking.size === 0) break;
    const trial = new Map<MigGpu, { layout: string[]; free: Map<string, number> }>();
    for (const g of [...n.gpus].sort((a, b) => a.index - b.index)) {
      const mine = free.get(g)!;
      if (idle(g)) {
        let best: string[] | undefined;
        let most = 0;
        for (const l of layouts(g.model)) {
          const offer = countFree(l);
          let provides = 0;
          for (const [prof, want] of lacking)
            if ((mine.get(prof) ?? 0) < want) provides += Math.min(offer.get(prof) ?? 0, want);
          if (provides > most) [best, most] = [l, provides];
        }
        if (
          best &&
          !same(
            best,
            g.instances.map((i) => i.profile),
          )
        )
          trial.set(g, { layout: best, free: countFree(best) });
      }
      for (const [prof, c] of trial.get(g)?.free ?? mine) {
        if (!lacking.has(prof)) continue;
        const left = lacking.get(prof)! - c;
        if (left > 0) lacking.set(prof, left);
        else lacking.delete(prof);
      }
    }
    // Try the pods on the node as relaid; keep the relayout only if one fits.
    const gpuFree = new Map(n.gpus.map((g) => [g, new Map(trial.get(g)?.free ?? free.get(g)!)]));
    const added = new Set<PendingMigPod>();
    for (const p of pending) {
      if (!fits(n, p)) continue;
      const g = [...n.gpus]
        .sort((a, b) => a.index - b.index)
        .find((x) => Object.entries(p.requests).every(([prof, want]) => (gpuFree.get(x)!.get(prof) ?? 0) >= want));
      if (!g) continue;
      for (const [prof, want] of Object.entries(p.requests))
        gpuFree.get(g)!.set(prof, gpuFree.get(g)!.get(prof)! - want);
      added.add(p);
    }
    if (added.size === 0) continue;
    for (const [g, f] of gpuFree) free.set(g, f);
    for (const [g, t] of trial) out.push({ node: n.name, gpu: g.index, to: t.layout });
    pending = pending.filter((p) => !added.has(p));
  }
  return out;
}

function countFree(profiles: readonly string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const p of profiles) m.set(p, (m.get(p) ?? 0) + 1);
  return m;
}

/**
 * The most the fleet serves once `changes` are applied, weighed as exactMig weighs: every GPU keeps
 * its (new) layout, and pods are matched to the free instances as well as they can be (the
 * optimum's way of counting, where the planner's own matching takes each pod in turn).
 */
export function servableWeight(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  changes: readonly { node: string; gpu: number; to: readonly string[] }[],
): number {
  const to = new Map(changes.map((c) => [`${c.node}#${c.gpu}`, c.to]));
  const fixed = nodes.map((n) => ({
    ...n,
    gpus: n.gpus.map((g): MigGpu => {
      const layout = to.get(`${g.node}#${g.index}`);
      return {
        ...g,
        locked: 'kept as planned',
        instances: layout ? layout.map((profile) => ({ profile, inUse: false })) : g.instances,
      };
    }),
  }));
  return exactMig(fixed, pods).weight;
}
