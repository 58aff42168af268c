/**
 * The simulator's MIG catalog and driver placement (infra/local/kube/mig-catalog.ts,
 * mig-placement.ts, written from NVIDIA's MIG user guide) against the MIG planner's own
 * (functions/lib/mig-profiles.ts, functions/mig/core/layout.ts): for every model both know, the same profiles with
 * the same geometry, and the same set of valid one-GPU layouts. A difference here is a finding:
 * the reference (NVIDIA's -lgip/-lgipp tables) says which side is right.
 */
import { describe, expect, it } from 'vitest';
import { enumerateLayouts } from '../../functions/mig/core/layout.ts';
import { migModel } from '../../functions/lib/mig-profiles.ts';
import { SIM_MIG_MODELS, type SimMigModel } from '../../infra/local/kube/mig-catalog.ts';
import { placeInstances } from '../../infra/local/kube/mig-placement.ts';

/** Every multiset of the model's profiles, each within its instance count, that the simulated driver places. */
function simLayouts(model: SimMigModel): string[] {
  const out: string[] = [];
  const go = (i: number, chosen: string[], compute: number) => {
    if (i === model.profiles.length) {
      if (chosen.length > 0 && 'slots' in placeInstances(model, chosen)) out.push([...chosen].sort().join(' + '));
      return;
    }
    const p = model.profiles[i]!;
    for (let n = 0; n <= p.max && compute + n * p.compute <= model.computeSlices; n++)
      go(i + 1, [...chosen, ...Array<string>(n).fill(p.name)], compute + n * p.compute);
  };
  go(0, [], 0);
  return out.sort();
}

const shared = SIM_MIG_MODELS.map((m) => [m.name, m, migModel(m.name)] as const).filter(([, , p]) => p !== undefined);

describe('the simulator and the MIG planner know the same MIG geometry', () => {
  it('share every model', () => {
    expect(shared.map(([n]) => n)).toEqual(SIM_MIG_MODELS.map((m) => m.name));
  });

  it.each(shared)('%s: the same profiles, slices, starts and instance counts', (_, sim, product) => {
    const simRows = sim.profiles.map((p) => ({
      name: p.name,
      compute: p.compute,
      size: p.size,
      starts: [...p.starts],
      max: p.max,
    }));
    const productRows = product!.profiles.map((p) => ({
      name: p.name,
      compute: p.slices,
      size: p.size,
      starts: [...p.starts],
      max: p.max,
    }));
    expect(productRows).toEqual(simRows);
  });

  it.each(shared.filter(([, , p]) => p!.profiles.every((q) => q.giProfileId !== undefined)))(
    '%s: the same GI profile IDs',
    (_, sim, product) => {
      expect(product!.profiles.map((p) => p.giProfileId)).toEqual(sim.profiles.map((p) => p.id));
    },
  );

  it.each(shared)('%s: the same valid one-GPU layouts', (_, sim, product) => {
    const planner = enumerateLayouts(product!)
      .map((l) => [...l].sort().join(' + '))
      .sort();
    expect(planner).toEqual(simLayouts(sim));
  });
});
