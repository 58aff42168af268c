/**
 * The MIG planner (planner.ts): which GPUs to relay, and to what, so that more pending pods find
 * their instances. Pure and deterministic.
 *
 * Each round (pack.ts) serves the pods the matching leaves waiting, in a serving order: where free
 * instances fit, else onto a GPU this plan already relays (a relaid GPU is "any valid layout holding
 * what its pods take" while planning, so pods share changed GPUs before another is changed), else
 * relaying the fewest GPUs of one node (several together when one pod needs them): idle ones, and
 * with preemption on then GPUs whose running pods the policy lets go. Pending pods may be moved to
 * a spare instance of their node, or displaced (they wait again and go next).
 *
 * Then each relaid GPU takes the valid layout that holds its pods' instances and keeps the most of
 * its old layout (then zero waste), and the pods are matched again the way the scheduler is
 * modelled (match.ts): that, not the packing, is what counts. A relaid GPU nothing lands on is put
 * back, and so is a preempted one whose pods do not outweigh its holders. A round is kept only if
 * it serves more and no priority fewer than the fleet as it is (with preemption on: unless the pods
 * served no longer would be preempted on the same terms); else it is planned again with the pods
 * of the priorities that would lose not displaced. Rounds repeat from the matched state, earlier
 * relays kept as they are, until one serves nobody more: so a plan's applied state replans to
 * nothing. Largest pods first within a priority; when that leaves a pod waiting, smallest first
 * too, and the plan that serves more (then preempts fewer, then changes fewer GPUs) is kept. Pods
 * still waiting then: a bounded search changes one or two idle GPUs' layouts where that serves
 * more (improve.ts), and the rounds go on from there.
 *
 * The cost is a few matchings of the fleet plus, per pod not served as things are, a walk over the
 * nodes it may use with cheap necessary checks first and layout lookups memoised per GPU model:
 * 1,000 nodes × 8 GPUs with 6,000 pending pods in about a second (`bench mig`).
 */
import { assign, atLeast, better, gpuKey, podKey, podOrder, type Assignment } from './match.ts';
import { improve } from './improve.ts';
import { construct, type Order } from './pack.ts';
import type { MigGpu, MigHolder, MigNode, PendingMigPod } from './planner.ts';
import { protectedBy, type PreemptionPolicy } from './policy.ts';
import { preemptionJustified } from './preemption.ts';

/** Rounds of relay-then-match: each must serve more, so few are ever used. */
const MAX_ROUNDS = 8;
/** GPUs + pods matched, summed over the matchings spent on changing fewer GPUs (fewerChanges). */
const DROP_BUDGET = 20_000;

/** `3g.40gb` → [3, 40]: compute slices, then memory, of a profile by its name. */
const sizeOf = (profile: string): [number, number] => {
  const m = /^(\d+)g\.(\d+)gb/.exec(profile);
  return m ? [Number(m[1]), Number(m[2])] : [0, 0];
};
const demands = new WeakMap<PendingMigPod, [number, number]>();
const demand = (pod: PendingMigPod): [number, number] => {
  let d = demands.get(pod);
  if (!d)
    demands.set(
      pod,
      (d = Object.entries(pod.requests).reduce<[number, number]>(
        ([c, m], [p, n]) => [c + n * sizeOf(p)[0], m + n * sizeOf(p)[1]],
        [0, 0],
      )),
    );
  return d;
};

/**
 * The orders tried (the plan that serves the most, then changes the fewest GPUs, is kept; the
 * second only when the first leaves a pod waiting): by priority, then the pods that may use fewer
 * nodes, then the largest first (a big pod may need GPUs small ones would scatter over) or the
 * smallest first (more pods fit in what is left).
 */
function orders(eligible: ReadonlyMap<PendingMigPod, readonly number[]>): Order[] {
  const nodes = (a: PendingMigPod, b: PendingMigPod) => eligible.get(a)!.length - eligible.get(b)!.length;
  const size = (a: PendingMigPod, b: PendingMigPod) => {
    const [ca, ma] = demand(a);
    const [cb, mb] = demand(b);
    return ca - cb || ma - mb;
  };
  return [
    (a, b) => b.priority - a.priority || nodes(a, b) || size(b, a) || podOrder(a, b),
    (a, b) => b.priority - a.priority || nodes(a, b) || size(a, b) || podOrder(a, b),
  ];
}

/**
 * The relayouts of idle GPUs (GPU key → new layout) and the matching they give. `before` is the
 * matching of the fleet as it is.
 */
type Planned = { layouts: Map<string, string[]>; result: Assignment; preempted: Map<string, MigHolder[]> };

/**
 * The relayouts (GPU key → new layout), the matching they give, and the GPUs relaid over running
 * pods (with `preemption` on: GPU key → the pods preempted). `before` is the matching of the fleet
 * as it is.
 */
export function relayIdle(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  priorities: readonly number[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]>,
  before: Assignment,
  preemption?: PreemptionPolicy,
): Planned {
  let best: Planned | undefined;
  if (before.placed.size === pods.length) return { layouts: new Map(), result: before, preempted: new Map() };
  const preemptedPods = (p: Planned) => [...p.preempted.values()].reduce((t, hs) => t + hs.length, 0);
  let bestOrder: Order | undefined;
  for (const order of orders(eligible)) {
    // Every pod served: the other order could only change fewer GPUs; not worth another plan.
    if (best && best.result.placed.size === pods.length) break;
    const plan = rounds(nodes, pods, priorities, eligible, before, order, preemption);
    const vs = best
      ? better(plan.result.score, best.result.score) ||
        preemptedPods(best) - preemptedPods(plan) ||
        best.layouts.size - plan.layouts.size
      : 1;
    if (vs > 0) [best, bestOrder] = [plan, order];
  }
  // GPUs a later relay made unnecessary are left as they are; the rounds then go on from there
  // (a GPU left idle may serve another pod), so the applied state still replans to nothing.
  const trim = (plan: Planned) => {
    for (let i = 0; i < MAX_ROUNDS; i++) {
      const trimmed = fewerChanges(nodes, pods, priorities, eligible, plan);
      if (trimmed === plan) break;
      plan = rounds(nodes, pods, priorities, eligible, before, bestOrder!, preemption, trimmed);
    }
    return plan;
  };
  best = trim(best!);
  // Pods still waiting: a bounded search over idle GPUs' layouts (improve.ts) for what the greedy
  // rounds miss; kept only when it serves more, then trimmed and continued the same way.
  const relayable = (g: MigGpu) => !g.locked && g.instances.every((i) => !i.inUse) && !best!.preempted.has(gpuKey(g));
  const searched = improve(nodes, pods, priorities, eligible, before, best, relayable);
  if (searched !== best) {
    const preempted = new Map([...best.preempted].filter(([k]) => searched.layouts.has(k)));
    best = trim(rounds(nodes, pods, priorities, eligible, before, bestOrder!, preemption, { ...searched, preempted }));
  }
  return best;
}

/**
 * Each relaid GPU the plan could do without (the pods matched as well, at every priority, with it
 * as it is) is left as it is, fewest pods landed on it first, while the matchings this costs stay
 * within a budget (a matching of 1,000 nodes takes ~25 ms). Rounds relay greedily; this undoes a
 * relay a later one made unnecessary.
 */
function fewerChanges(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  priorities: readonly number[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]>,
  plan: Planned,
): Planned {
  if (plan.layouts.size < 2) return plan;
  const gpus = nodes.reduce((t, n) => t + n.gpus.length, 0);
  let tries = Math.floor(DROP_BUDGET / (gpus + pods.length));
  const landed = new Map<string, number>();
  for (const t of plan.result.taken.values()) for (const [k] of t) landed.set(k, (landed.get(k) ?? 0) + 1);
  const candidates = [...plan.layouts.keys()].sort(
    (a, b) => (landed.get(a) ?? 0) - (landed.get(b) ?? 0) || a.localeCompare(b),
  );
  let { layouts, result } = plan;
  for (const k of candidates) {
    if (tries-- <= 0) break;
    const trimmed = new Map(layouts);
    trimmed.delete(k);
    const again = assign(nodes, pods, trimmed, priorities, eligible);
    if (atLeast(again.score, result.score)) [layouts, result] = [trimmed, again];
  }
  if (layouts === plan.layouts) return plan;
  return { layouts, result, preempted: new Map([...plan.preempted].filter(([k]) => layouts.has(k))) };
}

function rounds(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  priorities: readonly number[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]>,
  before: Assignment,
  order: Order,
  preemption?: PreemptionPolicy,
  start?: Planned,
): Planned {
  let planned: Planned = start ?? { layouts: new Map(), result: before, preempted: new Map() };
  const podByKey = new Map(pods.map((p) => [podKey(p), p]));
  const servedOn = (r: Assignment, key: string) =>
    [...r.placed].filter(([, ks]) => ks.includes(key)).map(([k]) => podByKey.get(k)!);
  const round = (shielded: ReadonlySet<number>): Planned | undefined => {
    const { layouts, result } = planned;
    if (result.placed.size === pods.length) return undefined;
    const built = construct(
      nodes,
      pods,
      eligible,
      layouts,
      result,
      shielded,
      order,
      layouts.size > 0,
      preemption ? { policy: preemption, done: planned.preempted.size } : undefined,
    );
    if (!built.servedMore) return undefined;
    const preempted = new Map([...planned.preempted, ...built.preempted]);
    let nextLayouts = built.layouts;
    let next = assign(nodes, pods, nextLayouts, priorities, eligible);
    // A relaid GPU nothing lands on once matched is put back as it was (and again, as the pods
    // then land a little differently), unless that serves fewer; so is a GPU relaid over running
    // pods that the pods landing there do not justify (preemption.ts).
    for (;;) {
      const landed = new Set([...next.taken.values()].flatMap((t) => t.map(([k]) => k)));
      const unjustified = (k: string) =>
        preempted.has(k) && !preemptionJustified(preempted.get(k)!, servedOn(next, k), preemption!);
      const trimmed = new Map([...nextLayouts].filter(([k]) => landed.has(k) && !unjustified(k)));
      if (trimmed.size === nextLayouts.size) break;
      const again = assign(nodes, pods, trimmed, priorities, eligible);
      if (!atLeast(again.score, next.score) && ![...nextLayouts.keys()].some(unjustified)) break;
      [nextLayouts, next] = [trimmed, again];
    }
    for (const k of [...preempted.keys()]) if (!nextLayouts.has(k)) preempted.delete(k);
    return { layouts: nextLayouts, result: next, preempted };
  };
  // Kept only when it serves more, and no fewer at any priority than the fleet as it is, unless
  // (preemption on) the pending pods served no longer are unprotected and far enough below those
  // served instead, as running ones would be.
  const fair = (next: Assignment) => {
    if (atLeast(next.score, before.score)) return true;
    if (!preemption) return false;
    const lost = [...before.placed.keys()].filter((k) => !next.placed.has(k)).map((k) => podByKey.get(k)!);
    const gained = [...next.placed.keys()].filter((k) => !before.placed.has(k)).map((k) => podByKey.get(k)!);
    return preemptionJustified(lost, gained, preemption) && lost.every((p) => !protectedBy(p, preemption.protect));
  };
  for (let i = 0; i < MAX_ROUNDS; i++) {
    // Else again with the pods of the priorities served fewer (or, failing that, all) not displaced.
    const shielded = new Set<number>();
    let next: Planned | undefined;
    for (;;) {
      next = round(shielded);
      if (!next || (better(next.result.score, planned.result.score) > 0 && fair(next.result))) break;
      const fewer = priorities.filter((p, k) => next!.result.score[k]! < before.score[k]! && !shielded.has(p));
      const more = (fewer.length > 0 ? fewer : priorities).filter((p) => !shielded.has(p));
      if (more.length === 0) {
        next = undefined;
        break;
      }
      for (const p of more) shielded.add(p);
    }
    if (!next) break;
    planned = next;
  }
  return planned;
}
