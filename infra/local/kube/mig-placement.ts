import type { SimMigModel, SimMigProfile } from './mig-catalog.ts';

/**
 * Where a GPU's instances land when mig-manager applies a per-GPU config, or why it cannot.
 * The rules are the driver's as NVIDIA documents them (MIG user guide, "GPU Instances" and
 * "Placements"): an instance occupies `size` consecutive memory slices from one of its profile's
 * allowed starts, no two instances share a memory slice, the compute slices of all instances
 * fit the GPU's, a profile is created at most "instances available" times, and only one
 * instance can hold the media engines (`+me`: creating one leaves the other `+me` profiles with
 * 0 available). mig-parted creates the instances in every order until one works
 * (NVIDIA/mig-parted pkg/mig/config: iteratePermutationsUntilSuccess), so a config applies when
 * any placement exists; the search below looks for one, largest instances first.
 */
export interface SimSlot {
  profile: string;
  id: number;
  start: number;
  size: number;
}

export type Placement = { slots: SimSlot[] } | { problem: string };

export function placeInstances(model: SimMigModel, names: readonly string[]): Placement {
  const wanted: SimMigProfile[] = [];
  for (const name of names) {
    const p = model.profiles.find((x) => x.name === name);
    if (!p) return { problem: `profile ${name} is not supported on ${model.name}` };
    wanted.push(p);
  }
  for (const p of new Set(wanted)) {
    const n = wanted.filter((x) => x === p).length;
    if (n > p.max) return { problem: `${n} × ${p.name}: ${model.name} offers ${p.max}` };
  }
  if (wanted.filter((p) => p.name.includes('+me')).length > 1)
    return { problem: 'more than one instance with the media engines (+me)' };
  if (wanted.reduce((s, p) => s + p.compute, 0) > model.computeSlices)
    return { problem: `more compute slices than the ${model.computeSlices} of ${model.name}` };
  const order = [...wanted].sort((a, b) => b.size - a.size || b.compute - a.compute || a.name.localeCompare(b.name));
  const used = new Array<boolean>(model.memorySlices).fill(false);
  const out: SimSlot[] = [];
  const go = (i: number): boolean => {
    if (i === order.length) return true;
    const p = order[i]!;
    for (const start of p.starts) {
      const cells = Array.from({ length: p.size }, (_, k) => start + k);
      if (cells.some((c) => c >= model.memorySlices || used[c])) continue;
      for (const c of cells) used[c] = true;
      out.push({ profile: p.name, id: p.id, start, size: p.size });
      if (go(i + 1)) return true;
      out.pop();
      for (const c of cells) used[c] = false;
    }
    return false;
  };
  if (!go(0))
    return {
      problem: `no placement of ${names.join(', ')} fits the ${model.memorySlices} memory slices of ${model.name}`,
    };
  return { slots: out.sort((a, b) => a.start - b.start) };
}
