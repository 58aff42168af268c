/**
 * Quota planning (pure): each team's hard value per resource, then each namespace's, from what
 * the fleet offers and what the teams use and want. Deterministic; integers throughout.
 *
 * Per resource r, with S_r = floor(capacity × overcommit) − buffer shared out:
 * 1. Base: every team keeps max(usage, guarantee) (capped by its max, never below usage): a team
 *    can always come back up to its guarantee, and running pods are never made over-quota.
 * 2. Capacity loss: when the bases exceed S_r, they come down towards usage by weighted DRF
 *    (below) over what each team holds above its usage, the demand vector being its bases — so
 *    the teams holding most per unit of weight, measured on their dominant resource, give back
 *    first. Usage itself is never cut (the plan says when even that does not fit).
 * 3. Lending: what is left of S_r goes to teams that want more than their base, by weighted DRF
 *    up to their want and max, the demand vector being their wants. A team wants its usage, plus
 *    a burst when it is quota-bound (usage at its current hard value: its next pods would be
 *    refused). The lent share comes back as the lender's usage returns: its base rises with it.
 * 4. Namespaces of a team split its hard: each keeps its usage, the rest goes by usage, evenly
 *    when none (largest remainders, ties by name).
 *
 * Weighted DRF (steps 2 and 3; fill.ts): team t's dominant share is max_r d_t,r / S_r over its
 * demand vector d_t. Progressive filling raises every team's weighted dominant share at one pace
 * along its demand vector; a team stops on a resource when it has all it may take of it or the
 * resource runs out, and goes on rising on the others (quotas are not Leontief: a team's pods ask
 * for each resource separately, so GPU quota that ran out must not leave MIG quota unlent). That
 * is, per resource, a water-fill with weight w_t·(d_t,r / S_r)/δ_t. A team using one resource
 * only (or all in one proportion) keeps weight w_t, and gets exactly the per-resource result;
 * one that already asks for a large share of another resource gets this one more slowly.
 * Reals are rounded by largest remainders, ties by team name.
 */
import { resourcesOf, type QuotaConfig } from './config.ts';
import { drfWeights, integers, waterFill } from './fill.ts';

export interface QuotaFacts {
  /** Per resource: what Ready, schedulable nodes offer (a fenced GPU has left allocatable). */
  capacity: Readonly<Record<string, number>>;
  /** Namespace → resource → requested by its pods the quota counts (not Succeeded or Failed). */
  usage: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Namespace → resource → gpu-reflex's quota now (hard), when it has one. */
  current: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

export interface QuotaChange {
  /** The quota key: `requests.nvidia.com/gpu`. */
  key: string;
  from: number | null;
  to: number;
}

export interface NamespaceQuota {
  namespace: string;
  team: string;
  /** Quota key → hard value. */
  hard: Record<string, number>;
  changes: QuotaChange[];
  reason: string;
}

export interface TeamShare {
  team: string;
  weight: number;
  /** Resource → numbers behind the team's hard value. */
  resources: Record<string, {
    usage: number;
    guarantee: number;
    want: number;
    /** What it keeps before lending: max(usage, guarantee) less its part of a capacity loss. */
    base: number;
    hard: number;
  }>;
}

export interface QuotaPlan {
  /** Resource → shared out (T), and what the fleet offers. */
  pool: Record<string, { capacity: number; shared: number }>;
  teams: TeamShare[];
  namespaces: NamespaceQuota[];
  /** Things a person should know: usage that does not fit, a guarantee capacity cannot back. */
  warnings: string[];
}

export const quotaKey = (resource: string) => `requests.${resource}`;

export function planQuotas(config: QuotaConfig, facts: QuotaFacts): QuotaPlan {
  const teams = [...config.teams].sort((a, b) => (a.name < b.name ? -1 : 1));
  const names = teams.map((t) => t.name);
  const weights = teams.map((t) => t.weight);
  const warnings: string[] = [];
  const pool: QuotaPlan['pool'] = {};
  const hardOf: number[][] = teams.map(() => []);
  const shares: TeamShare[] = teams.map((t) => ({ team: t.name, weight: t.weight, resources: {} }));
  const resources = resourcesOf(config);
  const sum = (nss: readonly string[], m: QuotaFacts['usage'], r: string) => nss.reduce((s, ns) => s + (m[ns]?.[r] ?? 0), 0);

  // 1. Per resource: the pool, and each team's usage, guarantee, max, want and base.
  const lines = resources.map((r) => {
    const capacity = facts.capacity[r] ?? 0;
    const shared = Math.max(0, Math.floor(capacity * config.overcommit + 1e-9) - (config.buffer[r] ?? 0));
    pool[r] = { capacity, shared };
    const usage = teams.map((t) => sum(t.namespaces, facts.usage, r));
    const current = teams.map((t) => (t.namespaces.some((ns) => facts.current[ns]?.[r] !== undefined) ? sum(t.namespaces, facts.current, r) : undefined));
    const max = teams.map((t) => t.max[r] ?? Infinity);
    const guarantee = teams.map((t) => t.guarantee[r] ?? 0);
    const base = teams.map((_, i) => Math.max(usage[i]!, Math.min(guarantee[i]!, max[i]!)));
    const want = teams.map((t, i) => {
      const bound = current[i] !== undefined && usage[i]! >= current[i]! && usage[i]! > 0;
      const burst = bound ? Math.max(1, Math.ceil(current[i]! * 0.25)) : 0;
      return Math.min(max[i]!, usage[i]! + burst);
    });
    return { r, capacity, shared, usage, max, guarantee, base, want };
  });
  const sharedAll = lines.map((l) => l.shared);

  // 2. Capacity loss: bases come down towards usage, weighted DRF over what each holds above it.
  const lossWeights = drfWeights(lines.map((l) => l.base), sharedAll, weights);
  lines.forEach((l, ri) => {
    const { r, capacity, shared, usage, guarantee, max } = l;
    if (l.base.reduce((s, x) => s + x, 0) <= shared) return;
    const floorSum = usage.reduce((s, x) => s + x, 0);
    if (floorSum > shared) {
      warnings.push(`${r}: the teams already use ${floorSum}, more than the ${shared} shared out (capacity ${capacity}): no quota goes below usage, so the total is ${floorSum}`);
      l.base = [...usage];
      return;
    }
    const above = waterFill(l.base.map((b, i) => b - usage[i]!), lossWeights[ri]!, shared - floorSum);
    l.base = integers(above.map((a, i) => usage[i]! + a), l.base, names);
    teams.forEach((t, i) => {
      if (l.base[i]! < Math.min(guarantee[i]!, max[i]!)) warnings.push(`${r}: ${t.name} gets ${l.base[i]} of its guarantee ${guarantee[i]}: capacity (${capacity}, ${shared} shared out) cannot back every guarantee`);
    });
  });

  // 3. Lending what is left: weighted DRF along what the teams want.
  const lendWeights = drfWeights(lines.map((l) => l.want), sharedAll, weights);
  lines.forEach((l, ri) => {
    const { base, want } = l;
    const left = l.shared - base.reduce((s, x) => s + x, 0);
    const extra = waterFill(want.map((w, i) => Math.max(0, w - base[i]!)), lendWeights[ri]!, left);
    const hard = integers(extra.map((x, i) => base[i]! + x), want.map((w, i) => Math.max(w, base[i]!)), names);
    teams.forEach((_, i) => {
      hardOf[i]![ri] = hard[i]!;
      shares[i]!.resources[l.r] = { usage: l.usage[i]!, guarantee: l.guarantee[i]!, want: want[i]!, base: base[i]!, hard: hard[i]! };
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
      const split = integers(used.map((u) => u + (usedSum > 0 ? (rest * u) / usedSum : rest / nss.length)), used.map(() => Infinity), nss);
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
