/**
 * The state of one packing round (pack.ts): every GPU as a slot (free instances, or what pods take
 * of it once relaid), which pending pod takes what where, and the cheap necessary checks made
 * before a way to serve a pod is worked out (pack-option.ts), memoised per slot and node and
 * cleared when what they read changes. Pure: it changes only itself.
 */
import { gpuKey, podKey, tally, type Assignment, type Layouts } from './match.ts';
import type { MigGpu, MigHolder, MigNode, PendingMigPod } from './planner.ts';
import type { PreemptionPolicy } from './policy.ts';
import { holderKey, notPreemptible } from './preemption.ts';
import { holds, multisetKey, offers } from './layout-index.ts';

export interface Slot {
  key: string;
  node: number;
  gpu: MigGpu;
  old: string[];
  oldKey: string;
  /** Free instances no pod takes (a GPU keeping its layout). */
  free: Map<string, number>;
  /** No instance in use, not locked, not relaid yet: may be relaid (keeping what pods take of it, or not). */
  relayable: boolean;
  /**
   * Instances in use by pods the preemption policy lets go (all known, none protected): may be relaid for pods far
   * enough above them.
   */
  holders?: MigHolder[];
  /** Relaid by this plan over its holders: they are preempted. */
  preempts?: MigHolder[];
  /** Relaid by this plan: the instances pods take from it. */
  req?: string[];
  /** The pending pods taking its instances, with the profiles each takes. */
  takers: Map<PendingMigPod, string[]>;
  /** Relaid: whether one more instance of a profile still fits with `req` (cleared when it changes). */
  fitsMore: Map<string, boolean>;
  /**
   * Relayable: whether relaying it could give a pod of a priority one instance of a profile (cleared when its takers
   * change).
   */
  couldGive: Map<string, boolean>;
}

/** A pending pod moved off a relaid GPU: [pod, profile, the GPU of the node whose free instance it takes instead]. */
export type Move = [PendingMigPod, string, Slot];

/** Preemption in this round: the policy, and the GPUs earlier rounds preempted. */
export interface RoundPreemption {
  policy: PreemptionPolicy;
  done: number;
}

/** What a pod asks for: [profile, instances], each > 0. */
export type Asks = [string, number][];

export class Board {
  readonly slots: Slot[][];
  /** Per node: free instances of the GPUs keeping their layouts, summed. */
  readonly nodeFree: Map<string, number>[];
  /** What the pods still waiting ask for: destroying such an instance may cost one of them. */
  readonly wanted = new Map<string, number>();
  /** GPUs preempted so far (earlier rounds and this one): at most the policy's maxGpusPerRound. */
  preemptedNow: number;
  private readonly held = new Map<PendingMigPod, [Slot, string][]>();
  /** Per node, the profiles one more instance of fits on a GPU relaid here (undefined: work it out again). */
  private readonly addable: (Set<string> | undefined)[];
  /**
   * Shapes (what a pod asks for, where it may go) nothing could be found for: consuming instances
   * never makes room, so they stay failed until a pod is displaced.
   */
  private readonly failed = new Map<readonly number[], Set<string>>();

  /**
   * `layouts`: GPUs earlier rounds relaid; `frozen`, they keep those layouts (free instances as
   * any other GPU), else they are relaid again for what the pods of `state` take of them.
   * Pending pods of a `shielded` priority are never displaced.
   */
  constructor(
    nodes: readonly MigNode[],
    pods: readonly PendingMigPod[],
    layouts: Layouts,
    state: Assignment,
    frozen: boolean,
    private readonly shielded: ReadonlySet<number>,
    readonly preemption?: RoundPreemption,
  ) {
    this.slots = nodes.map((n, at) =>
      n.gpus.map((g) => slotOf(g, at, layouts.get(gpuKey(g)), frozen, preemption?.policy)),
    );
    this.preemptedNow = preemption?.done ?? 0;
    const byKey = new Map(this.slots.flat().map((s) => [s.key, s]));
    for (const pod of pods) {
      for (const [k, profile] of state.taken.get(podKey(pod)) ?? []) {
        const s = byKey.get(k)!;
        if (s.req) s.req.push(profile);
        else s.free.set(profile, s.free.get(profile)! - 1);
        this.take(pod, s, profile);
      }
    }
    this.nodeFree = this.slots.map((ss) => {
      const sum = new Map<string, number>();
      for (const s of ss) for (const [p, c] of s.free) sum.set(p, (sum.get(p) ?? 0) + c);
      return sum;
    });
    this.addable = this.slots.map(() => undefined);
  }

  take(pod: PendingMigPod, s: Slot, profile: string): void {
    (this.held.get(pod) ?? this.held.set(pod, []).get(pod)!).push([s, profile]);
    (s.takers.get(pod) ?? s.takers.set(pod, []).get(pod)!).push(profile);
    s.couldGive.clear();
  }

  holds(pod: PendingMigPod): boolean {
    return this.held.has(pod);
  }

  /** `pod` waits again: what it took is free again (on GPUs not in `relaid`, relaid for another pod just now). */
  release(pod: PendingMigPod, relaid: ReadonlySet<Slot>): void {
    for (const [t, p] of this.held.get(pod) ?? []) {
      t.takers.delete(pod);
      t.couldGive.clear();
      if (relaid.has(t)) continue;
      if (t.req) {
        t.req.splice(t.req.lastIndexOf(p) >>> 0, 1);
        this.relaidChanged(t);
      } else {
        t.free.set(p, t.free.get(p)! + 1);
        this.nodeFree[t.node]!.set(p, (this.nodeFree[t.node]!.get(p) ?? 0) + 1);
      }
    }
    this.held.delete(pod);
    this.failed.clear();
  }

  /** `pod`'s instance of `p` moves from the relaid `from` to the free one of `to`. */
  move(pod: PendingMigPod, p: string, from: Slot, to: Slot): void {
    this.useFree(to, p);
    const hs = this.held.get(pod)!;
    hs[hs.findIndex(([x, y]) => x === from && y === p)] = [to, p];
    (to.takers.get(pod) ?? to.takers.set(pod, []).get(pod)!).push(p);
    to.couldGive.clear();
  }

  /** One free instance of `p` of `s` (a GPU keeping its layout) is taken. */
  useFree(s: Slot, p: string): void {
    s.free.set(p, s.free.get(p)! - 1);
    const sum = this.nodeFree[s.node]!;
    sum.set(p, sum.get(p)! - 1);
  }

  /** `s` is relaid for pods taking `req` of it (over `preempts`, its holders, when any). */
  relay(s: Slot, req: string[], preempts: MigHolder[]): void {
    const sum = this.nodeFree[s.node]!;
    for (const [p, c] of s.free) sum.set(p, sum.get(p)! - c);
    s.free = new Map();
    s.relayable = false;
    if (preempts.length > 0) {
      s.preempts = preempts;
      s.holders = undefined;
      this.preemptedNow++;
    }
    s.req = req;
    this.relaidChanged(s);
  }

  /** One more instance of `p` on `s`, a GPU this plan relays. */
  addTo(s: Slot, p: string): void {
    s.req!.push(p);
    this.relaidChanged(s);
  }

  want(pod: PendingMigPod, sign: number): void {
    for (const [prof, n] of Object.entries(pod.requests))
      if (n > 0) this.wanted.set(prof, (this.wanted.get(prof) ?? 0) + sign * n);
  }

  /** The shapes that failed for pods that may use `where` (the same array for pods with the same nodes). */
  failedFor(where: readonly number[]): Set<string> {
    return this.failed.get(where) ?? this.failed.set(where, new Set()).get(where)!;
  }

  displaceable(q: PendingMigPod, priority: number): boolean {
    return q.priority <= priority && !this.shielded.has(q.priority);
  }

  /** `s` may be relaid over its holders for a pod of `priority`, the option already preempting `inOption` GPUs. */
  mayPreempt(s: Slot, priority: number, inOption: number): boolean {
    const pre = this.preemption;
    return (
      !!s.holders &&
      !!pre &&
      this.preemptedNow + inOption < pre.policy.maxGpusPerRound &&
      s.holders.every((h) => h.priority + pre.policy.minPriorityGap <= priority)
    );
  }

  /** Cheap necessary condition for serving `asks` on node `at` without relaying another GPU. */
  mayFitNow(at: number, asks: Asks): boolean {
    return asks.every(([p, n]) => (this.nodeFree[at]!.get(p) ?? 0) >= n || this.addableOn(at).has(p));
  }

  /** Cheap necessary condition for serving `asks` on node `at`, relaying GPUs if need be. */
  mayFitRelaid(at: number, asks: Asks, priority: number): boolean {
    return asks.every(
      ([p, n]) =>
        (this.nodeFree[at]!.get(p) ?? 0) >= n ||
        this.addableOn(at).has(p) ||
        this.slots[at]!.some((s) => (s.relayable || this.mayPreempt(s, priority, 0)) && this.couldGive(s, p, priority)),
    );
  }

  fitsMore(s: Slot, p: string): boolean {
    let yes = s.fitsMore.get(p);
    if (yes === undefined) s.fitsMore.set(p, (yes = holds(s.gpu.model, [...s.req!, p])));
    return yes;
  }

  private relaidChanged(s: Slot): void {
    s.fitsMore.clear();
    this.addable[s.node] = undefined;
  }

  private addableOn(at: number): Set<string> {
    let set = this.addable[at];
    if (!set) {
      set = new Set();
      for (const s of this.slots[at]!)
        if (s.req) for (const p of s.gpu.model.profiles) if (this.fitsMore(s, p.name)) set.add(p.name);
      this.addable[at] = set;
    }
    return set;
  }

  private couldGive(s: Slot, p: string, priority: number): boolean {
    const memo = `${p}|${priority}`;
    let yes = s.couldGive.get(memo);
    if (yes === undefined) {
      const stay = [...s.takers].flatMap(([q, ps]) => (this.displaceable(q, priority) ? [] : ps));
      s.couldGive.set(memo, (yes = offers(s.gpu.model, p) && holds(s.gpu.model, [...stay, p])));
    }
    return yes;
  }
}

/** A GPU as a slot: relaid by an earlier round (`relaid`), or as it is. */
function slotOf(
  g: MigGpu,
  node: number,
  relaid: readonly string[] | undefined,
  frozen: boolean,
  policy?: PreemptionPolicy,
): Slot {
  const key = gpuKey(g);
  const old = g.instances.map((i) => i.profile);
  const base = {
    key,
    node,
    gpu: g,
    old,
    oldKey: multisetKey(old),
    takers: new Map<PendingMigPod, string[]>(),
    fitsMore: new Map<string, boolean>(),
    couldGive: new Map<string, boolean>(),
  };
  if (relaid && frozen) return { ...base, free: tally(relaid), relayable: false };
  if (relaid) return { ...base, free: new Map(), relayable: false, req: [] };
  const relayable = !g.locked && g.instances.every((i) => !i.inUse);
  const holders =
    !relayable && policy && notPreemptible(g, policy) === undefined
      ? [...g.holders!].sort((a, b) => b.priority - a.priority || holderKey(a).localeCompare(holderKey(b)))
      : undefined;
  return {
    ...base,
    free: tally(g.instances.filter((i) => !i.inUse).map((i) => i.profile)),
    relayable,
    ...(holders ? { holders } : {}),
  };
}
