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
 *    When they fit, each team is entitled to the larger of its base and its usage plus its
 *    weighted share of what is free (lend.ts): an idle team is never cut to nothing.
 * 3. Lending: teams that want more than their entitlement borrow, by weighted DRF up to their want
 *    and max (the demand vector being their wants), what the others hold above their kept floor —
 *    guarantee, and usage + headroom, so a lender's next pod is admitted at once. A team wants its
 *    usage, plus a burst when it is quota-bound (usage at its current hard value: its next pods
 *    would be refused). The lent share comes back as the lender's usage returns: its floor rises
 *    with it. Decreases are then rate-limited (maxDecreasePerRound), rises beyond the floor
 *    waiting for the room.
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
import { entitlements, lend, limitDecreases } from './lend.ts';
import { splitProfiles, type ProfilePool } from './mig-shares.ts';
import {
  quotaKey,
  type NamespaceQuota,
  type QuotaChange,
  type QuotaFacts,
  type QuotaPlan,
  type TeamShare,
} from './plan-types.ts';
import { lentWords } from './words.ts';

// Importable from here as before.
export {
  quotaKey,
  type NamespaceQuota,
  type QuotaChange,
  type QuotaFacts,
  type QuotaPlan,
  type TeamShare,
} from './plan-types.ts';

export function planQuotas(config: QuotaConfig, facts: QuotaFacts): QuotaPlan {
  const teams = [...config.teams].sort((a, b) => (a.name < b.name ? -1 : 1));
  const names = teams.map((t) => t.name);
  const weights = teams.map((t) => t.weight);
  const warnings: string[] = [];
  const pool: QuotaPlan['pool'] = {};
  const hardOf: Record<string, number>[] = teams.map(() => ({}));
  const shares: TeamShare[] = teams.map((t) => ({ team: t.name, weight: t.weight, resources: {} }));
  const resources = resourcesOf(config);
  const sum = (nss: readonly string[], m: QuotaFacts['usage'], r: string) =>
    nss.reduce((s, ns) => s + (m[ns]?.[r] ?? 0), 0);
  const sharedOf = (r: string, capacity: number) =>
    Math.max(0, Math.floor(capacity * config.overcommit + 1e-9) - (config.buffer[r] ?? 0));
  const grouped = new Set(config.migGroups.flatMap((g) => g.profiles));
  const eighths = (p: string) => facts.gpuEighths?.[p] ?? 8;
  for (const p of grouped)
    if (facts.gpuEighths?.[p] === undefined && (facts.capacity[p] ?? 0) > 0)
      warnings.push(
        `${p}: no node offering it has a GPU model gpu-reflex knows (nvidia.com/gpu.product): counted as a whole GPU`,
      );

  // 1. Per resource: the pool, and each team's usage, guarantee, max, want and base. A MIG group
  // is one resource in eighths of a GPU, its profiles summed by size.
  type Line = {
    r: string;
    capacity: number;
    shared: number;
    usage: number[];
    current: (number | undefined)[];
    minBurst: number;
    unit?: 'eighths of a GPU';
  };
  const plain: Line[] = resources
    .filter((r) => !grouped.has(r))
    .map((r) => {
      const capacity = facts.capacity[r] ?? 0;
      const usage = teams.map((t) => sum(t.namespaces, facts.usage, r));
      const current = teams.map((t) =>
        t.namespaces.some((ns) => facts.current[ns]?.[r] !== undefined)
          ? sum(t.namespaces, facts.current, r)
          : undefined,
      );
      return { r, capacity, shared: sharedOf(r, capacity), usage, current, minBurst: 1 };
    });
  const groupLines: Line[] = config.migGroups.map((g) => {
    const by = (f: (p: string) => number) => g.profiles.reduce((s, p) => s + f(p) * eighths(p), 0);
    const usage = teams.map((t) => by((p) => sum(t.namespaces, facts.usage, p)));
    const current = teams.map((t) =>
      t.namespaces.some((ns) => g.profiles.some((p) => facts.current[ns]?.[p] !== undefined))
        ? by((p) => sum(t.namespaces, facts.current, p))
        : undefined,
    );
    const shared = Math.max(0, by((p) => sharedOf(p, facts.capacity[p] ?? 0)) - 8 * (config.buffer[g.name] ?? 0));
    // A quota-bound team's burst is at least one GPU-equivalent.
    return {
      r: g.name,
      capacity: by((p) => facts.capacity[p] ?? 0),
      shared,
      usage,
      current,
      minBurst: 8,
      unit: 'eighths of a GPU' as const,
    };
  });
  const per = (x: number, line: Line) => (line.unit ? x * 8 : x);
  const lines = [...plain, ...groupLines].map((l) => {
    pool[l.r] = { capacity: l.capacity, shared: l.shared, ...(l.unit ? { unit: l.unit } : {}) };
    const max = teams.map((t) => (t.max[l.r] === undefined ? Infinity : per(t.max[l.r]!, l)));
    const guarantee = teams.map((t) => per(t.guarantee[l.r] ?? 0, l));
    const base = teams.map((_, i) => Math.max(l.usage[i]!, Math.min(guarantee[i]!, max[i]!)));
    const headroom = teams.map((t) => per(t.headroom[l.r] ?? config.headroom[l.r] ?? 1, l));
    const want = teams.map((_, i) => {
      const cur = l.current[i];
      const bound = cur !== undefined && l.usage[i]! >= cur && l.usage[i]! > 0;
      const burst = bound ? Math.max(l.minBurst, Math.ceil(cur * 0.25)) : 0;
      return Math.min(max[i]!, l.usage[i]! + burst);
    });
    const limit = config.maxDecreasePerRound[l.r];
    return { ...l, max, guarantee, base, kept: base, headroom, want, limit: limit && per(limit, l) };
  });
  const sharedAll = lines.map((l) => l.shared);

  // 2. Capacity loss: bases come down towards usage, weighted DRF over what each holds above it.
  // Otherwise each team is entitled to its usage plus its weighted share of what is free (lend.ts).
  const lossWeights = drfWeights(
    lines.map((l) => l.base),
    sharedAll,
    weights,
  );
  lines.forEach((l, ri) => {
    const { r, capacity, shared, usage, guarantee, max } = l;
    if (l.base.reduce((s, x) => s + x, 0) <= shared) {
      l.base = entitlements({ names, weights, ...l }, shared);
      return;
    }
    const floorSum = usage.reduce((s, x) => s + x, 0);
    if (floorSum > shared) {
      warnings.push(
        `${r}: the teams already use ${floorSum}, more than the ${shared} shared out (capacity ${capacity}): no ` +
          `quota goes below usage, so the total is ${floorSum}`,
      );
      l.base = [...usage];
      return;
    }
    const above = waterFill(
      l.base.map((b, i) => b - usage[i]!),
      lossWeights[ri]!,
      shared - floorSum,
    );
    l.base = integers(
      above.map((a, i) => usage[i]! + a),
      l.base,
      names,
    );
    teams.forEach((t, i) => {
      if (l.base[i]! < Math.min(guarantee[i]!, max[i]!))
        warnings.push(
          `${r}: ${t.name} gets ${l.base[i]} of its guarantee ${guarantee[i]}: capacity (${capacity}, ${shared} ` +
            `shared out) cannot back every guarantee`,
        );
    });
  });

  // 3. Lending: quota-bound teams borrow, by weighted DRF along what they want, what the others
  // hold above their kept floor (guarantee, usage + headroom); then decreases are rate-limited.
  const lendWeights = drfWeights(
    lines.map((l) => l.want),
    sharedAll,
    weights,
  );
  lines.forEach((l, ri) => {
    const teamsOf = { names, weights, ...l, base: l.kept };
    const lent = lend(teamsOf, l.base, lendWeights[ri]!);
    const limited = limitDecreases(teamsOf, lent.hard, l.current, lent.keep, l.shared, l.limit);
    const hard = limited.hard;
    const total = hard.reduce((s, x) => s + x, 0);
    if (limited.held && total > l.shared)
      warnings.push(
        `${l.r}: quotas fall at most ${l.limit! / (l.unit ? 8 : 1)} per round (maxDecreasePerRound): together ` +
          `${total / (l.unit ? 8 : 1)}, above the ${l.shared / (l.unit ? 8 : 1)} shared out, until later rounds`,
      );
    teams.forEach((_, i) => {
      hardOf[i]![l.r] = hard[i]!;
      shares[i]!.resources[l.r] = {
        usage: l.usage[i]!,
        guarantee: l.guarantee[i]!,
        want: l.want[i]!,
        base: l.base[i]!,
        keep: lent.keep[i]!,
        hard: hard[i]!,
      };
    });
  });

  // 3b. A MIG group's share becomes its profiles' hard values (mig-shares.ts).
  for (const g of config.migGroups) {
    const profiles: ProfilePool[] = g.profiles.map((p) => ({
      resource: p,
      eighths: eighths(p),
      shared: sharedOf(p, facts.capacity[p] ?? 0),
      usage: teams.map((t) => sum(t.namespaces, facts.usage, p)),
    }));
    const split = splitProfiles(
      profiles,
      teams.map((_, i) => hardOf[i]![g.name]!),
    );
    profiles.forEach((p, k) => {
      pool[p.resource] = { capacity: facts.capacity[p.resource] ?? 0, shared: p.shared };
      teams.forEach((_, i) => {
        hardOf[i]![p.resource] = split[k]![i]!;
        shares[i]!.resources[p.resource] = {
          usage: p.usage[i]!,
          guarantee: 0,
          want: p.usage[i]!,
          base: p.usage[i]!,
          keep: p.usage[i]!,
          hard: split[k]![i]!,
        };
      });
    });
  }

  // 4. Namespaces.
  const namespaces: NamespaceQuota[] = [];
  teams.forEach((t, ti) => {
    const nss = [...t.namespaces].sort();
    const perNs: Record<string, Record<string, number>> = Object.fromEntries(nss.map((ns) => [ns, {}]));
    resources.forEach((r) => {
      const total = hardOf[ti]![r]!;
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
      const words = [...resources.filter((r) => !grouped.has(r)), ...config.migGroups.map((g) => g.name)].map((r) => {
        const x = s.resources[r]!;
        const g = config.migGroups.find((m) => m.name === r);
        if (!g)
          return (
            `${r}: team ${t.name} (weight ${t.weight}) uses ${x.usage}, guaranteed ${x.guarantee}, ` +
            `wants ${x.want}, fair share ${x.base}${lentWords(x)} → ${x.hard} of ${pool[r]!.shared} ` +
            `shared out`
          );
        const gpus = (n: number) => `${n / 8} GPU${n === 8 ? '' : 's'}`;
        return (
          `${r} (in GPU-equivalents): team ${t.name} (weight ${t.weight}) uses ${gpus(x.usage)}, ` +
          `guaranteed ${gpus(x.guarantee)}, wants ${gpus(x.want)}, fair share ${gpus(x.base)}` +
          `${lentWords(x, gpus)} → ${gpus(x.hard)} of ${gpus(pool[r]!.shared)} ` +
          `shared out, ` +
          `as ${g.profiles.map((p) => `${p.slice('nvidia.com/mig-'.length)} ${s.resources[p]!.hard}`).join(', ')}`
        );
      });
      namespaces.push({ namespace: ns, team: t.name, hard, changes, reason: words.join('; ') });
    }
  });
  return { pool, teams: shares, namespaces, warnings };
}
