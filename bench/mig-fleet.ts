/**
 * Random MIG fleets and pending demand for `bench mig` (seeded: the same seed, the same fleet).
 * A100-80GB and H100-80GB nodes (the same profile names, so a pod without a selector may use
 * either), each GPU carved as operators carve them (mig-parted's `all-*` configs half the time,
 * any valid layout otherwise), some with instances in use.
 */
import { enumerateLayouts } from '../functions/mig/core/layout.ts';
import type { MigNode, PendingMigPod } from '../functions/mig/core/planner.ts';
import { migModel, type MigModel } from '../functions/lib/mig-profiles.ts';
import { mulberry32 } from '../infra/local/bus/router.ts';

export const A100 = migModel('A100-80GB')!;
export const H100 = migModel('H100-80GB')!;
const MODELS = [A100, H100];
const LAYOUTS = new Map(MODELS.map((m) => [m, enumerateLayouts(m)]));
const PRODUCT_LABEL = 'nvidia.com/gpu.product';

/** mig-parted's stock configs (all-1g.10gb, all-2g.20gb, all-3g.40gb, all-7g.80gb, all-balanced). */
const STOCK = [
  Array<string>(7).fill('1g.10gb'),
  Array<string>(3).fill('2g.20gb'),
  ['3g.40gb', '3g.40gb'],
  ['7g.80gb'],
  ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb'],
];
/** Small profiles are asked for most (notebooks, inference), whole GPUs least. */
const DEMAND = [
  '1g.10gb',
  '1g.10gb',
  '1g.10gb',
  '1g.20gb',
  '2g.20gb',
  '2g.20gb',
  '3g.40gb',
  '3g.40gb',
  '4g.40gb',
  '7g.80gb',
];

export interface FleetShape {
  nodes: number;
  gpusPerNode: number | (() => number);
  pods: number;
  /** Share of GPUs with instances in use (each then uses a random number of its instances, at least one). */
  busy: number;
  priorities: readonly number[];
}

export function migScenario(shape: FleetShape, seed: number): { nodes: MigNode[]; pods: PendingMigPod[] } {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const width = String(shape.nodes - 1).length;
  const nodes = Array.from({ length: shape.nodes }, (_, i): MigNode => {
    const model: MigModel = pick(MODELS);
    const name = `${model === A100 ? 'a100' : 'h100'}-${String(i).padStart(width, '0')}`;
    const count = typeof shape.gpusPerNode === 'number' ? shape.gpusPerNode : shape.gpusPerNode();
    const gpus = Array.from({ length: count }, (_, index) => {
      const layout = r() < 0.5 ? pick(STOCK) : pick(LAYOUTS.get(model)!);
      const inUse = r() < shape.busy ? 1 + Math.floor(r() * layout.length) : 0;
      return { node: name, index, model, instances: layout.map((profile, k) => ({ profile, inUse: k < inUse })) };
    });
    return { name, labels: { [PRODUCT_LABEL]: model.products[0]!.replaceAll(' ', '-') }, schedulable: true, gpus };
  });
  const pods = Array.from({ length: shape.pods }, (_, i): PendingMigPod => {
    const selector: Record<string, string> =
      r() < 0.3 ? { [PRODUCT_LABEL]: pick(MODELS).products[0]!.replaceAll(' ', '-') } : {};
    return {
      namespace: `team-${i % 5}`,
      name: `job-${i}`,
      priority: pick(shape.priorities),
      requests: { [pick(DEMAND)]: r() < 0.85 ? 1 : 2 },
      nodeSelector: selector,
    };
  });
  return { nodes, pods };
}

/** The solve-time fleet: 1,000 nodes × 8 GPUs, 40% of GPUs busy, two pending pods per node. */
export const BIG_FLEET: FleetShape = {
  nodes: 1000,
  gpusPerNode: 8,
  pods: 2000,
  busy: 0.4,
  priorities: [0, 0, 0, 100, 1000],
};

/** `count` small fleets (1–3 nodes × 1–4 GPUs, 2–10 pods): small enough for exactMig. */
export function smallMigScenarios(count: number, seed = 11): { nodes: MigNode[]; pods: PendingMigPod[] }[] {
  const r = mulberry32(seed);
  return Array.from({ length: count }, (_, i) => {
    const g = mulberry32(seed * 7919 + i);
    return migScenario(
      {
        nodes: 1 + Math.floor(r() * 3),
        gpusPerNode: () => 1 + Math.floor(g() * 4),
        pods: 2 + Math.floor(r() * 9),
        busy: 0.3,
        priorities: [0, 0, 100],
      },
      seed * 104729 + i,
    );
  });
}
