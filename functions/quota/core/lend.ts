/**
 * The quota planner's steps after capacity loss (pure, one resource at a time; planner.ts wires
 * them): what each team is entitled to, what it lends or borrows, and how fast a quota may fall.
 *
 * Never stranded (docs/quota.md): before this, a team without a guarantee was cut to its usage, so
 * two idle teams on an empty 16-GPU pool went 8 → 0 and their next pods were refused until a
 * rewrite. Now:
 * - Entitlement: each team gets the larger of its guarantee and its usage plus its weighted share
 *   of what is free (shared out less what all teams use), up to its max.
 * - Lending: a team that wants more than its entitlement (quota-bound) borrows, by weighted DRF
 *   along the wants, from teams that do not use theirs — but a lender keeps its guarantee and its
 *   headroom above its usage (config `headroom`), so its next pod is admitted at once, and the next
 *   rewrite raises it again as its usage grows.
 * - Rate limit: a quota falls at most `maxDecreasePerRound` per round; a rise up to the team's
 *   kept floor is never held back, a rise beyond it only into room the pool has.
 */
import { integers, waterFill, waterFillFloors } from './fill.ts';

export interface LineTeams {
  names: readonly string[];
  weights: readonly number[];
  usage: readonly number[];
  /** max(usage, min(guarantee, max)): what a team keeps before anything is shared. */
  base: readonly number[];
  max: readonly number[];
  want: readonly number[];
  headroom: readonly number[];
}

/** Usage plus the weighted share of what is free, never below base, up to max; integers. */
export function entitlements(t: LineTeams, shared: number): number[] {
  const used = t.usage.reduce((s, x) => s + x, 0);
  const x = waterFillFloors(
    t.base.map((b, i) => b - t.usage[i]!),
    t.max.map((m, i) => m - t.usage[i]!),
    t.weights,
    Math.max(0, shared - used),
  );
  return integers(
    x.map((v, i) => t.usage[i]! + v),
    t.max,
    t.names,
  );
}

export interface Lent {
  hard: number[];
  /** What lending never takes from each team: min(entitlement, max(base, usage + headroom)). */
  keep: number[];
}

/**
 * Quota-bound teams borrow what the others do not need above their kept floor. `lendWeights`: the
 * DRF weights of the borrowers on this resource (fill.ts drfWeights, along the wants). Lenders give
 * so that what each keeps above its floor stays weighted max-min fair.
 */
export function lend(t: LineTeams, entitled: readonly number[], lendWeights: readonly number[]): Lent {
  const keep = entitled.map((e, i) => Math.min(e, Math.max(t.base[i]!, t.usage[i]! + t.headroom[i]!)));
  const lendable = entitled.map((e, i) => Math.max(0, e - Math.max(keep[i]!, t.want[i]!)));
  const need = entitled.map((e, i) => Math.max(0, t.want[i]! - e));
  const offered = lendable.reduce((s, x) => s + x, 0);
  const give = waterFill(
    need,
    lendWeights,
    Math.min(
      offered,
      need.reduce((s, x) => s + x, 0),
    ),
  );
  const given = give.reduce((s, x) => s + x, 0);
  const kept = waterFill(lendable, t.weights, offered - given);
  const hard = integers(
    entitled.map((e, i) => e + give[i]! - lendable[i]! + kept[i]!),
    entitled.map((e, i) => Math.max(e, t.want[i]!)),
    t.names,
  );
  return { hard, keep };
}

/**
 * Decreases held to `maxDecrease` per round from the team's current quota (undefined current: a new
 * quota, written as planned). A rise up to `keep` is granted whatever the total, so a team whose
 * usage grew is never refused for want of a rewrite; a rise beyond it goes only into the room the
 * held decreases leave (weighted), so the total stays within `shared` unless the held values alone
 * exceed it. Returns the hard values and whether a decrease was held.
 */
export function limitDecreases(
  t: Pick<LineTeams, 'names' | 'weights'>,
  target: readonly number[],
  current: readonly (number | undefined)[],
  keep: readonly number[],
  shared: number,
  maxDecrease: number | undefined,
): { hard: number[]; held: boolean } {
  if (maxDecrease === undefined) return { hard: [...target], held: false };
  let held = false;
  const hard = target.map((x, i) => {
    const c = current[i];
    if (c === undefined) return x;
    if (x < c) {
      if (c - maxDecrease > x) held = true;
      return Math.max(x, c - maxDecrease);
    }
    return Math.min(x, Math.max(c, keep[i]!));
  });
  const room = shared - hard.reduce((s, x) => s + x, 0);
  const rise = target.map((x, i) => Math.max(0, x - hard[i]!));
  if (room > 0 && rise.some((r) => r > 0)) {
    const extra = waterFill(rise, t.weights, room);
    const add = integers(extra, rise, t.names);
    add.forEach((a, i) => (hard[i]! += a));
  }
  return { hard, held };
}
