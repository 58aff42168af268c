/**
 * A bounded local search after the rounds (relay.ts): when pods still wait, the layouts of idle GPUs
 * are changed one GPU at a time, then two together (of one node first), and a change is kept only when
 * the matching (match.ts, the scheduler as modelled) then serves strictly more, lexicographically by
 * priority, and no priority fewer than the fleet as it is. The rounds pack greedily, higher
 * priorities first and the fewest GPUs changed; this finds what they miss where a pod needs GPUs
 * relaid together that the rounds gave to others, or a layout they did not consider (issue #30:
 * 7 of the bench's 300 small fleets, `bench/mig-misses.test.ts`). Pure and deterministic.
 *
 * Candidate layouts of a GPU are its valid layouts told apart only by the instances pending pods
 * ask for (the rest serve nobody), each the one keeping the most of the GPU's old layout
 * (layoutFor). Each try costs one matching; the tries are bounded by a budget of GPUs + pods
 * matched (~12,000 tries for 12 GPUs and 5 pods, ~14 for 8,000 GPUs and 6,000 pods), so a big fleet
 * spends a few matchings here. Only GPUs of nodes a waiting pod may use are tried.
 */
import { layoutFor, layoutsOf, multisetKey } from './layout-index.ts';
import { assign, atLeast, better, gpuKey, podKey, sameLayout, type Assignment } from './match.ts';
import type { MigGpu, MigNode, PendingMigPod } from './planner.ts';

/** GPUs + pods matched, summed over the tries. */
const SEARCH_BUDGET = 200_000;

interface Candidate {
  g: MigGpu;
  options: string[][];
}

export interface Searched {
  layouts: Map<string, string[]>;
  result: Assignment;
}

/**
 * `plan` improved where a change of one idle GPU, or of two, serves more (or `plan` itself).
 * `relayable`: the GPUs the search may change (idle, not locked, not relaid over running pods).
 */
export function improve(
  nodes: readonly MigNode[],
  pods: readonly PendingMigPod[],
  priorities: readonly number[],
  eligible: ReadonlyMap<PendingMigPod, readonly number[]>,
  before: Assignment,
  plan: Searched,
  relayable: (g: MigGpu) => boolean,
): Searched {
  if (plan.result.placed.size === pods.length) return plan;
  const gpus = nodes.reduce((t, n) => t + n.gpus.length, 0);
  let tries = Math.floor(SEARCH_BUDGET / (gpus + pods.length));
  const asked = new Set(pods.flatMap((p) => Object.keys(p.requests)));
  // Only nodes a pod still waiting may use can serve one more.
  const waitingOn = new Set<number>();
  for (const p of pods) if (!plan.result.placed.has(podKey(p))) for (const k of eligible.get(p)!) waitingOn.add(k);
  const perNode = [...waitingOn]
    .sort((a, b) => a - b)
    .map((k) => nodes[k]!.gpus.filter(relayable).map((g) => ({ g, options: options(g, asked) })))
    .filter((gs) => gs.length > 0);
  let { layouts, result } = plan;
  const tryWith = (next: Map<string, string[]>): boolean => {
    tries--;
    const again = assign(nodes, pods, next, priorities, eligible);
    if (better(again.score, result.score) <= 0 || !atLeast(again.score, before.score)) return false;
    [layouts, result] = [next, again];
    return true;
  };
  const set = (m: Map<string, string[]>, g: MigGpu, to: string[] | undefined) => {
    if (
      to &&
      !sameLayout(
        to,
        g.instances.map((i) => i.profile),
      )
    )
      m.set(gpuKey(g), to);
    else m.delete(gpuKey(g));
  };
  for (let improved = true; improved && tries > 0 && result.placed.size < pods.length;) {
    improved = false;
    // One GPU at a time.
    for (const { g, options: os } of perNode.flat()) {
      for (const to of os) {
        if (tries <= 0) break;
        const next = new Map(layouts);
        set(next, g, to);
        if (tryWith(next)) improved = true;
      }
    }
    if (improved) continue;
    // Two GPUs together: of one node first (a pod asking for instances only two relaid GPUs can
    // give), then of two nodes (a pod served on one where another's instance moves to the other).
    const all = perNode.flat();
    const pairs: [Candidate, Candidate][] = [];
    for (const cross of [false, true])
      for (let i = 0; i < all.length; i++)
        for (let j = i + 1; j < all.length; j++)
          if ((all[i]!.g.node !== all[j]!.g.node) === cross) pairs.push([all[i]!, all[j]!]);
    for (const [x, y] of pairs) {
      for (const a of x.options) {
        if (improved || tries <= 0) break;
        for (const b of y.options) {
          if (tries <= 0) break;
          const next = new Map(layouts);
          set(next, x.g, a);
          set(next, y.g, b);
          if (tryWith(next)) {
            improved = true;
            break;
          }
        }
      }
      if (improved || tries <= 0) break;
    }
  }
  return layouts === plan.layouts ? plan : { layouts, result };
}

/** `g`'s layouts told apart by the instances pods ask for, each keeping the most of its old layout. */
function options(g: MigGpu, asked: ReadonlySet<string>): string[][] {
  const old = g.instances.map((i) => i.profile);
  const seen = new Map<string, string[]>();
  for (const l of layoutsOf(g.model)) {
    const wanted = l.filter((p) => asked.has(p));
    const key = multisetKey(wanted);
    if (key === '' || seen.has(key)) continue;
    seen.set(key, layoutFor(g.model, old, wanted)!);
  }
  return [...seen.values()];
}
