/**
 * Two reference planners the scale-out planner is measured against (tests and `bench autoscale`);
 * the product never uses them.
 *
 * - `exactScaleOut`: the cheapest set of new nodes that hosts every hostable pod, by exhaustive
 *   search (pool counts in price order, each candidate checked by backtracking bin packing). Only
 *   for small instances: fresh pools (nothing on its way, no minimum owed), a handful of pods.
 * - `clusterAutoscalerStyle`: what cluster-autoscaler's loop does: each round, for every pool
 *   with room, estimate the nodes that would host the pending pods it can take (first-fit
 *   decreasing over the newest 8 nodes), pick one option by the expander (`price`: lowest price per pod helped;
 *   `least-waste`: least unused share of the new nodes), scale that one pool, repeat.
 */
import { whyNot } from '../functions/autoscale/core/fit.ts';
import type { PendingPod, PoolState } from '../functions/autoscale/core/planner.ts';

type Vec = number[];

const dimsOf = (pods: readonly PendingPod[]) =>
  [...new Set(pods.flatMap((p) => Object.keys(p.requests).filter((k) => (p.requests[k] ?? 0) > 0)))].sort();
const vecOf = (r: Readonly<Record<string, number>>, dims: string[]): Vec => dims.map((d) => r[d] ?? 0);
const fitsIn = (v: Vec, free: Vec) => v.every((x, d) => x <= free[d]! + 1e-9);
const sub = (free: Vec, v: Vec) => free.map((f, d) => f - v[d]!);

/** Cheapest hourly cost hosting every hostable pod, or undefined when beyond `maxNodes` in all. */
export function exactScaleOut(
  pools: readonly PoolState[],
  pods: readonly PendingPod[],
  maxNodes = 8,
): number | undefined {
  const dims = dimsOf(pods);
  const cap = pools.map((p) => vecOf(p.allocatable, dims));
  const hostable = pods.filter((pod) => pools.some((p) => whyNot(pod, p) === undefined));
  const feasible = hostable.map((pod) => pools.map((p) => whyNot(pod, p) === undefined));
  const vecs = hostable.map((p) => vecOf(p.requests, dims));
  const order = hostable
    .map((_, i) => i)
    .sort(
      (a, b) =>
        Math.max(...vecs[b]!.map((x, d) => x / Math.max(...cap.map((c) => c[d]!), 1))) -
        Math.max(...vecs[a]!.map((x, d) => x / Math.max(...cap.map((c) => c[d]!), 1))),
    );
  const room = pools.map((p) => Math.min(p.maxStep, p.max - p.desired, maxNodes));

  const packs = (counts: number[]): boolean => {
    const bins: { pool: number; free: Vec }[] = [];
    counts.forEach((n, p) => {
      for (let k = 0; k < n; k++) bins.push({ pool: p, free: [...cap[p]!] });
    });
    const place = (k: number): boolean => {
      if (k === order.length) return true;
      const i = order[k]!;
      const tried = new Set<string>();
      for (const bin of bins) {
        if (!feasible[i]![bin.pool] || !fitsIn(vecs[i]!, bin.free)) continue;
        const sig = `${bin.pool}:${bin.free.join(',')}`;
        if (tried.has(sig)) continue; // identical bins: trying one is enough
        tried.add(sig);
        const before = bin.free;
        bin.free = sub(before, vecs[i]!);
        if (place(k + 1)) return true;
        bin.free = before;
      }
      return false;
    };
    return place(0);
  };

  let best: number | undefined;
  const counts = pools.map(() => 0);
  const walk = (p: number, cost: number, nodes: number): void => {
    if (best !== undefined && cost >= best - 1e-9) return;
    if (p === pools.length) {
      if (packs(counts)) best = cost;
      return;
    }
    for (let n = 0; n <= room[p]! && nodes + n <= maxNodes; n++) {
      counts[p] = n;
      walk(p + 1, cost + n * pools[p]!.hourlyPrice, nodes + n);
    }
    counts[p] = 0;
  };
  walk(0, 0, 0);
  return best;
}

/** Cluster-autoscaler-style plan: total hourly cost and pods left pending. */
export function clusterAutoscalerStyle(
  pools: readonly PoolState[],
  pods: readonly PendingPod[],
  expander: 'price' | 'least-waste',
): { hourlyCost: number; unplaced: number } {
  const dims = dimsOf(pods);
  const cap = pools.map((p) => vecOf(p.allocatable, dims));
  const room = pools.map((p) => Math.max(0, Math.min(p.maxStep, p.max - p.desired)));
  let pending = pods.map((pod) => ({
    vec: vecOf(pod.requests, dims),
    ok: pools.map((p) => whyNot(pod, p) === undefined),
  }));
  let cost = 0;
  for (;;) {
    let best: { pool: number; nodes: number; helped: Set<number>; score: number } | undefined;
    pools.forEach((pool, p) => {
      if (room[p]! <= 0) return;
      const mine = pending.map((x, i) => [x, i] as const).filter(([x]) => x.ok[p]);
      if (mine.length === 0) return;
      mine.sort(
        ([a], [b]) =>
          Math.max(...b.vec.map((v, d) => v / (cap[p]![d]! || 1))) -
          Math.max(...a.vec.map((v, d) => v / (cap[p]![d]! || 1))),
      );
      const bins: Vec[] = [];
      const helped = new Set<number>();
      for (const [x, i] of mine) {
        // First fit over the newest nodes only (a bounded look-back keeps 10,000 pods tractable).
        let bin = bins.slice(-8).find((b) => fitsIn(x.vec, b));
        if (!bin) {
          if (bins.length >= room[p]!) continue;
          bin = [...cap[p]!];
          bins.push(bin);
        }
        bin.splice(0, bin.length, ...sub(bin, x.vec));
        helped.add(i);
      }
      const used = bins.reduce(
        (t, b) => t + b.reduce((u, f, d) => u + (cap[p]![d]! > 0 ? 1 - f / cap[p]![d]! : 0), 0),
        0,
      );
      const capacity = bins.length * cap[p]!.filter((c) => c > 0).length;
      const score = expander === 'price' ? (pool.hourlyPrice * bins.length) / helped.size : 1 - used / capacity;
      if (!best || score < best.score - 1e-12) best = { pool: p, nodes: bins.length, helped, score };
    });
    if (!best) break;
    cost += best.nodes * pools[best.pool]!.hourlyPrice;
    room[best.pool]! -= best.nodes;
    const { helped } = best;
    pending = pending.filter((_, i) => !helped.has(i));
  }
  return { hourlyCost: cost, unplaced: pending.length };
}
