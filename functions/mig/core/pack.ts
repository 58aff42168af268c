/**
 * One round of the MIG planner's packing (relay.ts runs the rounds): the pods a matching leaves
 * waiting are served in a given order onto free instances, GPUs this plan already relays, or GPUs
 * newly relaid for them (idle ones; with preemption on, then GPUs whose running pods the policy lets
 * go), displacing or moving pending pods where that makes room. Returns the layouts of the GPUs it
 * relays and the pods each preempts. Pure. The round's state is a board (pack-board.ts); the ways to
 * serve one pod on one node are its options (pack-option.ts).
 */
import { kept, podKey, sameLayout, type Assignment, type Layouts } from './match.ts';
import type { MigHolder, MigNode, PendingMigPod } from './planner.ts';
import { holds, layoutFor, minus } from './layout-index.ts';
import { Board, type RoundPreemption, type Slot } from './pack-board.ts';
import { cheaper, cost, option, type Option } from './pack-option.ts';

/** Nodes with a way to relay for a pod looked at beyond the first one found (big fleets). */
const NODES_COMPARED = 8;

/** A pending pod is displaced this many times at most in a round. */
const DISPLACED_AT_MOST = 3;

/** The order waiting pods are served in. */
export type Order = (a: PendingMigPod, b: PendingMigPod) => number;

/**
 * One round: serve what it can of the pods `state` leaves waiting; the layouts of every GPU it
 * relays. A GPU may be relaid for a pod although pending pods of its priority or lower take some
 * of its free instances (unless their priority is `shielded`): those that no longer fit wait
 * again (and have their turn again).
 */
export function construct(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]>,
  layouts: Layouts,
  state: Assignment,
  shielded: ReadonlySet<number>,
  servingOrder: Order,
  frozen: boolean,
  preemption?: RoundPreemption,
): { layouts: Map<string, string[]>; preempted: Map<string, MigHolder[]>; servedMore: boolean } {
  const board = new Board(nodes, pods, layouts, state, frozen, shielded, preemption);
  const waiting = pods.filter((p) => !state.placed.has(podKey(p))).sort(servingOrder);
  for (const p of waiting) board.want(p, 1);

  let servedMore = false;
  // A displaced pod waits again, next in serving order after the pod that displaced it (at its
  // priority or below), before lower pods take what it could use. Each pod is displaced a few
  // times at most.
  const queue = [...waiting];
  const displacedTimes = new Map<PendingMigPod, number>();
  for (let i = 0; i < queue.length; i++) {
    const pod = queue[i]!;
    const chosen = choose(board, pod, eligible.get(pod)!);
    if (!chosen) continue;
    commit(board, pod, chosen, (q) => {
      const times = (displacedTimes.get(q) ?? 0) + 1;
      displacedTimes.set(q, times);
      if (times > DISPLACED_AT_MOST) return;
      let at = i + 1;
      while (at < queue.length && servingOrder(queue[at]!, q) < 0) at++;
      queue.splice(at, 0, q);
    });
    servedMore = true;
  }
  for (const ss of board.slots) mergeRelaid(ss);

  const out = new Map<string, string[]>(frozen ? [...layouts].map(([k, l]) => [k, [...l]]) : []);
  for (const s of board.slots.flat()) {
    if (!s.req) continue;
    const to = layoutFor(s.gpu.model, s.old, s.req)!;
    if (!sameLayout(to, s.old)) out.set(s.key, to);
  }
  const preempted = new Map(
    board.slots
      .flat()
      .filter((x) => x.req && x.preempts && out.has(x.key))
      .map((x) => [x.key, x.preempts!] as const),
  );
  return { layouts: out, preempted, servedMore };
}

/**
 * Where `pod` goes: the first node of `where` it fits on without relaying another GPU, else the
 * cheapest way to relay among the first nodes that have one. Undefined (remembered for its shape
 * until a pod is displaced): nowhere.
 */
function choose(board: Board, pod: PendingMigPod, where: readonly number[]): Option | undefined {
  const asks = Object.entries(pod.requests).filter(([, n]) => n > 0);
  const shape = JSON.stringify(asks);
  const failedHere = board.failedFor(where);
  if (failedHere.has(shape)) return undefined;
  for (const at of where) {
    const o = board.mayFitNow(at, asks) ? option(board, at, pod, asks, false) : undefined;
    if (o) return o;
  }
  let chosen: Option | undefined;
  let seen = 0;
  let best: number[] = [];
  for (const at of where) {
    if (!board.mayFitRelaid(at, asks, pod.priority)) continue;
    const o = option(board, at, pod, asks, true);
    if (!o) continue;
    const c = cost(o);
    if (!chosen || cheaper(c, best)) [chosen, best] = [o, c];
    if (++seen > NODES_COMPARED) break;
  }
  if (!chosen) failedHere.add(shape);
  return chosen;
}

/** `pod` takes what `chosen` gives it; each pod it displaces waits again (`requeue`). */
function commit(board: Board, pod: PendingMigPod, chosen: Option, requeue: (q: PendingMigPod) => void): void {
  for (const [s, p] of chosen.fromFree) {
    board.useFree(s, p);
    board.take(pod, s, p);
  }
  const relaid = new Set(chosen.relays.map((r) => r.s));
  for (const r of chosen.relays) {
    board.relay(r.s, r.req, r.preempts);
    for (const p of r.takes) board.take(pod, r.s, p);
  }
  for (const r of chosen.relays) for (const [q, p, t] of r.moves) board.move(q, p, r.s, t);
  for (const r of chosen.relays) {
    for (const q of r.displaced) {
      if (!board.holds(q)) continue;
      board.release(q, relaid);
      board.want(q, 1);
      requeue(q);
    }
  }
  for (const [s, p] of chosen.fromRelaid) {
    board.addTo(s, p);
    board.take(pod, s, p);
  }
  board.want(pod, -1);
}

/**
 * Two GPUs of a node relaid where one could hold what the other's pods take beyond its old
 * layout: relay only that one (keeping more of its old layout when both could); the other keeps
 * its layout, the pods that took instances it still has staying there.
 */
function mergeRelaid(ss: readonly Slot[]): void {
  const onto = (into: Slot, from: Slot) => {
    const both = [
      ...into.req!,
      ...minus(
        from.req!,
        from.gpu.instances.filter((i) => !i.inUse).map((i) => i.profile),
      ),
    ];
    return holds(into.gpu.model, both)
      ? { into, from, both, keep: kept(into.old, layoutFor(into.gpu.model, into.old, both)!) }
      : undefined;
  };
  for (let merged = true; merged;) {
    merged = false;
    const relaid = ss.filter((x) => x.req);
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
