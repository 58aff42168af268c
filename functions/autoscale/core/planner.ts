// Over 300 lines (issue #26 allows five such files, each saying why): planScaleOut is one algorithm whose phases
// (shapes, in-flight fill, greedy growth, drop pass) share the shapes, bins and packing caches in closures on the
// decision-time hot path (bench autoscale); cutting it into files would pass all of them around.
import { cardArray, cardNeed, fitOnCards, placeOnCards } from './cards.ts';
import { whyNot, type GpuCard, type NodeTemplate, type PodConstraints } from './fit.ts';

/**
 * Scale-out planning (pure): which node pools to grow, by how many nodes, so the pending pods run
 * at the lowest hourly price, within each pool's bounds. Deterministic: the same facts give the
 * same plan, and re-planning while the chosen nodes boot asks for nothing more (nodes on their
 * way are counted as capacity first).
 *
 * How: pods are grouped into shapes (same requests, same pools that can host them, same
 * priority). Nodes on their way and nodes owed to a pool's minimum are filled first. Then nodes are
 * added one pool at a time, each time the pool whose one new node, packed with what is still
 * pending (highest priority first, largest first), serves demand at the lowest price per unit of
 * demand, where a pod's demand is what the cheapest pool able to host it would charge for its
 * dominant share of a node. A node is packed two ways, largest first and balanced across
 * resources, and the better packing counts. Last, a new node whose pods fit in the room left on
 * the others is dropped (most expensive first). On ACK cGPU pools (`cards`) a node is also packed
 * card by card: each pod's `aliyun.com/gpu-mem` goes to the tightest card that holds it (cards.ts),
 * so a node never takes more pods than its cards can.
 */
export interface PendingPod extends PodConstraints {
  /** `namespace/name`. */
  key: string;
  priority: number;
  /**
   * Pods with one spread key never share a node (required hostname anti-affinity among replicas:
   * autoscale/anti-affinity.ts): each gets a node of its own.
   */
  spread?: string;
}

export interface PoolState extends NodeTemplate {
  id: string;
  name: string;
  instanceType: string;
  /** Price of one node per hour. */
  hourlyPrice: number;
  /** The pool's desired size now. */
  desired: number;
  /** Nodes of the pool that have joined the cluster; `desired - ready` are on their way. */
  ready: number;
  min: number;
  max: number;
  /** At most this many nodes added by one plan. */
  maxStep: number;
  /** Why the pool may not grow now (cooldown, ACK's own autoscaler, …); unset when it may. */
  frozen?: string;
}

export interface Increment {
  poolId: string;
  poolName: string;
  instanceType: string;
  from: number;
  to: number;
  /** Nodes added for pending pods (`to - from` also counts nodes owed to the pool's minimum). */
  add: number;
  hourlyCost: number;
  /** Pods (`namespace/name`) the new nodes are for. */
  pods: string[];
  /** The same pods node by node, as the plan packed them. */
  nodes: string[][];
  why: string;
}

export interface ScaleOutPlan {
  increments: Increment[];
  /** Price per hour of every node the plan adds. */
  hourlyCost: number;
  /** Pods the nodes already on their way will host: nothing more is asked for them. */
  awaitingInFlight: string[];
  /** Nodes on their way that those pods use, by pool id (core/gangs.ts keeps a gang's apart). */
  inFlightUsed?: Record<string, number>;
  /** Pods no pool can ever host, with why (reported, not chased). */
  unhostable: { pod: string; why: string }[];
  /** Pods a pool could host but no such pool may grow enough now, with why. */
  deferred: { pod: string; why: string }[];
}

interface Shape {
  vec: Float64Array;
  pools: number[];
  priority: number;
  pods: string[];
  /** Demand of one pod: the cheapest price of its dominant share of a node (also its size). */
  value: number;
  /** What one pod needs of one card on cGPU pools; unset when it asks for no shared GPU. */
  need: GpuCard | undefined;
  /** At most one pod of the shape a node (its pods are anti-affine on the hostname). */
  spread: boolean;
}

interface Bin {
  pool: number;
  free: Float64Array;
  /** cGPU pools: each card's free memory and core (cards.ts cardArray). */
  cards: Float64Array | undefined;
  /** shape index → pods of that shape in this bin. */
  load: Map<number, number>;
  kind: 'in-flight' | 'minimum' | 'new';
  /** Creation order: ties are broken by it. */
  seq: number;
}

const EPS = 1e-9;
/** How many of a pool's pending shapes the balanced packing weighs (largest first). */
const BALANCE_SHAPES = 48;

/**
 * How many of up to `limit` pods of a shape fit in `free` (and on `cards`, where the node has them);
 * `already`: pods of the shape the node holds (a spread shape takes one a node).
 */
function fitCount(shape: Shape, free: Float64Array, limit: number, cards?: Float64Array, already = 0): number {
  const vec = shape.vec;
  let n = shape.spread ? Math.min(limit, 1 - already) : limit;
  for (let d = 0; d < vec.length && n > 0; d++)
    if (vec[d]! > 0) n = Math.min(n, Math.floor((free[d]! + EPS) / vec[d]!));
  if (cards && shape.need && n > 0) n = fitOnCards(cards, shape.need, n);
  return Math.max(0, n);
}

/** Takes `n` pods of a shape from `free` and `cards` (which must hold them: fitCount said so). */
function use(shape: Shape, n: number, free: Float64Array, cards?: Float64Array): void {
  for (let d = 0; d < shape.vec.length; d++) free[d]! -= n * shape.vec[d]!;
  if (cards && shape.need) placeOnCards(cards, shape.need, n);
}

function take(bin: Bin, s: number, shape: Shape, n: number): void {
  use(shape, n, bin.free, bin.cards);
  bin.load.set(s, (bin.load.get(s) ?? 0) + n);
}

/** Gives back what `take` took; the cards come back from `cardsBefore`, as they were before it. */
function release(bin: Bin, s: number, shape: Shape, n: number, cardsBefore?: Float64Array): void {
  for (let d = 0; d < shape.vec.length; d++) bin.free[d]! += n * shape.vec[d]!;
  if (bin.cards && cardsBefore) bin.cards.set(cardsBefore);
  const left = (bin.load.get(s) ?? 0) - n;
  if (left > 0) bin.load.set(s, left);
  else bin.load.delete(s);
}

export function planScaleOut(poolsIn: readonly PoolState[], pendingIn: readonly PendingPod[]): ScaleOutPlan {
  const pools = [...poolsIn].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const pending = [...pendingIn].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const asked = new Set<string>();
  for (const p of pending) for (const k of Object.keys(p.requests)) if (p.requests[k]! > 0) asked.add(k);
  const dims = [...asked].sort();
  const cap = pools.map((p) => Float64Array.from(dims, (d) => p.allocatable[d] ?? 0));
  const cardCap = pools.map((p) => (p.cards ? cardArray(p.cards) : undefined));
  const room = pools.map((p) => (p.frozen ? 0 : Math.max(0, Math.min(p.maxStep, p.max - Math.max(p.desired, p.min)))));
  const unhostable: ScaleOutPlan['unhostable'] = [];

  // Shapes.
  const byKey = new Map<string, number>();
  const shapes: Shape[] = [];
  // Pods with the same constraints get the same answer: checked once.
  // The requests are part of the check: its vector and the shape key's part for them are worked out once too.
  const checked = new Map<string, { feasible: number[]; why: string; vec: Float64Array; key: string }>();
  for (const pod of pending) {
    const sig = JSON.stringify([pod.requests, pod.nodeSelector, pod.requiredTerms, pod.tolerations]);
    let check = checked.get(sig);
    if (!check) {
      const feasible: number[] = [];
      for (let i = 0; i < pools.length; i++) if (whyNot(pod, pools[i]!) === undefined) feasible.push(i);
      // Each pool's reason is written out only for a pod no pool can host (the only ones reported).
      const reasons = feasible.length > 0 ? [] : pools.map((p) => `${p.name}: ${whyNot(pod, p)!}`);
      const vec = Float64Array.from(dims, (d) => pod.requests[d] ?? 0);
      check = {
        feasible,
        vec,
        key: `${vec.join(',')}|${feasible.join(',')}`,
        why:
          feasible.length > 0
            ? ''
            : pools.length === 0
              ? 'no node pool is configured'
              : `no node pool can host it (${reasons.join('; ')})`,
      };
      checked.set(sig, check);
    }
    const { feasible } = check;
    if (feasible.length === 0) {
      unhostable.push({ pod: pod.key, why: check.why });
      continue;
    }
    const { vec } = check;
    const key = `${pod.priority}|${check.key}|${pod.spread ?? ''}`;
    let s = byKey.get(key);
    if (s === undefined) {
      const share = (i: number) => Math.max(...dims.map((_, d) => (vec[d]! > 0 ? vec[d]! / cap[i]![d]! : 0)));
      s = shapes.length;
      byKey.set(key, s);
      shapes.push({
        vec,
        pools: feasible,
        priority: pod.priority,
        pods: [],
        value: Math.min(...feasible.map((i) => pools[i]!.hourlyPrice * share(i))),
        // Every field set, in one order: one object shape for the hot loops.
        need: cardNeed(pod.requests),
        spread: Boolean(pod.spread),
      });
    }
    shapes[s]!.pods.push(pod.key);
  }
  // Highest priority first, then the largest demand, then a stable order.
  const order = shapes
    .map((_, i) => i)
    .sort((a, b) => shapes[b]!.priority - shapes[a]!.priority || shapes[b]!.value - shapes[a]!.value || a - b);
  const left = shapes.map((s) => s.pods.length);
  const hosts = shapes.map((sh) => {
    const b = new Uint8Array(pools.length);
    for (const i of sh.pools) b[i] = 1;
    return b;
  });
  const fits = (s: number, pool: number) => hosts[s]![pool] === 1;
  /** Each pool's shapes, in packing order. */
  const mineOf = pools.map((_, p) => order.filter((s) => fits(s, p)));
  /**
   * Per pool, each resource every shape it hosts asks for, with the least any asks: a node with less free than that
   * of one of them takes no more pods (fitCount's own test, on the smallest request: a larger one fits no better).
   */
  const least = mineOf.map((mine) => {
    const at: number[] = [];
    const min: number[] = [];
    for (let d = 0; d < dims.length; d++) {
      let m = Infinity;
      for (const s of mine) m = Math.min(m, shapes[s]!.vec[d]! > 0 ? shapes[s]!.vec[d]! : -1);
      if (m > 0 && m < Infinity) {
        at.push(d);
        min.push(m);
      }
    }
    return { at, min };
  });
  const full = (pool: number, free: Float64Array): boolean => {
    const { at, min } = least[pool]!;
    for (let j = 0; j < at.length; j++) if (Math.floor((free[at[j]!]! + EPS) / min[j]!) === 0) return true;
    return false;
  };

  const bins: Bin[] = [];
  let seq = 0;
  const newBin = (pool: number, kind: Bin['kind']): Bin => ({
    pool,
    free: Float64Array.from(cap[pool]!),
    cards: cardCap[pool]?.slice(),
    load: new Map(),
    kind,
    seq: seq++,
  });
  pools.forEach((p, i) => {
    for (let k = 0; k < Math.max(0, p.desired - p.ready); k++) bins.push(newBin(i, 'in-flight'));
    for (let k = 0; k < Math.max(0, p.min - p.desired); k++) bins.push(newBin(i, 'minimum'));
  });
  // Fill what is coming anyway.
  for (const s of order) {
    for (const bin of bins) {
      if (left[s] === 0) break;
      if (!fits(s, bin.pool)) continue;
      const n = fitCount(shapes[s]!, bin.free, left[s]!, bin.cards, bin.load.get(s));
      if (n > 0) {
        take(bin, s, shapes[s]!, n);
        left[s]! -= n;
      }
    }
  }

  // Greedy: one pool's node at a time (repeated while its packing stays the same).
  const added = pools.map(() => 0);
  /** Largest demand first, as many of each shape as fit. */
  const packInOrder = (pool: number, mine: readonly number[]): { load: [number, number][]; value: number } => {
    const free = Float64Array.from(cap[pool]!);
    const cards = cardCap[pool]?.slice();
    const load: [number, number][] = [];
    let value = 0;
    for (const s of mine) {
      const n = fitCount(shapes[s]!, free, left[s]!, cards);
      if (n === 0) continue;
      use(shapes[s]!, n, free, cards);
      load.push([s, n]);
      value += n * shapes[s]!.value;
      if (full(pool, free)) break;
    }
    return { load, value };
  };
  /** Pods of each shape one packing took (zeroed again before it returns). */
  const taken = new Int32Array(shapes.length);
  /**
   * One pod at a time, the one with the most demand per share of what is still free (a resource
   * running out weighs more): mixes GPU-heavy and CPU-heavy pods on one node where the order
   * above would fill one dimension and strand the other.
   */
  const packBalanced = (pool: number, mine: readonly number[]): { load: [number, number][]; value: number } => {
    const free = Float64Array.from(cap[pool]!);
    const cards = cardCap[pool]?.slice();
    /** Shapes in the order they were first taken. */
    const order: number[] = [];
    let value = 0;
    const top = shapes[mine[0]!]!.priority;
    // The largest shapes are where GPU-heavy and CPU-heavy pods meet; the rest only fill gaps. A shape that cannot
    // take one more pod now never can in this packing (room only shrinks, takings only grow): it leaves the list.
    const head = (mine.length > BALANCE_SHAPES ? mine.slice(0, BALANCE_SHAPES) : mine).filter(
      (s) => shapes[s]!.priority === top,
    );
    for (;;) {
      let pick = -1;
      let bestRatio = 0;
      let w = 0;
      for (const s of head) {
        const sh = shapes[s]!;
        if (taken[s]! >= left[s]! || fitCount(sh, free, 1, cards, taken[s]) === 0) continue;
        head[w++] = s;
        let use = 0;
        for (let d = 0; d < dims.length; d++) if (sh.vec[d]! > 0) use += sh.vec[d]! / Math.max(free[d]!, EPS);
        const ratio = sh.value / use;
        if (ratio > bestRatio + EPS) {
          bestRatio = ratio;
          pick = s;
        }
      }
      head.length = w;
      if (pick < 0) break;
      use(shapes[pick]!, 1, free, cards);
      if (taken[pick]! === 0) order.push(pick);
      taken[pick]!++;
      value += shapes[pick]!.value;
    }
    // What is left fills the gaps, in order (lower priorities included).
    for (const s of mine) {
      if (full(pool, free)) break;
      const had = taken[s]!;
      const n = fitCount(shapes[s]!, free, left[s]! - had, cards, had);
      if (n === 0) continue;
      use(shapes[s]!, n, free, cards);
      if (had === 0) order.push(s);
      taken[s] = had + n;
      value += n * shapes[s]!.value;
    }
    const load = order.map((s): [number, number] => [s, taken[s]!]);
    for (const s of order) taken[s] = 0;
    return { load, value };
  };
  /**
   * A pool's best node, and for each shape either packing took pods of, how many: both packings come out the same
   * while every shape of the pool keeps more pods pending than that (each takes at most what is pending, and a
   * shape is weighed only while it has pods left; equal counts could change a tie), so the node stays cached.
   */
  type Packed = { load: [number, number][]; value: number; took: Map<number, number> };
  const packOne = (pool: number): Packed => {
    // A shape with no pod left never gets one back: it leaves the pool's list for good.
    const mine = mineOf[pool]!;
    let w = 0;
    for (const s of mine) if (left[s]! > 0) mine[w++] = s;
    mine.length = w;
    if (mine.length === 0) return { load: [], value: 0, took: new Map() };
    const plain = packInOrder(pool, mine);
    const took = new Map(plain.load);
    if (mine.length === 1 || dims.length === 1) return { load: plain.load, value: plain.value, took };
    // The largest shapes are where GPU-heavy and CPU-heavy pods meet; the rest only fill gaps.
    const balanced = packBalanced(pool, mine);
    for (const [s, n] of balanced.load) took.set(s, Math.max(n, took.get(s) ?? 0));
    const best = balanced.value > plain.value + EPS ? balanced : plain;
    return { load: best.load, value: best.value, took };
  };
  const cache: (Packed | undefined)[] = pools.map(() => undefined);
  for (;;) {
    let best: { pool: number; load: [number, number][]; score: number } | undefined;
    for (let i = 0; i < pools.length; i++) {
      if (added[i]! >= room[i]!) continue;
      const { load, value } = (cache[i] ??= packOne(i));
      if (load.length === 0) continue;
      const score = pools[i]!.hourlyPrice / value;
      if (!best || score < best.score - EPS) best = { pool: i, load, score };
    }
    if (!best) break;
    let repeat = room[best.pool]! - added[best.pool]!;
    for (const [s, n] of best.load) repeat = Math.min(repeat, Math.floor(left[s]! / n));
    for (let r = 0; r < Math.max(1, repeat); r++) {
      const bin = newBin(best.pool, 'new');
      for (const [s, n] of best.load) {
        take(bin, s, shapes[s]!, n);
        left[s]! -= n;
      }
      bins.push(bin);
      added[best.pool]!++;
    }
    for (const [sh] of best.load)
      for (const p of shapes[sh]!.pools) if (left[sh]! <= (cache[p]?.took.get(sh) ?? 0)) cache[p] = undefined;
  }

  // Waste removal: drop a new node whose pods fit in the room left on the other nodes.
  const newest = () =>
    bins
      .filter((b) => b.kind === 'new')
      .sort((a, b) => pools[b.pool]!.hourlyPrice - pools[a.pool]!.hourlyPrice || b.seq - a.seq);
  // A node like one that could not be emptied cannot be either, until some move succeeds.
  let stuck = new Set<string>();
  // Each shape's candidate nodes, in node order: the nodes of the pools that can host it, less those that can never
  // take one of its pods again. Between attempts a node's room only shrinks (a failed attempt is undone, a
  // successful one fills other nodes and drops its own), so a node without room for one pod of the shape, untouched
  // by the attempt under way, leaves the shape's list for good.
  const candidates = new Map<number, Bin[]>();
  // The nodes of each set of pools, in node order (shapes hosted by the same pools share it until their first try).
  // A node full for every shape its pool hosts (full()) takes nothing in any attempt: it is no candidate at all.
  const withRoom = bins.filter((b) => !full(b.pool, b.free));
  const ofPools = new Map<Shape['pools'], Bin[]>();
  const nodesOf = (s: number): Bin[] => {
    let list = ofPools.get(shapes[s]!.pools);
    if (!list) ofPools.set(shapes[s]!.pools, (list = withRoom.filter((b) => fits(s, b.pool))));
    return list;
  };
  const gone = new Uint8Array(seq);
  const touched = new Int32Array(seq).fill(-1);
  let attempt = 0;
  for (const victim of newest()) {
    const sig = `${victim.pool}|${[...victim.load].sort(([a], [b]) => a - b).join(';')}`;
    if (stuck.has(sig)) continue;
    attempt++;
    const moves: [Bin, number, number, Float64Array | undefined][] = [];
    let ok = true;
    for (const [s, n] of [...victim.load]) {
      let rest = n;
      const list = candidates.get(s) ?? nodesOf(s);
      const kept: Bin[] = [];
      let j = 0;
      for (; j < list.length && rest > 0; j++) {
        const other = list[j]!;
        if (gone[other.seq]) continue;
        if (other !== victim) {
          const k = fitCount(shapes[s]!, other.free, rest, other.cards, other.load.get(s));
          if (k > 0) {
            const before = other.cards?.slice();
            take(other, s, shapes[s]!, k);
            moves.push([other, s, k, before]);
            touched[other.seq] = attempt;
            rest -= k;
          } else if (touched[other.seq] !== attempt) continue;
        }
        kept.push(other);
      }
      for (; j < list.length; j++) kept.push(list[j]!);
      candidates.set(s, kept);
      if (rest > 0) {
        ok = false;
        break;
      }
    }
    if (ok) {
      bins.splice(bins.indexOf(victim), 1);
      gone[victim.seq] = 1;
      added[victim.pool]!--;
      stuck = new Set();
    } else {
      // Undone newest first, so each bin's cards return to what they were before the first move.
      for (const [other, s, k, before] of moves.reverse()) release(other, s, shapes[s]!, k, before);
      stuck.add(sig);
    }
  }
  // Name the pods: each shape's pods go to its bins in order.
  const cursor = shapes.map(() => 0);
  const podsOf = (bin: Bin) =>
    [...bin.load].sort(([a], [b]) => a - b).flatMap(([s, n]) => shapes[s]!.pods.slice(cursor[s]!, (cursor[s]! += n)));
  const awaitingInFlight: string[] = [];
  const inFlightUsed: Record<string, number> = {};
  const forPool = pools.map(() => [] as string[][]);
  for (const bin of bins) {
    const named = podsOf(bin);
    if (bin.kind !== 'in-flight') forPool[bin.pool]!.push(named);
    else if (named.length > 0) {
      awaitingInFlight.push(...named);
      inFlightUsed[pools[bin.pool]!.id] = (inFlightUsed[pools[bin.pool]!.id] ?? 0) + 1;
    }
  }
  const deferred: ScaleOutPlan['deferred'] = [];
  for (const s of order) {
    const rest = shapes[s]!.pods.slice(cursor[s]!);
    if (rest.length === 0) continue;
    const why = shapes[s]!.pools.map((i) => {
      const p = pools[i]!;
      if (p.frozen) return `${p.name}: ${p.frozen}`;
      if (Math.max(p.desired, p.min) + added[i]! >= p.max) return `${p.name}: at its maximum of ${p.max} nodes`;
      return `${p.name}: at most ${p.maxStep} nodes per step`;
    });
    for (const pod of rest) deferred.push({ pod, why: why.join('; ') });
  }

  const increments: Increment[] = [];
  pools.forEach((p, i) => {
    const owed = Math.max(0, p.min - p.desired);
    const add = added[i]!;
    if (add === 0 && owed === 0) return;
    const to = p.desired + owed + add;
    const nodes = forPool[i]!;
    const podsHere = nodes.flat().sort();
    const reasons = [
      ...(owed > 0 ? [`${owed} to reach its minimum of ${p.min}`] : []),
      ...(add > 0 ? [`${add} for ${podsHere.length} pending pod(s)`] : []),
    ];
    increments.push({
      poolId: p.id,
      poolName: p.name,
      instanceType: p.instanceType,
      from: p.desired,
      to,
      add,
      hourlyCost: (to - p.desired) * p.hourlyPrice,
      pods: podsHere,
      nodes,
      why: `${p.name}: ${p.desired} → ${to} (${reasons.join(', ')}) at ${p.hourlyPrice}/h each`,
    });
  });
  return {
    increments,
    hourlyCost: increments.reduce((t, x) => t + x.hourlyCost, 0),
    awaitingInFlight: awaitingInFlight.sort(),
    inFlightUsed,
    unhostable,
    deferred,
  };
}
