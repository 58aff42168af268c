/**
 * The sharing arithmetic of the quota planner (pure): weighted max-min water-filling, the weights
 * that make it dominant-resource fair across resources, and deterministic integer rounding.
 */

/** Weighted max-min: x_t = min(cap_t, L·w_t) with Σx = min(total, Σcap); real-valued. */
export function waterFill(caps: readonly number[], weights: readonly number[], total: number): number[] {
  const out = caps.map(() => 0);
  let left = Math.max(0, total);
  let open = caps.map((c, i) => i).filter((i) => caps[i]! > 0 && weights[i]! > 0);
  while (open.length > 0 && left > 1e-9) {
    const w = open.reduce((s, i) => s + weights[i]!, 0);
    const level = left / w;
    const full = open.filter((i) => caps[i]! - out[i]! <= level * weights[i]! + 1e-9);
    if (full.length === 0) {
      for (const i of open) out[i]! += level * weights[i]!;
      break;
    }
    for (const i of full) {
      left -= caps[i]! - out[i]!;
      out[i] = caps[i]!;
    }
    open = open.filter((i) => !full.includes(i));
  }
  return out;
}

/** Integers summing to floor(Σ real), each ≥ floor and ≤ its cap: largest remainders, ties by name. */
export function integers(real: readonly number[], caps: readonly number[], names: readonly string[]): number[] {
  const out = real.map((x) => Math.floor(x + 1e-9));
  let extra = Math.floor(real.reduce((s, x) => s + x, 0) + 1e-9) - out.reduce((s, x) => s + x, 0);
  const order = real
    .map((x, i) => i)
    .sort(
      (a, b) =>
        real[b]! - Math.floor(real[b]! + 1e-9) - (real[a]! - Math.floor(real[a]! + 1e-9)) ||
        (names[a]! < names[b]! ? -1 : 1),
    );
  for (const i of order) {
    if (extra <= 0) break;
    if (out[i]! < caps[i]!) {
      out[i]!++;
      extra--;
    }
  }
  return out;
}

/**
 * Dominant-resource weights. Team t's demand vector d_t (one entry per resource) against the
 * resources' shared totals S: its dominant share δ_t = max_r d_t,r / S_r. Progressive filling
 * along the demand vectors (every team's weighted dominant share rising at the same pace, a team
 * stopping on a resource when it has all it wants of it or the resource runs out) gives team t,
 * on resource r, min(cap, L_r · w_t · (d_t,r / S_r) / δ_t): a water-fill per resource whose
 * weight is w_t scaled by how much of its dominant demand this resource is. A team wanting one
 * resource only (or every resource in the same proportion) keeps its weight w_t exactly, so a
 * single-resource fleet is shared out as before DRF. Resources with nothing shared (S = 0) have no
 * share to measure and count for nothing.
 * Returns weights[r][t].
 */
export function drfWeights(
  demand: readonly (readonly number[])[],
  shared: readonly number[],
  weights: readonly number[],
): number[][] {
  const teams = weights.length;
  const dominant = Array.from({ length: teams }, (_, t) =>
    demand.reduce((m, d, r) => (shared[r]! > 0 ? Math.max(m, d[t]! / shared[r]!) : m), 0),
  );
  return demand.map((d, r) =>
    d.map((x, t) => (shared[r]! > 0 && dominant[t]! > 0 ? (weights[t]! * (x / shared[r]!)) / dominant[t]! : 0)),
  );
}

/**
 * Weighted max-min with a floor per team: x_t = clamp(L·w_t, lo_t, cap_t) with Σx = total, for
 * Σlo ≤ total (each team gets the larger of its floor and its weighted share of what the floors
 * leave). When Σcap < total every team gets its cap. Real-valued; L found by bisection, then solved
 * exactly over the teams strictly between their bounds.
 */
export function waterFillFloors(
  lo: readonly number[],
  caps: readonly number[],
  weights: readonly number[],
  total: number,
): number[] {
  const clamp = (L: number) => lo.map((l, i) => Math.min(caps[i]!, Math.max(l, L * weights[i]!)));
  const sumAt = (L: number) => clamp(L).reduce((s, x) => s + x, 0);
  if (sumAt(0) >= total - 1e-9) return lo.map((l, i) => Math.min(l, caps[i]!));
  const top = Math.max(0, ...caps.filter(Number.isFinite));
  const wMin = Math.min(...weights.filter((w) => w > 0));
  let hi = Math.max(1, (total + top) / wMin);
  if (sumAt(hi) <= total + 1e-9) return clamp(hi);
  let low = 0;
  for (let k = 0; k < 200 && hi - low > 1e-12 * hi; k++) {
    const mid = (low + hi) / 2;
    if (sumAt(mid) < total) low = mid;
    else hi = mid;
  }
  const L = (low + hi) / 2;
  const inner = lo.map((_, i) => i).filter((i) => L * weights[i]! > lo[i]! && L * weights[i]! < caps[i]!);
  const out = clamp(L);
  if (inner.length === 0) return out;
  const fixed = out.reduce((s, x, i) => (inner.includes(i) ? s : s + x), 0);
  const exact = (total - fixed) / inner.reduce((s, i) => s + weights[i]!, 0);
  for (const i of inner) out[i] = exact * weights[i]!;
  return out;
}
