/**
 * `node --import tsx bench/mig-child.ts NODES GPUS PODS SEED [preempt]`: plans one bench fleet in a process of
 * its own, so `bench mig` can stop a plan that runs past its deadline; prints
 * `{ ms, changes, satisfiedBefore, satisfiedAfter, replanned }` as JSON on stdout (`replanned`:
 * the GPUs a plan of the applied state changes; 0 is right).
 */
import { performance } from 'node:perf_hooks';
import { afterPlan, planMig } from '../functions/mig/core/planner.ts';
import { PreemptionPolicySchema } from '../functions/mig/core/policy.ts';
import { BIG_FLEET, migScenario } from './mig-fleet.ts';

const [nodes, gpus, pods, seed] = process.argv.slice(2, 6).map(Number);
const { nodes: fleet, pods: pending } = migScenario(
  { ...BIG_FLEET, nodes: nodes!, gpusPerNode: gpus!, pods: pods! },
  seed!,
);
// `preempt`: preemption on, every busy GPU's holders known (one pod at priority 0 per instance in use).
const preemption =
  process.argv[6] === 'preempt'
    ? PreemptionPolicySchema.parse({ enabled: true, minPriorityGap: 100, maxGpusPerRound: 16 })
    : undefined;
if (preemption)
  for (const n of fleet)
    for (const g of n.gpus)
      g.holders = g.instances
        .filter((i) => i.inUse)
        .map((_, k) => ({ namespace: 'notebooks', name: `${g.node}-${g.index}-${k}`, priority: 0 }));
const options = preemption ? { preemption } : {};
const t0 = performance.now();
const plan = planMig(fleet, pending, options);
const ms = performance.now() - t0;
const applied = afterPlan(fleet, pending, plan);
const replanned = planMig(applied.nodes, applied.pending, options).changes.length;
process.stdout.write(
  JSON.stringify({
    ms,
    changes: plan.changes.length,
    satisfiedBefore: plan.satisfiedBefore,
    satisfiedAfter: plan.satisfiedAfter,
    replanned,
  }) + '\n',
);
