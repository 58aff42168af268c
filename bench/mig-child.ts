/**
 * `node --import tsx bench/mig-child.ts NODES GPUS PODS SEED`: plans one bench fleet in a process of
 * its own, so `bench mig` can stop a plan that runs past its deadline; prints
 * `{ ms, changes, satisfiedBefore, satisfiedAfter, replanned }` as JSON on stdout (`replanned`:
 * the GPUs a plan of the applied state changes; 0 is right).
 */
import { performance } from 'node:perf_hooks';
import { afterPlan, planMig } from '../functions/mig/core/planner.ts';
import { BIG_FLEET, migScenario } from './mig-fleet.ts';

const [nodes, gpus, pods, seed] = process.argv.slice(2).map(Number);
const { nodes: fleet, pods: pending } = migScenario({ ...BIG_FLEET, nodes: nodes!, gpusPerNode: gpus!, pods: pods! }, seed!);
const t0 = performance.now();
const plan = planMig(fleet, pending);
const ms = performance.now() - t0;
const applied = afterPlan(fleet, pending, plan);
const replanned = planMig(applied.nodes, applied.pending).changes.length;
process.stdout.write(JSON.stringify({ ms, changes: plan.changes.length, satisfiedBefore: plan.satisfiedBefore, satisfiedAfter: plan.satisfiedAfter, replanned }) + '\n');
