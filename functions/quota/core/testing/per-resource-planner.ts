/**
 * TEST ORACLE, not used by the function: the planner as it was before dominant-resource fairness
 * (commit bfe3a84..731096b), every resource shared out on its own. planner.test.ts checks that a
 * fleet where every team uses one resource only gets exactly this plan from the DRF planner.
 * Do not "fix" or refactor it: its worth is that it is the old code.
 */
import { resourcesOf, type QuotaConfig } from '../config.ts';
import type { QuotaFacts, QuotaPlan, NamespaceQuota, QuotaChange } from '../planner.ts';

/** The plan's team shares had no base then. */
type TeamShare = {
  team: string;
  weight: number;
  resources: Record<string, { usage: number; guarantee: number; want: number; hard: number }>;
};
export type OldPlan = Omit<QuotaPlan, 'teams'> & { teams: TeamShare[] };
import { quotaKey } from '../planner.ts';

/** Weighted max-min: x_t = min(cap_t, L·w_t) with Σx = min(total, Σcap); real-valued. */
function waterFill(caps: readonly number[], weights: readonly number[], total: number): number[] {
  const out = caps.map(() => 0);
  let left = Math.max(0, total);
  let open = caps.map((c, i) => i).filter((i) => caps[i]! > 0);
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
function integers(real: readonly number[], caps: readonly number[], names: readonly string[]): number[] {
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

export function planQuotasPerResource(config: QuotaConfig, facts: QuotaFacts): OldPlan {
  const teams = [...config.teams].sort((a, b) => (a.name < b.name ? -1 : 1));
  const names = teams.map((t) => t.name);
  const weights = teams.map((t) => t.weight);
  const warnings: string[] = [];
  const pool: QuotaPlan['pool'] = {};
  const hardOf: number[][] = teams.map(() => []);
  const shares: TeamShare[] = teams.map((t) => ({ team: t.name, weight: t.weight, resources: {} }));
  const resources = resourcesOf(config);
  const sum = (nss: readonly string[], m: QuotaFacts['usage'], r: string) =>
    nss.reduce((s, ns) => s + (m[ns]?.[r] ?? 0), 0);

  resources.forEach((r, ri) => {
    const capacity = facts.capacity[r] ?? 0;
    const shared = Math.max(0, Math.floor(capacity * config.overcommit + 1e-9) - (config.buffer[r] ?? 0));
    pool[r] = { capacity, shared };
    const usage = teams.map((t) => sum(t.namespaces, facts.usage, r));
    const current = teams.map((t) =>
      t.namespaces.some((ns) => facts.current[ns]?.[r] !== undefined) ? sum(t.namespaces, facts.current, r) : undefined,
    );
    const max = teams.map((t) => t.max[r] ?? Infinity);
    const guarantee = teams.map((t) => t.guarantee[r] ?? 0);
    let base = teams.map((_, i) => Math.max(usage[i]!, Math.min(guarantee[i]!, max[i]!)));
    // 2. Capacity loss: bring bases down towards usage, weighted max-min from above.
    const totalBase = base.reduce((s, x) => s + x, 0);
    if (totalBase > shared) {
      const floorSum = usage.reduce((s, x) => s + x, 0);
      if (floorSum > shared) {
        warnings.push(
          `${r}: the teams already use ${floorSum}, more than the ${shared} shared out (capacity ${capacity}): no quota goes below usage, so the total is ${floorSum}`,
        );
        base = [...usage];
      } else {
        const above = waterFill(
          base.map((b, i) => b - usage[i]!),
          weights,
          shared - floorSum,
        );
        base = integers(
          above.map((a, i) => usage[i]! + a),
          base,
          names,
        );
        teams.forEach((t, i) => {
          if (base[i]! < Math.min(guarantee[i]!, max[i]!))
            warnings.push(
              `${r}: ${t.name} gets ${base[i]} of its guarantee ${guarantee[i]}: capacity (${capacity}, ${shared} shared out) cannot back every guarantee`,
            );
        });
      }
    }
    // 3. Lending what is left.
    const want = teams.map((t, i) => {
      const bound = current[i] !== undefined && usage[i]! >= current[i]! && usage[i]! > 0;
      const burst = bound ? Math.max(1, Math.ceil(current[i]! * 0.25)) : 0;
      return Math.min(max[i]!, usage[i]! + burst);
    });
    const left = shared - base.reduce((s, x) => s + x, 0);
    const extra = waterFill(
      want.map((w, i) => Math.max(0, w - base[i]!)),
      weights,
      left,
    );
    const hard = integers(
      extra.map((x, i) => base[i]! + x),
      want.map((w, i) => Math.max(w, base[i]!)),
      names,
    );
    teams.forEach((_, i) => {
      hardOf[i]![ri] = hard[i]!;
      shares[i]!.resources[r] = { usage: usage[i]!, guarantee: guarantee[i]!, want: want[i]!, hard: hard[i]! };
    });
  });

  // 4. Namespaces.
  const namespaces: NamespaceQuota[] = [];
  teams.forEach((t, ti) => {
    const nss = [...t.namespaces].sort();
    const perNs: Record<string, Record<string, number>> = Object.fromEntries(nss.map((ns) => [ns, {}]));
    resources.forEach((r, ri) => {
      const total = hardOf[ti]![ri]!;
      const used = nss.map((ns) => facts.usage[ns]?.[r] ?? 0);
      const rest = Math.max(0, total - used.reduce((s, x) => s + x, 0));
      const usedSum = used.reduce((s, x) => s + x, 0);
      const split = integers(
        used.map((u) => u + (usedSum > 0 ? (rest * u) / usedSum : rest / nss.length)),
        used.map(() => Infinity),
        nss,
      );
      nss.forEach((ns, k) => (perNs[ns]![quotaKey(r)] = split[k]!));
    });
    for (const ns of nss) {
      const hard = perNs[ns]!;
      const changes: QuotaChange[] = resources
        .map((r) => ({ key: quotaKey(r), from: facts.current[ns]?.[r] ?? null, to: hard[quotaKey(r)]! }))
        .filter((c) => c.from !== c.to);
      const s = shares[ti]!;
      const words = resources.map((r) => {
        const x = s.resources[r]!;
        return `${r}: team ${t.name} (weight ${t.weight}) uses ${x.usage}, guaranteed ${x.guarantee}, wants ${x.want} → ${x.hard} of ${pool[r]!.shared} shared out`;
      });
      namespaces.push({ namespace: ns, team: t.name, hard, changes, reason: words.join('; ') });
    }
  });
  return { pool, teams: shares, namespaces, warnings };
}
