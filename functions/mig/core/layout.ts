/**
 * MIG layouts: which sets of GPU instances one GPU can hold, and where each would sit. A layout is
 * valid when every instance takes one of its profile's allowed starts, no two instances share a
 * memory slice, the compute slices sum to at most the GPU's, each profile stays within its per-GPU
 * maximum, and at most one instance holds the media engines (`+me`). Placement order matters (a
 * 1g at start 4 leaves no room for a 3g), so validity is decided by a search over placements, not
 * by counting. Pure.
 */
import { profileOf, type MigModel, type MigProfile } from '../../lib/mig-profiles.ts';

export interface PlacedInstance {
  profile: string;
  start: number;
  size: number;
}

export type LayoutCheck =
  | { valid: true; placement: PlacedInstance[]; computeSlices: number; memorySlices: number }
  | { valid: false; problems: string[] };

/** `{ '3g.40gb': 1, '1g.10gb': 2 }` from `['3g.40gb', '1g.10gb', '1g.10gb']`. */
export function countProfiles(profiles: readonly string[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const p of profiles) counts.set(p, (counts.get(p) ?? 0) + 1);
  return counts;
}

/** `3g.40gb + 2×1g.10gb`: how people write a layout. */
export function layoutWords(profiles: readonly string[]): string {
  if (profiles.length === 0) return '(no instances)';
  return [...countProfiles(profiles)].map(([p, n]) => (n === 1 ? p : `${n}×${p}`)).join(' + ');
}

/** Largest first, then by name: the order the search tries, and how layouts are printed. */
function bySize(a: MigProfile, b: MigProfile): number {
  return b.size - a.size || b.slices - a.slices || a.name.localeCompare(b.name);
}

/**
 * A placement for every instance, or undefined when none exists. Largest instances first (they
 * have the fewest starts), each at its lowest free allowed start, backtracking on a dead end.
 */
export function place(model: MigModel, instances: readonly MigProfile[]): PlacedInstance[] | undefined {
  const order = [...instances].sort(bySize);
  const used: boolean[] = Array.from({ length: model.memorySlices }, () => false);
  const out: PlacedInstance[] = [];
  const go = (i: number): boolean => {
    if (i === order.length) return true;
    const p = order[i]!;
    // Two instances of one profile in a row: the second never starts below the first (no mirror searches).
    const prev = i > 0 && order[i - 1]!.name === p.name ? out[i - 1]!.start : -1;
    for (const start of p.starts) {
      if (start <= prev || start + p.size > model.memorySlices) continue;
      let free = true;
      for (let s = start; s < start + p.size; s++) if (used[s]) free = false;
      if (!free) continue;
      for (let s = start; s < start + p.size; s++) used[s] = true;
      out.push({ profile: p.name, start, size: p.size });
      if (go(i + 1)) return true;
      out.pop();
      for (let s = start; s < start + p.size; s++) used[s] = false;
    }
    return false;
  };
  return go(0) ? [...out].sort((a, b) => a.start - b.start) : undefined;
}

/** `an A100-80GB`, `an H100-80GB`, `a B200`: the article as the name is spoken. */
export function aGpu(model: MigModel): string {
  return `${/^[AEFHILMNORSX]/.test(model.name) ? 'an' : 'a'} ${model.name} GPU`;
}

/** Checks one GPU's layout (profile names, repeats allowed) against a model; every problem is named. */
export function checkLayout(model: MigModel, profiles: readonly string[]): LayoutCheck {
  const problems: string[] = [];
  const instances: MigProfile[] = [];
  for (const [name, n] of countProfiles(profiles)) {
    const p = profileOf(model, name);
    if (!p) {
      problems.push(
        `${name} is not a MIG profile of ${model.name} (its profiles: ${[...model.profiles]
          .sort(bySize)
          .map((q) => q.name)
          .join(', ')})`,
      );
      continue;
    }
    if (n > p.max) problems.push(`${n} × ${name}: ${aGpu(model)} holds at most ${p.max}`);
    for (let i = 0; i < n; i++) instances.push(p);
  }
  if (profiles.length === 0)
    problems.push('no instances: a MIG-enabled GPU must hold at least one (the device plugin breaks on an empty one)');
  const me = instances.filter((p) => p.mediaExtensions).length;
  if (me > 1) problems.push(`${me} instances with the media engines (+me): at most one per GPU`);
  const compute = instances.reduce((s, p) => s + p.slices, 0);
  const memory = instances.reduce((s, p) => s + p.size, 0);
  if (compute > model.computeSlices)
    problems.push(
      `compute slices ${instances.map((p) => p.slices).join('+')} = ${compute}: ${aGpu(model)} ` +
        `has ${model.computeSlices}`,
    );
  if (memory > model.memorySlices)
    problems.push(
      `memory slices ${instances.map((p) => p.size).join('+')} = ${memory}: ${aGpu(model)} has ${model.memorySlices}`,
    );
  if (problems.length > 0) return { valid: false, problems };
  const placement = place(model, instances);
  if (!placement) {
    const starts = [...new Map(instances.map((p) => [p.name, p])).values()]
      .sort(bySize)
      .map(
        (p) =>
          `${p.name} at ${p.starts.length === 1 ? `${p.starts[0]} only` : p.starts.join(' or ')} (${p.size} ` +
          `slice${p.size === 1 ? '' : 's'})`,
      );
    return {
      valid: false,
      problems: [`no placement fits them on the ${model.memorySlices} memory slices: ${starts.join(', ')}`],
    };
  }
  return { valid: true, placement, computeSlices: compute, memorySlices: memory };
}

/** Unused compute and memory slices of a valid layout (0 and 0: a zero-waste layout). */
export function waste(
  model: MigModel,
  check: Extract<LayoutCheck, { valid: true }>,
): { compute: number; memory: number } {
  return { compute: model.computeSlices - check.computeSlices, memory: model.memorySlices - check.memorySlices };
}

/**
 * Every valid layout of one GPU of this model (as profile lists, largest first), each once. The
 * search adds profiles in catalog order with counts, pruned by maxima and the slice budgets, and
 * keeps a layout when a placement exists. A100/H100: a few hundred; cheap enough to enumerate.
 */
export function enumerateLayouts(model: MigModel): string[][] {
  const profiles = [...model.profiles].sort(bySize);
  const out: string[][] = [];
  const chosen: MigProfile[] = [];
  const go = (i: number, compute: number, memory: number, me: number) => {
    if (i === profiles.length) {
      if (chosen.length > 0 && place(model, chosen)) out.push(chosen.map((p) => p.name));
      return;
    }
    const p = profiles[i]!;
    const before = chosen.length;
    for (let n = 0; n <= p.max; n++) {
      if (n > 0) {
        const c = compute + p.slices * n;
        const m = memory + p.size * n;
        if (c > model.computeSlices || m > model.memorySlices || (p.mediaExtensions && me + n > 1)) break;
        chosen.push(p);
        go(i + 1, c, m, me + (p.mediaExtensions ? n : 0));
      } else go(i + 1, compute, memory, me);
    }
    chosen.length = before;
  };
  go(0, 0, 0, 0);
  return out;
}
