/**
 * The ways one packing round (pack.ts) may give a waiting pod its instances on one node: free
 * instances of GPUs keeping their layouts, more of GPUs this plan already relays, else relaying
 * GPUs of the node (idle ones; with preemption on, GPUs whose running pods the policy lets go),
 * moving or displacing the pending pods that took their free instances. Pure: it reads the board
 * and changes nothing.
 */
import { kept, podOrder, tally } from './match.ts';
import type { MigHolder, PendingMigPod } from './planner.ts';
import { fresh, holds, layoutFor, minus } from './layout-index.ts';
import type { Asks, Board, Move, Slot } from './pack-board.ts';

/** A GPU newly relaid for a pod: what it then holds, and the pods it displaces. */
export interface Relay {
  s: Slot;
  /** The instances pods take of it: those of the pods that stay, and this pod's. */
  req: string[];
  /** This pod's part of `req`. */
  takes: string[];
  displaced: PendingMigPod[];
  /** Running pods it preempts (its holders), or none: an idle GPU. */
  preempts: MigHolder[];
  /** Pending pods moved off it to a free instance of another GPU of the node. */
  moves: Move[];
  scarce: number;
  destroyed: number;
  keep: number;
}

/** One way to give a pod its instances on one node. */
export interface Option {
  node: number;
  /** [slot, profile] from free instances of GPUs that keep their layouts. */
  fromFree: [Slot, string][];
  /** [slot, profile] added to GPUs this plan already relays. */
  fromRelaid: [Slot, string][];
  relays: Relay[];
}

/**
 * Lower is better: fewest running pods preempted (then the lowest priorities), fewest pods displaced, fewest new
 * relays, fewest instances destroyed that
 * waiting pods ask for, most of the old layouts kept, fewest destroyed.
 */
export function cost(o: Option): number[] {
  const sum = (f: (r: Relay) => number) => o.relays.reduce((t, r) => t + f(r), 0);
  return [
    sum((r) => r.preempts.length),
    sum((r) => r.preempts.reduce((t, h) => t + h.priority, 0)),
    sum((r) => r.displaced.length),
    o.relays.length,
    sum((r) => r.scarce),
    -sum((r) => r.keep),
    sum((r) => r.destroyed),
  ];
}

export function cheaper(a: readonly number[], b: readonly number[]): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

/**
 * How `pod` gets `asks` on node `at`: from free and already relaid instances alone, or (with
 * `relay`) relaying GPUs of the node one at a time, the cheapest for what is left each time
 * (taking free instances of a GPU and then relaying it: its layout keeps them). Undefined: no way.
 */
export function option(board: Board, at: number, pod: PendingMigPod, asks: Asks, relay: boolean): Option | undefined {
  const slots = board.slots[at]!;
  const o: Option = { node: at, fromFree: [], fromRelaid: [], relays: [] };
  const left: string[] = [];
  for (const [profile, n] of asks) {
    let need = n;
    for (const s of slots) {
      if (s.req || need === 0) continue;
      const k = Math.min(need, s.free.get(profile) ?? 0);
      for (let i = 0; i < k; i++) o.fromFree.push([s, profile]);
      need -= k;
    }
    for (let i = 0; i < need; i++) left.push(profile);
  }
  const grown = new Map<Slot, string[]>();
  let rest = left.filter(
    (profile) =>
      !slots.some((s) => {
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
  const rank = (x: Relay) => [
    x.preempts.length,
    x.preempts.reduce((t, h) => t + h.priority, 0),
    -x.takes.length,
    x.displaced.length,
    x.scarce,
    -x.keep,
    x.destroyed,
  ];
  for (;;) {
    let pick: Relay | undefined;
    for (const s of slots) {
      if (
        o.relays.some((r) => r.s === s) ||
        !(s.relayable || board.mayPreempt(s, pod.priority, o.relays.filter((r) => r.preempts.length > 0).length))
      )
        continue;
      const r = relayOf(
        board,
        s,
        pod,
        o.fromFree.filter(([t]) => t === s).map(([, p]) => p),
        rest,
        o,
      );
      if (r && (!pick || cheaper(rank(r), rank(pick)))) pick = r;
    }
    if (!pick) return undefined;
    o.relays.push(pick);
    rest = minus(rest, pick.takes);
    if (rest.length === 0) return o;
  }
}

/** Relaying `s` for `pod`'s `rest` (besides `own`, what the option already takes of it). */
function relayOf(
  board: Board,
  s: Slot,
  pod: PendingMigPod,
  own: string[],
  rest: readonly string[],
  o: Option,
): Relay | undefined {
  if (own.length === 0 && s.takers.size === 0) {
    const f = fresh(s.gpu.model, s.old, rest, s.oldKey);
    if (!f) return undefined;
    return {
      s,
      req: [...f.takes],
      takes: f.takes,
      displaced: [],
      preempts: s.holders ?? [],
      moves: [],
      scarce: scarceOf(board, f.lost),
      destroyed: f.destroyed,
      keep: f.keep,
    };
  }
  // Pods keep what they take of it, unless moving them to spare instances of the node's other
  // GPUs lets it take more of this pod, or displace fewer.
  const a = packOnto(board, s, pod, own, rest, o, false);
  const b = s.takers.size > 0 ? packOnto(board, s, pod, own, rest, o, true) : undefined;
  const best =
    b &&
    (b.takes.length > a.takes.length || (b.takes.length === a.takes.length && b.displaced.length < a.displaced.length))
      ? b
      : a;
  if (best.takes.length === 0) return undefined;
  const { takes, req, displaced, moves } = best;
  const to = layoutFor(s.gpu.model, s.old, req)!;
  let destroyed = 0;
  const lost = tally(minus(s.old, to));
  for (const n of lost.values()) destroyed += n;
  return {
    s,
    req,
    takes,
    displaced,
    preempts: s.holders ?? [],
    moves,
    scarce: scarceOf(board, lost),
    destroyed,
    keep: kept(s.old, to),
  };
}

/** Instances destroyed that pods still waiting ask for. */
function scarceOf(board: Board, lost: Iterable<[string, number]>): number {
  let scarce = 0;
  for (const [p, n] of lost) if ((board.wanted.get(p) ?? 0) > 0) scarce += n;
  return scarce;
}

/**
 * What `s` holds relaid for `pod` over the pending pods taking its free instances: those of
 * higher priority (or shielded) stay, the others stay while they fit and are displaced when not;
 * with `moveTakers`, each first moves to a spare instance of another GPU of the node if there is one.
 */
function packOnto(
  board: Board,
  s: Slot,
  pod: PendingMigPod,
  own: readonly string[],
  rest: readonly string[],
  o: Option,
  moveTakers: boolean,
): { takes: string[]; req: string[]; displaced: PendingMigPod[]; moves: Move[] } {
  const moves: Move[] = [];
  const stay: string[] = [...own];
  const lower: [PendingMigPod, string[]][] = [];
  for (const [q, ps] of s.takers) {
    const left: string[] = [];
    for (const p of ps) {
      const t = moveTakers
        ? board.slots[s.node]!.find((x) => x !== s && !x.req && !x.relayable && !x.holders && spare(x, p, o, moves) > 0)
        : undefined;
      if (t) moves.push([q, p, t]);
      else left.push(p);
    }
    if (left.length === 0) continue;
    if (board.displaceable(q, pod.priority)) lower.push([q, left]);
    else stay.push(...left);
  }
  const takes: string[] = [];
  for (const profile of rest) if (holds(s.gpu.model, [...stay, ...takes, profile])) takes.push(profile);
  const req = [...stay, ...takes];
  const displaced: PendingMigPod[] = [];
  for (const [q, ps] of lower.sort(([x], [y]) => podOrder(x, y))) {
    if (holds(s.gpu.model, [...req, ...ps])) req.push(...ps);
    else displaced.push(q);
  }
  return { takes, req, displaced, moves: moves.filter(([q]) => !displaced.includes(q)) };
}

/**
 * Free instances of `p` on `t` (a GPU of the node that keeps its layout and is not relaid for
 * anyone) left after what the option already takes there, and the moves already planned to it.
 */
function spare(t: Slot, p: string, o: Option, moves: readonly Move[]): number {
  let n = t.free.get(p) ?? 0;
  for (const [x, q] of o.fromFree) if (x === t && q === p) n--;
  for (const [, q, x] of [...o.relays.flatMap((r) => r.moves), ...moves]) if (x === t && q === p) n--;
  return n;
}
