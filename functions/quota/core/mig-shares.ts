/**
 * MIG profile quotas from GPU-equivalent shares (pure). A MIG group (config `migGroups`) is planned
 * as one resource counted in eighths of a GPU: a profile's size is its memory slices × 8 / the
 * model's memory slices (1g.10gb on an A100-80GB: 1; 2g.20gb: 2; 3g.40gb and 4g.40gb: 4; 7g: 8).
 *
 * Why memory slices and not compute slices / 7: placements are counted in memory slices, and every
 * zero-waste layout in docs/mig.md (7g, 4g+3g, 3g+2g+2g, 3g+2g+1g+1g, four 1g.20gb) sums to exactly
 * 8/8 that way. Compute / 7 counts four 1g.20gb — a full card — as 4/7 of one, and two 3g as 6/7.
 * Memory's one under-count is the base 1g profile (seven fill a card at 7/8), the smaller error.
 *
 * The team's share of the group (hard, in eighths) then becomes per-profile hard values: each
 * keeps its usage, and what its share holds beyond that usage is split by the mix the pool still
 * has free (a profile with more free slices gets more), floored, the remainder given one instance
 * at a time (teams by name, profiles by largest remainder then name) while it fits both the team's
 * share and the profile's pool. So: never below usage, Σ_p hard_p × size_p ≤ the team's share (or
 * its usage, when that is more), Σ_teams hard_p ≤ what the profile shares out (or its usage).
 */

export interface ProfilePool {
  resource: string;
  /** Size in eighths of a GPU. */
  eighths: number;
  /** floor(allocatable × overcommit). */
  shared: number;
  /** Per team (in the planner's order): what its pods request. */
  usage: readonly number[];
}

/** Per profile, per team: the hard value. `share[t]` is team t's hard for the group, in eighths. */
export function splitProfiles(profiles: readonly ProfilePool[], share: readonly number[]): number[][] {
  const teams = share.length;
  const free = profiles.map((p) => Math.max(0, p.shared - p.usage.reduce((s, x) => s + x, 0)));
  const budget = share.map((h, t) => Math.max(0, h - profiles.reduce((s, p) => s + p.usage[t]! * p.eighths, 0)));
  const freeEighths = profiles.reduce((s, p, k) => s + free[k]! * p.eighths, 0);
  const d = Math.max(
    freeEighths,
    budget.reduce((s, x) => s + x, 0),
  );
  const real = profiles.map((_, k) => budget.map((b) => (d > 0 ? (b * free[k]!) / d : 0)));
  const extra = real.map((row) => row.map((x) => Math.floor(x + 1e-9)));
  const left = budget.map((b, t) => b - profiles.reduce((s, p, k) => s + extra[k]![t]! * p.eighths, 0));
  const room = free.map((f, k) => f - extra[k]!.reduce((s, x) => s + x, 0));
  for (let t = 0; t < teams; t++) {
    const order = profiles
      .map((_, k) => k)
      .sort(
        (a, b) =>
          real[b]![t]! - extra[b]![t]! - (real[a]![t]! - extra[a]![t]!) ||
          (profiles[a]!.resource < profiles[b]!.resource ? -1 : 1),
      );
    for (const k of order) {
      if (room[k]! >= 1 && left[t]! >= profiles[k]!.eighths) {
        extra[k]![t]!++;
        room[k]!--;
        left[t]! -= profiles[k]!.eighths;
      }
    }
  }
  return profiles.map((p, k) => p.usage.map((u, t) => u + extra[k]![t]!));
}
