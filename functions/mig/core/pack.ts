/**
 * One round of the MIG planner's packing (relay.ts runs the rounds): the pods a matching leaves
 * waiting are served in a given order onto free instances, GPUs this plan already relays, or GPUs
 * newly relaid for them (idle ones; with preemption on, then GPUs whose running pods the policy lets
 * go), displacing or moving pending pods where that makes room. Returns the layouts of the GPUs it
 * relays and the pods each preempts. Pure.
 */
import { gpuKey, kept, podKey, podOrder, sameLayout, tally, type Assignment, type Layouts } from './match.ts';
import type { MigGpu, MigHolder, MigNode, PendingMigPod } from './planner.ts';
import type { PreemptionPolicy } from './policy.ts';
import { holderKey, notPreemptible } from './preemption.ts';
import { fresh, holds, layoutFor, minus, multisetKey, offers } from './layout-index.ts';

/** Nodes with a way to relay for a pod looked at beyond the first one found (big fleets). */
const NODES_COMPARED = 8;

/** The order waiting pods are served in. */
export type Order = (a: PendingMigPod, b: PendingMigPod) => number;

interface Slot {
  key: string;
  node: number;
  gpu: MigGpu;
  old: string[];
  oldKey: string;
  /** Free instances no pod takes (a GPU keeping its layout). */
  free: Map<string, number>;
  /** No instance in use, not locked, not relaid yet: may be relaid (keeping what pods take of it, or not). */
  relayable: boolean;
  /** Instances in use by pods the preemption policy lets go (all known, none protected): may be relaid for pods far enough above them. */
  holders?: MigHolder[];
  /** Relaid by this plan over its holders: they are preempted. */
  preempts?: MigHolder[];
  /** Relaid by this plan: the instances pods take from it. */
  req?: string[];
  /** The pending pods taking its instances, with the profiles each takes. */
  takers: Map<PendingMigPod, string[]>;
  /** Relaid: whether one more instance of a profile still fits with `req` (cleared when it changes). */
  fitsMore: Map<string, boolean>;
  /** Relayable: whether relaying it could give a pod of a priority one instance of a profile (cleared when its takers change). */
  couldGive: Map<string, boolean>;
}

/** A GPU newly relaid for a pod: what it then holds, and the pods it displaces. */
interface Relay {
  s: Slot;
  /** The instances pods take of it: those of the pods that stay, and this pod's. */
  req: string[];
  /** This pod's part of `req`. */
  takes: string[];
  displaced: PendingMigPod[];
  /** Running pods it preempts (its holders), or none: an idle GPU. */
  preempts: MigHolder[];
  /** Pods moved off it: [pod, profile, the GPU of the node whose free instance it takes instead]. */
  moves: Move[];
  scarce: number;
  destroyed: number;
  keep: number;
}

type Move = [PendingMigPod, string, Slot];

/** One way to give a pod its instances on one node. */
interface Option {
  node: number;
  /** [slot, profile] from free instances of GPUs that keep their layouts. */
  fromFree: [Slot, string][];
  /** [slot, profile] added to GPUs this plan already relays. */
  fromRelaid: [Slot, string][];
  relays: Relay[];
}

/**
 * Lower is better: fewest running pods preempted (then the lowest priorities), fewest pods displaced, fewest new relays, fewest instances destroyed that
 * waiting pods ask for, most of the old layouts kept, fewest destroyed.
 */
function cost(o: Option): number[] {
  const sum = (f: (r: Relay) => number) => o.relays.reduce((t, r) => t + f(r), 0);
  return [sum((r) => r.preempts.length), sum((r) => r.preempts.reduce((t, h) => t + h.priority, 0)), sum((r) => r.displaced.length), o.relays.length, sum((r) => r.scarce), -sum((r) => r.keep), sum((r) => r.destroyed)];
}

function cheaper(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}


/**
 * One round: serve what it can of the pods `state` leaves waiting; the layouts of every GPU it
 * relays. A GPU may be relaid for a pod although pending pods of its priority or lower take some
 * of its free instances (unless their priority is `shielded`): those that no longer fit wait
 * again (and have their turn again).
 */
export function construct(nodes: readonly MigNode[], pods: readonly PendingMigPod[], eligible: ReadonlyMap<PendingMigPod, readonly number[]>, layouts: Layouts, state: Assignment, shielded: ReadonlySet<number>, servingOrder: Order, frozen: boolean, preemption?: { policy: PreemptionPolicy; done: number }): { layouts: Map<string, string[]>; preempted: Map<string, MigHolder[]>; servedMore: boolean } {
  const slots: Slot[][] = nodes.map((n, at) =>
    n.gpus.map((g): Slot => {
      const key = gpuKey(g);
      const old = g.instances.map((i) => i.profile);
      const base = { key, node: at, gpu: g, old, oldKey: multisetKey(old), takers: new Map<PendingMigPod, string[]>(), fitsMore: new Map<string, boolean>(), couldGive: new Map<string, boolean>() };
      const relaid = layouts.get(key);
      if (relaid && frozen) return { ...base, free: tally(relaid), relayable: false };
      if (relaid) return { ...base, free: new Map(), relayable: false, req: [] };
      const relayable = !g.locked && g.instances.every((i) => !i.inUse);
      const holders = !relayable && preemption && notPreemptible(g, preemption.policy) === undefined ? [...g.holders!].sort((a, b) => b.priority - a.priority || holderKey(a).localeCompare(holderKey(b))) : undefined;
      return { ...base, free: tally(g.instances.filter((i) => !i.inUse).map((i) => i.profile)), relayable, ...(holders ? { holders } : {}) };
    }),
  );
  const slotOf = new Map(slots.flat().map((s) => [s.key, s]));
  const held = new Map<PendingMigPod, [Slot, string][]>();
  const take = (pod: PendingMigPod, s: Slot, profile: string) => {
    (held.get(pod) ?? held.set(pod, []).get(pod)!).push([s, profile]);
    (s.takers.get(pod) ?? s.takers.set(pod, []).get(pod)!).push(profile);
    s.couldGive.clear();
  };
  for (const pod of pods) {
    for (const [k, profile] of state.taken.get(podKey(pod)) ?? []) {
      const s = slotOf.get(k)!;
      if (s.req) s.req.push(profile);
      else s.free.set(profile, s.free.get(profile)! - 1);
      take(pod, s, profile);
    }
  }
  // Per node: free instances of the GPUs keeping their layouts, summed.
  const nodeFree = slots.map((ss) => {
    const sum = new Map<string, number>();
    for (const s of ss) for (const [p, c] of s.free) sum.set(p, (sum.get(p) ?? 0) + c);
    return sum;
  });
  const fitsMore = (s: Slot, p: string) => {
    let yes = s.fitsMore.get(p);
    if (yes === undefined) s.fitsMore.set(p, (yes = holds(s.gpu.model, [...s.req!, p])));
    return yes;
  };
  /** Cheap necessary conditions, before an option is worked out: without relaying, and with. */
  // Per node, the profiles one more instance of fits on a GPU relaid here (undefined: work it out again).
  const addable: (Set<string> | undefined)[] = slots.map(() => undefined);
  const addableOn = (at: number) => {
    let set = addable[at];
    if (!set) {
      set = new Set();
      for (const s of slots[at]!) if (s.req) for (const p of s.gpu.model.profiles) if (fitsMore(s, p.name)) set.add(p.name);
      addable[at] = set;
    }
    return set;
  };
  const mayFitNow = (at: number, asks: [string, number][]) => asks.every(([p, n]) => (nodeFree[at]!.get(p) ?? 0) >= n || addableOn(at).has(p));
  const displaceable = (q: PendingMigPod, priority: number) => q.priority <= priority && !shielded.has(q.priority);
  // GPUs preempted so far (earlier rounds and this one): at most the policy's maxGpusPerRound.
  let preemptedNow = preemption?.done ?? 0;
  const mayPreempt = (s: Slot, priority: number, inOption: number) =>
    !!s.holders && !!preemption && preemptedNow + inOption < preemption.policy.maxGpusPerRound && s.holders.every((h) => h.priority + preemption.policy.minPriorityGap <= priority);
  const couldGive = (s: Slot, p: string, priority: number) => {
    const memo = `${p}|${priority}`;
    let yes = s.couldGive.get(memo);
    if (yes === undefined) {
      const stay = [...s.takers].flatMap(([q, ps]) => (displaceable(q, priority) ? [] : ps));
      s.couldGive.set(memo, (yes = offers(s.gpu.model, p) && holds(s.gpu.model, [...stay, p])));
    }
    return yes;
  };
  const mayFitRelaid = (at: number, asks: [string, number][], priority: number) =>
    asks.every(([p, n]) => (nodeFree[at]!.get(p) ?? 0) >= n || addableOn(at).has(p) || slots[at]!.some((s) => (s.relayable || mayPreempt(s, priority, 0)) && couldGive(s, p, priority)));
  // Shapes (what a pod asks for, where it may go) nothing could be found for: consuming instances
  // never makes room, so they stay failed until a pod is displaced.
  const failed = new Map<readonly number[], Set<string>>();
  const waiting = pods.filter((p) => !state.placed.has(podKey(p))).sort(servingOrder);
  // What the pods still waiting ask for: destroying such an instance may cost one of them.
  const wanted = new Map<string, number>();
  const want = (pod: PendingMigPod, sign: number) => {
    for (const [prof, n] of Object.entries(pod.requests)) if (n > 0) wanted.set(prof, (wanted.get(prof) ?? 0) + sign * n);
  };
  for (const p of waiting) want(p, 1);

  /** Relaying `s` for `pod`'s `rest` (besides what the option already takes of it). */
  const relayOf = (s: Slot, pod: PendingMigPod, own: string[], rest: readonly string[], o: Option): Relay | undefined => {
    if (own.length === 0 && s.takers.size === 0) {
      const f = fresh(s.gpu.model, s.old, rest, s.oldKey);
      if (!f) return undefined;
      let scarce = 0;
      for (const [p, n] of f.lost) if ((wanted.get(p) ?? 0) > 0) scarce += n;
      return { s, req: [...f.takes], takes: f.takes, displaced: [], preempts: s.holders ?? [], moves: [], scarce, destroyed: f.destroyed, keep: f.keep };
    }
    // Free instances of a GPU of the node that keeps its layout and is not relaid for anyone, left
    // after what this option already takes there.
    const spare = (t: Slot, p: string, moves: readonly Move[]) => {
      let n = t.free.get(p) ?? 0;
      for (const [x, q] of o.fromFree) if (x === t && q === p) n--;
      for (const [, q, x] of [...o.relays.flatMap((r) => r.moves), ...moves]) if (x === t && q === p) n--;
      return n;
    };
    const attempt = (moveTakers: boolean) => {
      const moves: Move[] = [];
      const stay: string[] = [...own];
      const lower: [PendingMigPod, string[]][] = [];
      for (const [q, ps] of s.takers) {
        const left: string[] = [];
        for (const p of ps) {
          const t = moveTakers ? slots[s.node]!.find((x) => x !== s && !x.req && !x.relayable && !x.holders && spare(x, p, moves) > 0) : undefined;
          if (t) moves.push([q, p, t]);
          else left.push(p);
        }
        if (left.length === 0) continue;
        if (displaceable(q, pod.priority)) lower.push([q, left]);
        else stay.push(...left);
      }
      const takes: string[] = [];
      for (const profile of rest) if (holds(s.gpu.model, [...stay, ...takes, profile])) takes.push(profile);
      const req = [...stay, ...takes];
      const displaced: PendingMigPod[] = [];
      for (const [q, ps] of lower.sort(([a], [b]) => podOrder(a, b))) {
        if (holds(s.gpu.model, [...req, ...ps])) req.push(...ps);
        else displaced.push(q);
      }
      return { takes, req, displaced, moves: moves.filter(([q]) => !displaced.includes(q)) };
    };
    // Pods keep what they take of it, unless moving them to spare instances of the node's other
    // GPUs lets it take more of this pod, or displace fewer.
    const [a, b] = [attempt(false), s.takers.size > 0 ? attempt(true) : undefined];
    const best = b && (b.takes.length > a.takes.length || (b.takes.length === a.takes.length && b.displaced.length < a.displaced.length)) ? b : a;
    if (best.takes.length === 0) return undefined;
    const { takes, req, displaced, moves } = best;
    const to = layoutFor(s.gpu.model, s.old, req)!;
    let scarce = 0;
    let destroyed = 0;
    for (const [p, n] of tally(minus(s.old, to))) {
      destroyed += n;
      if ((wanted.get(p) ?? 0) > 0) scarce += n;
    }
    return { s, req, takes, displaced, preempts: s.holders ?? [], moves, scarce, destroyed, keep: kept(s.old, to) };
  };


  const option = (at: number, pod: PendingMigPod, asks: [string, number][], relay: boolean): Option | undefined => {
    const o: Option = { node: at, fromFree: [], fromRelaid: [], relays: [] };
    const left: string[] = [];
    for (const [profile, n] of asks) {
      let need = n;
      for (const s of slots[at]!) {
        if (s.req || need === 0) continue;
        const k = Math.min(need, s.free.get(profile) ?? 0);
        for (let i = 0; i < k; i++) o.fromFree.push([s, profile]);
        need -= k;
      }
      for (let i = 0; i < need; i++) left.push(profile);
    }
    const grown = new Map<Slot, string[]>();
    let rest = left.filter((profile) =>
      !slots[at]!.some((s) => {
        if (!s.req) return false;
        const next = [...(grown.get(s) ?? s.req), profile];
        if (!holds(s.gpu.model, next)) return false;
        grown.set(s, next);
        o.fromRelaid.push([s, profile]);
        return true;
      }),
    );
    if (rest.length === 0) return o;
    if (!relay) return undefined;
    // Taking free instances of a GPU and then relaying it: its layout keeps them.
    for (;;) {
      let pick: Relay | undefined;
      for (const s of slots[at]!) {
        if (o.relays.some((r) => r.s === s) || !(s.relayable || mayPreempt(s, pod.priority, o.relays.filter((r) => r.preempts.length > 0).length))) continue;
        const r = relayOf(s, pod, o.fromFree.filter(([t]) => t === s).map(([, p]) => p), rest, o);
        if (!r) continue;
        const rank = (x: Relay) => [x.preempts.length, x.preempts.reduce((t, h) => t + h.priority, 0), -x.takes.length, x.displaced.length, x.scarce, -x.keep, x.destroyed];
        if (!pick || cheaper(rank(r), rank(pick))) pick = r;
      }
      if (!pick) return undefined;
      o.relays.push(pick);
      rest = minus(rest, pick.takes);
      if (rest.length === 0) return o;
    }
  };

  const release = (q: PendingMigPod, relaid: ReadonlySet<Slot>) => {
    for (const [t, p] of held.get(q) ?? []) {
      t.takers.delete(q);
      t.couldGive.clear();
      if (relaid.has(t)) continue;
      if (t.req) {
        t.req.splice(t.req.lastIndexOf(p) >>> 0, 1);
        t.fitsMore.clear();
        addable[t.node] = undefined;
      }
      else {
        t.free.set(p, t.free.get(p)! + 1);
        nodeFree[t.node]!.set(p, (nodeFree[t.node]!.get(p) ?? 0) + 1);
      }
    }
    held.delete(q);
    failed.clear();
  };

  let servedMore = false;
  // A displaced pod waits again, next in serving order after the pod that displaced it (at its
  // priority or below), before lower pods take what it could use. Each pod is displaced a few
  // times at most.
  const queue = [...waiting];
  const displacedTimes = new Map<PendingMigPod, number>();
  for (let i = 0; i < queue.length; i++) {
    const pod = queue[i]!;
    {
      const asks = Object.entries(pod.requests).filter(([, n]) => n > 0);
      const where = eligible.get(pod)!;
      const shape = JSON.stringify(asks);
      const failedHere = failed.get(where) ?? failed.set(where, new Set()).get(where)!;
      if (failedHere.has(shape)) continue;
      let chosen: Option | undefined;
      for (const at of where) if (mayFitNow(at, asks) && (chosen = option(at, pod, asks, false))) break;
      if (!chosen) {
        let seen = 0;
        let best: number[] = [];
        for (const at of where) {
          if (!mayFitRelaid(at, asks, pod.priority)) continue;
          const o = option(at, pod, asks, true);
          if (!o) continue;
          const c = cost(o);
          if (!chosen || cheaper(c, best)) [chosen, best] = [o, c];
          if (++seen > NODES_COMPARED) break;
        }
      }
      if (!chosen) {
        failedHere.add(shape);
        continue;
      }
      const sum = nodeFree[chosen.node]!;
      for (const [s, p] of chosen.fromFree) {
        s.free.set(p, s.free.get(p)! - 1);
        sum.set(p, sum.get(p)! - 1);
        take(pod, s, p);
      }
      const relaid = new Set(chosen.relays.map((r) => r.s));
      for (const r of chosen.relays) {
        for (const [p, c] of r.s.free) sum.set(p, sum.get(p)! - c);
        r.s.free = new Map();
        r.s.relayable = false;
        if (r.preempts.length > 0) {
          r.s.preempts = r.preempts;
          r.s.holders = undefined;
          preemptedNow++;
        }
        r.s.req = r.req;
        r.s.fitsMore.clear();
        addable[r.s.node] = undefined;
        for (const p of r.takes) take(pod, r.s, p);
      }
      for (const r of chosen.relays) {
        for (const [q, p, t] of r.moves) {
          t.free.set(p, t.free.get(p)! - 1);
          sum.set(p, sum.get(p)! - 1);
          const hs = held.get(q)!;
          hs[hs.findIndex(([x, y]) => x === r.s && y === p)] = [t, p];
          (t.takers.get(q) ?? t.takers.set(q, []).get(q)!).push(p);
          t.couldGive.clear();
        }
      }
      for (const r of chosen.relays) {
        for (const q of r.displaced) {
          if (!held.has(q)) continue;
          release(q, relaid);
          want(q, 1);
          const times = (displacedTimes.get(q) ?? 0) + 1;
          displacedTimes.set(q, times);
          if (times > 3) continue;
          let at = i + 1;
          while (at < queue.length && servingOrder(queue[at]!, q) < 0) at++;
          queue.splice(at, 0, q);
        }
      }
      for (const [s, p] of chosen.fromRelaid) {
        s.req!.push(p);
        s.fitsMore.clear();
        addable[s.node] = undefined;
        take(pod, s, p);
      }
      want(pod, -1);
      servedMore = true;
    }
  }

  // Two GPUs of a node relaid where one could hold what the other's pods take beyond its old
  // layout: relay only that one (keeping more of its old layout when both could); the other keeps
  // its layout, the pods that took instances it still has staying there.
  for (const ss of slots) {
    for (let merged = true; merged; ) {
      merged = false;
      const relaid = ss.filter((x) => x.req);
      const onto = (into: Slot, from: Slot) => {
        const both = [...into.req!, ...minus(from.req!, from.gpu.instances.filter((i) => !i.inUse).map((i) => i.profile))];
        return holds(into.gpu.model, both) ? { into, from, both, keep: kept(into.old, layoutFor(into.gpu.model, into.old, both)!) } : undefined;
      };
      for (let i = 0; i < relaid.length && !merged; i++) {
        for (let j = i + 1; j < relaid.length && !merged; j++) {
          const [x, y] = [onto(relaid[i]!, relaid[j]!), onto(relaid[j]!, relaid[i]!)];
          const m = x && (!y || x.keep >= y.keep) ? x : y;
          if (!m) continue;
          m.into.req = m.both;
          m.from.req = undefined;
          m.from.preempts = undefined;
          merged = true;
        }
      }
    }
  }

  const out = new Map<string, string[]>(frozen ? [...layouts].map(([k, l]) => [k, [...l]]) : []);
  for (const s of slots.flat()) {
    if (!s.req) continue;
    const to = layoutFor(s.gpu.model, s.old, s.req)!;
    if (!sameLayout(to, s.old)) out.set(s.key, to);
  }
  const preempted = new Map(slots.flat().filter((x) => x.req && x.preempts && out.has(x.key)).map((x) => [x.key, x.preempts!] as const));
  return { layouts: out, preempted, servedMore };
}
