/**
 * Every valid layout of a GPU model, indexed for the planner (relay.ts): whether a set of instances
 * fits one GPU is a lookup, and the layout a relaid GPU takes is worked out once per old layout
 * and set of instances. Memoised per model for the life of the process (a few hundred layouts per
 * model, and the combinations a fleet's layouts and demand produce). Pure.
 */
import { enumerateLayouts } from './layout.ts';
import { kept, tally } from './match.ts';
import type { MigModel } from '../../lib/mig-profiles.ts';

export const multisetKey = (ps: readonly string[]) => [...ps].sort().join(',');

interface Catalog {
  layouts: string[][];
  valid: Set<string>;
  best: Map<string, string[] | undefined>;
  fresh: Map<string, Fresh | undefined>;
}

/** Relaying a GPU no pod takes anything of, for instances `rest`: what it takes, becomes, loses. */
export interface Fresh {
  takes: string[];
  lost: Map<string, number>;
  destroyed: number;
  keep: number;
}

const catalogs = new WeakMap<MigModel, Catalog>();
function catalog(model: MigModel): Catalog {
  let c = catalogs.get(model);
  if (!c) {
    const layouts = enumerateLayouts(model);
    // Every sub-multiset of a valid layout is valid too (drop instances from a placement), and
    // enumerateLayouts lists every valid one: membership is validity.
    c = { layouts, valid: new Set(layouts.map(multisetKey)), best: new Map(), fresh: new Map() };
    catalogs.set(model, c);
  }
  return c;
}

/** Every valid layout of `model` (enumerateLayouts, memoised). */
export const layoutsOf = (model: MigModel): readonly string[][] => catalog(model).layouts;

export const offers = (model: MigModel, profile: string) => model.profiles.some((p) => p.name === profile);
export const holds = (model: MigModel, profiles: readonly string[]) =>
  profiles.length === 0 || catalog(model).valid.has(multisetKey(profiles));

function contains(layout: readonly string[], need: ReadonlyMap<string, number>): boolean {
  const have = tally(layout);
  for (const [p, n] of need) if ((have.get(p) ?? 0) < n) return false;
  return true;
}

/** Every compute and memory slice used. */
export function zeroWaste(model: MigModel, layout: readonly string[]): boolean {
  const ps = layout.map((n) => model.profiles.find((p) => p.name === n)!);
  return (
    ps.reduce((s, p) => s + p.slices, 0) === model.computeSlices &&
    ps.reduce((s, p) => s + p.size, 0) === model.memorySlices
  );
}

/**
 * The layout a GPU that was `old` takes to hold `required`: the valid one keeping the most of
 * `old`, then zero waste, then the first listed. Undefined when no valid layout holds `required`.
 */
export function layoutFor(model: MigModel, old: readonly string[], required: readonly string[]): string[] | undefined {
  const c = catalog(model);
  const memo = `${multisetKey(old)}|${multisetKey(required)}`;
  if (c.best.has(memo)) return c.best.get(memo);
  const need = tally(required);
  let best: { layout: string[]; keep: number; zero: boolean } | undefined;
  for (const layout of c.layouts) {
    if (!contains(layout, need)) continue;
    const cand = { layout, keep: kept(old, layout), zero: zeroWaste(model, layout) };
    if (!best || cand.keep > best.keep || (cand.keep === best.keep && cand.zero && !best.zero)) best = cand;
  }
  c.best.set(memo, best?.layout);
  return best?.layout;
}

export const minus = (xs: readonly string[], ys: readonly string[]) => {
  const drop = tally(ys);
  return xs.filter((p) => {
    if ((drop.get(p) ?? 0) === 0) return true;
    drop.set(p, drop.get(p)! - 1);
    return false;
  });
};

export function fresh(
  model: MigModel,
  old: readonly string[],
  rest: readonly string[],
  oldKey = multisetKey(old),
): Fresh | undefined {
  const c = catalog(model);
  const memo = `${oldKey}|${rest.join(',')}`;
  if (c.fresh.has(memo)) return c.fresh.get(memo);
  const takes: string[] = [];
  for (const profile of rest) if (holds(model, [...takes, profile])) takes.push(profile);
  let out: Fresh | undefined;
  if (takes.length > 0) {
    const to = layoutFor(model, old, takes)!;
    const lost = tally(minus(old, to));
    out = { takes, lost, destroyed: [...lost.values()].reduce((t, n) => t + n, 0), keep: kept(old, to) };
  }
  c.fresh.set(memo, out);
  return out;
}
